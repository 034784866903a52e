// Predict bodies against a hand-built signature: each encoding accepted, and every kind of
// malformed request refused before batching with its HTTP status and an expected-vs-found message.
#include "examples/server/predict_request.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "examples/server/npy_codec.h"

namespace neuronc::server {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

DimSpec fixed(int64_t v) {
  DimSpec d;
  d.value = v;
  return d;
}
DimSpec sym(const char* s, int64_t lo, int64_t hi, int64_t coeff = 1) {
  DimSpec d;
  d.symbol = s;
  d.coeff = coeff;
  d.min = lo;
  d.max = hi;
  return d;
}

// x: f32[b, 3] with b in [1, 8]; ids: i64[b, 2*t] with t in [1, 4], values in [0, 10).
std::vector<TensorSpec> inputs() {
  return {{"x", DType::f32, {sym("b", 1, 8), fixed(3)}},
          {"ids",
           DType::i64,
           {sym("b", 1, 8), sym("t", 1, 4, 2)},
           ValueRange{0, 10, "the rows of an embedding table"}}};
}
std::vector<TensorSpec> outputs() {
  return {{"y", DType::f32, {sym("b", 1, 8), fixed(4)}}, {"z", DType::i64, {sym("b", 1, 8)}}};
}

json tensor(const Shape& shape, int fill, const char* dtype = nullptr) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  json j = {{"shape", shape}, {"data", std::vector<int>(static_cast<size_t>(n), fill)}};
  if (dtype) j["dtype"] = dtype;
  return j;
}

Result<PredictRequest> parse_json(const json& body, std::string_view output = "") {
  return parse_predict_request(inputs(), outputs(), "application/json; charset=utf-8", body.dump(),
                               {}, output);
}

TEST(PredictRequest, AcceptsJsonByNameAndByPosition) {
  Result<PredictRequest> r =
      parse_json({{"inputs", {{"ids", tensor({2, 4}, 3)}, {"x", tensor({2, 3}, 1, "f32")}}}});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  ASSERT_EQ(r->inputs.size(), 2u);
  EXPECT_EQ(r->inputs[0].shape(), (Shape{2, 3}));  // the signature's order, not the body's
  EXPECT_EQ(r->inputs[1].as<int64_t>()[7], 3);
  EXPECT_EQ(r->response, Encoding::json);
  EXPECT_TRUE(r->output.empty());

  Result<PredictRequest> p =
      parse_json({{"inputs", json::array({tensor({1, 3}, 0), tensor({1, 2}, 9)})}}, "z");
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_EQ(p->output, "z");
}

TEST(PredictRequest, AcceptsNpyBodiesAndMultipart) {
  Tensor x(DType::f32, {1, 3});
  Tensor ids(DType::i64, {1, 2});
  const std::string xb = *encode_npy(x), ib = *encode_npy(ids);
  Result<PredictRequest> r = parse_predict_request(
      inputs(), outputs(), "multipart/form-data; boundary=zz", "", {{"ids", ib}, {"x", xb}}, "y");
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->response, Encoding::npy);
  EXPECT_EQ(r->output, "y");

  const std::vector<TensorSpec> one = {inputs()[0]};
  const std::vector<TensorSpec> one_out = {outputs()[0]};
  Result<PredictRequest> n = parse_predict_request(one, one_out, "application/x-npy", xb, {}, "");
  ASSERT_TRUE(n.is_ok()) << n.status().message();
  EXPECT_EQ(n->output, "y");  // the only output needs no ?output=
}

TEST(PredictRequest, RefusesMalformedRequestsSayingWhy) {
  const json good_x = tensor({2, 3}, 1);
  const json good_ids = tensor({2, 4}, 1);
  const struct {
    const char* what;
    std::string body;
    std::string output;
    int status;
    const char* message;
  } corpus[] = {
      {"bad JSON", "{\"inputs\": {", "", 400, "body is not valid JSON (at offset 12 of 12 bytes)"},
      {"not an object", "[1, 2]", "", 400, "body is a JSON array, expected an object"},
      {"extra key", json{{"inputs", json::object()}, {"id", 3}}.dump(), "", 400,
       "unknown key 'id' in the body"},
      {"no inputs", "{}", "", 400, "body has no \"inputs\""},
      {"inputs a string", json{{"inputs", "x"}}.dump(), "", 400, "\"inputs\" is a JSON string"},
      {"unknown input", json{{"inputs", {{"x", good_x}, {"ids", good_ids}, {"w", good_x}}}}.dump(),
       "", 400, "unknown input 'w': expected one of x, ids"},
      {"missing input", json{{"inputs", {{"x", good_x}}}}.dump(), "", 400,
       "input 'ids' is missing: expected i64[b, 2*t]"},
      {"positional count", json{{"inputs", json::array({good_x})}}.dump(), "", 400,
       "\"inputs\" lists 1 tensors, expected 2 (x, ids)"},
      {"wrong dtype", json{{"inputs", {{"x", tensor({2, 3}, 1, "f16")}, {"ids", good_ids}}}}.dump(),
       "", 400, "input 'x': dtype is f16, expected f32"},
      {"wrong rank", json{{"inputs", {{"x", tensor({6}, 1)}, {"ids", good_ids}}}}.dump(), "", 400,
       "input 'x': rank is 1 (shape [6]), expected 2 (f32[b, 3])"},
      {"wrong fixed dim", json{{"inputs", {{"x", tensor({2, 4}, 1)}, {"ids", good_ids}}}}.dump(),
       "", 400, "input 'x': dim 1 is 4, expected 3 (f32[b, 3])"},
      {"symbol out of range",
       json{{"inputs", {{"x", tensor({9, 3}, 1)}, {"ids", tensor({9, 4}, 1)}}}}.dump(), "", 400,
       "input 'x': dim 0 gives symbol 'b' = 9, expected [1, 8]"},
      {"symbols disagree",
       json{{"inputs", {{"x", tensor({2, 3}, 1)}, {"ids", tensor({3, 4}, 1)}}}}.dump(), "", 400,
       "input 'ids': dim 0 gives symbol 'b' = 3 but input 'x' dim 0 gave 2"},
      {"not a multiple", json{{"inputs", {{"x", good_x}, {"ids", tensor({2, 3}, 1)}}}}.dump(), "",
       400, "input 'ids': dim 1 is 3, expected a multiple of 2 (2*t)"},
      {"index out of range", json{{"inputs", {{"x", good_x}, {"ids", tensor({2, 4}, 10)}}}}.dump(),
       "", 400,
       "input 'ids': element [0, 0] is 10, outside [0, 10), the rows of an embedding table"},
      {"bad element",
       json{{"inputs", {{"x", good_x}, {"ids", {{"shape", {1, 2}}, {"data", {1.5, 2}}}}}}}.dump(),
       "", 400, "input 'ids': data[0] is 1.5, expected an integer in i64"},
      {"unknown output", json{{"inputs", {{"x", good_x}, {"ids", good_ids}}}}.dump(), "w", 400,
       "unknown output 'w' in ?output=: expected one of y, z"},
  };
  for (const auto& c : corpus) {
    Result<PredictRequest> r =
        parse_predict_request(inputs(), outputs(), "application/json", c.body, {}, c.output);
    ASSERT_FALSE(r.is_ok()) << c.what << " was accepted";
    EXPECT_EQ(http_status_of(r.status()), c.status) << c.what;
    EXPECT_THAT(r.status().message(), HasSubstr(c.message)) << c.what;
  }
}

TEST(PredictRequest, RefusesEncodingMismatches) {
  Tensor x(DType::f32, {1, 3});
  const std::string xb = *encode_npy(x);
  Result<PredictRequest> two =
      parse_predict_request(inputs(), outputs(), "application/x-npy", xb, {}, "");
  ASSERT_FALSE(two.is_ok());
  EXPECT_THAT(two.status().message(),
              HasSubstr("an application/x-npy body carries one input, the model has 2 (x, ids)"));

  const std::vector<TensorSpec> one = {inputs()[0]};
  Result<PredictRequest> many_out =
      parse_predict_request(one, outputs(), "application/x-npy", xb, {}, "");
  ASSERT_FALSE(many_out.is_ok());
  EXPECT_THAT(
      many_out.status().message(),
      HasSubstr("a .npy response carries one output, the model has 2: expected ?output=NAME"));

  Result<PredictRequest> text =
      parse_predict_request(one, outputs(), "text/plain", "1 2 3", {}, "");
  ASSERT_FALSE(text.is_ok());
  EXPECT_EQ(http_status_of(text.status()), 415);
  EXPECT_THAT(text.status().message(), HasSubstr("content type 'text/plain' is not supported"));

  Result<PredictRequest> none = parse_predict_request(one, outputs(), "", "{}", {}, "");
  ASSERT_FALSE(none.is_ok());
  EXPECT_THAT(none.status().message(), HasSubstr("content type '(none)'"));

  Result<PredictRequest> dup = parse_predict_request(inputs(), outputs(), "multipart/form-data", "",
                                                     {{"x", xb}, {"x", xb}}, "y");
  ASSERT_FALSE(dup.is_ok());
  EXPECT_THAT(dup.status().message(), HasSubstr("input 'x' is given twice"));

  Result<PredictRequest> junk =
      parse_predict_request(inputs(), outputs(), "multipart/form-data", "", {{"x", "junk"}}, "y");
  ASSERT_FALSE(junk.is_ok());
  EXPECT_THAT(junk.status().message(), HasSubstr("input 'x': not a .npy file"));

  Result<PredictRequest> wrong_type = parse_predict_request(
      one, {outputs()[0]}, "application/x-npy", *encode_npy(Tensor(DType::f64, {1, 3})), {}, "");
  ASSERT_FALSE(wrong_type.is_ok());
  EXPECT_THAT(wrong_type.status().message(), HasSubstr("input 'x': dtype is f64, expected f32"));
}

TEST(PredictRequest, ErrorBodiesAreJsonEvenForNonUtf8Input) {
  const std::string body =
      error_body(400, Status(StatusCode::not_found, "unknown input '\xff\xfe'"));
  const json j = json::parse(body);
  EXPECT_EQ(j["error"]["code"], 400);
  EXPECT_EQ(j["error"]["status"], "not_found");
  EXPECT_THAT(j["error"]["message"].get<std::string>(), HasSubstr("unknown input"));
  EXPECT_EQ(http_status_of(Status(StatusCode::failed_precondition, "shutting down")), 503);
  EXPECT_EQ(http_status_of(Status(StatusCode::internal, "bug")), 500);
}

}  // namespace
}  // namespace neuronc::server
