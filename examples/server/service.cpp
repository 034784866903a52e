// Routes of the model server: request decoding (predict_request.h), the batcher, and the
// response encodings with the run's simulated device time beside the server's wall time.
#include "examples/server/service.h"

#include <algorithm>

#include "examples/server/npy_codec.h"
#include "examples/server/predict_request.h"
#include "examples/server/tensor_json.h"

namespace neuronc::server {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

const char* padding_name(EntryInfo::Padding p) {
  switch (p) {
    case EntryInfo::Padding::zeros:
      return "zeros";
    case EntryInfo::Padding::edge:
      return "edge";
    default:
      return "none";
  }
}

// Fixed dims as numbers, symbolic ones as {"symbol", "coeff", "min", "max"}.
json spec_json(const TensorSpec& s) {
  json dims = json::array();
  for (const DimSpec& d : s.dims) {
    if (d.is_symbolic())
      dims.push_back({{"symbol", d.symbol}, {"coeff", d.coeff}, {"min", d.min}, {"max", d.max}});
    else
      dims.push_back(d.value);
  }
  json j = {
      {"name", s.name}, {"dtype", dtype_name(s.dtype)}, {"dims", dims}, {"text", spec_text(s)}};
  if (s.valid_range)
    j["valid_range"] = {
        {"lo", s.valid_range->lo}, {"hi", s.valid_range->hi}, {"reason", s.valid_range->reason}};
  return j;
}

json specs_json(const std::vector<TensorSpec>& specs) {
  json a = json::array();
  for (const TensorSpec& s : specs) a.push_back(spec_json(s));
  return a;
}

void send_error(httplib::Response& res, const Status& status) {
  const int code = http_status_of(status);
  res.status = code;
  res.set_content(error_body(code, status), "application/json");
}

// A handler answering 405 with the methods the path takes.
httplib::Server::Handler not_allowed(const char* allow) {
  return [allow](const httplib::Request& req, httplib::Response& res) {
    res.status = 405;
    res.set_header("Allow", allow);
    res.set_content(error_body(405, Status(StatusCode::invalid_argument,
                                           "method " + req.method + " is not allowed on " +
                                               req.path + ": expected " + allow)),
                    "application/json");
  };
}

}  // namespace

Service::Service(const Model& model, Batcher& batcher, ServiceOptions options)
    : model_(model),
      batcher_(batcher),
      options_(std::move(options)),
      sig_(Signature::of(model)),
      started_(Clock::now()) {}

bool Service::known_model(const httplib::Request& req, httplib::Response& res) const {
  const std::string name = req.matches.size() > 1 ? std::string(req.matches[1]) : "";
  if (name == options_.name) return true;
  res.status = 404;
  res.set_content(error_body(404, Status(StatusCode::not_found, "unknown model '" + name +
                                                                    "': this server serves '" +
                                                                    options_.name + "'")),
                  "application/json");
  return false;
}

json Service::model_json() const {
  const ModelInfo& info = model_.info();
  json entries = json::array();
  for (const EntryInfo& e : sig_.entries) {
    json bucket = json::array();
    for (const EntryInfo::BucketDim& b : e.bucket)
      bucket.push_back(
          {{"symbol", b.symbol}, {"value", b.value}, {"padding", padding_name(b.padding)}});
    entries.push_back({{"name", e.name},
                       {"bucket_group", e.bucket_group},
                       {"bucket", bucket},
                       {"inputs", specs_json(e.inputs)},
                       {"outputs", specs_json(e.outputs)}});
  }
  const BatchPlan& plan = batcher_.plan();
  const BatchOptions& opt = batcher_.options();
  json batching = {{"mode", batch_mode_name(plan.mode)},
                   {"reason", plan.reason},
                   {"max_batch", opt.max_batch},
                   {"max_delay_ms", static_cast<double>(opt.max_delay.count()) / 1000.0},
                   {"threads", opt.threads}};
  if (plan.mode == BatchMode::concat) {
    batching["symbol"] = plan.symbol;
    batching["max_rows"] = plan.max_rows;
  }
  return {{"name", options_.name},
          {"path", options_.model_path},
          {"target", info.target},
          {"producer", info.producer},
          {"format", std::to_string(info.format_major) + "." + std::to_string(info.format_minor)},
          {"source_sha256", info.source_sha256},
          {"inputs", specs_json(sig_.inputs)},
          {"outputs", specs_json(sig_.outputs)},
          {"states", specs_json(sig_.states)},
          {"entries", entries},
          {"predict_runs", sig_.entries.empty() || sig_.entries[0].bucket_group.empty()
                               ? (sig_.entries.empty() ? "" : sig_.entries[0].name)
                               : "the smallest bucket of " + sig_.entries[0].bucket_group +
                                     " that fits the inputs"},
          {"batching", batching},
          {"max_body_bytes", options_.max_body_bytes},
          {"encodings", {"application/json", "application/x-npy", "multipart/form-data"}}};
}

json Service::metrics_json() const {
  const Batcher::Counters c = batcher_.counters();
  json by_status = json::object();
  uint64_t ok = 0, client = 0, server = 0;
  for (size_t s = 0; s < responses_by_status_.size(); ++s) {
    const uint64_t n = responses_by_status_[s].load(std::memory_order_relaxed);
    if (!n) continue;
    by_status[std::to_string(s)] = n;
    (s < 400 ? ok : s < 500 ? client : server) += n;
  }
  const uint64_t predicts = predict_requests_.load();
  return {
      {"uptime_s", std::chrono::duration<double>(Clock::now() - started_).count()},
      {"responses",
       {{"total", ok + client + server},
        {"ok", ok},
        {"client_errors", client},
        {"server_errors", server},
        {"by_status", by_status}}},
      {"predict",
       {{"requests", predicts},
        {"answered", c.requests},
        {"failed", c.failed_requests},
        {"mean_wall_ns",
         predicts ? static_cast<double>(wall_ns_total_.load()) / static_cast<double>(predicts)
                  : 0.0}}},
      {"batches",
       {{"count", c.batches},
        {"mean_requests", c.batches ? static_cast<double>(c.requests + c.failed_requests) /
                                          static_cast<double>(c.batches)
                                    : 0.0},
        {"max_requests", c.max_batch_requests},
        {"concat_runs", c.concat_runs},
        {"fallback_batches", c.fallback_batches},
        {"queued", c.queued}}},
      {"runs",
       {{"count", c.runs}, {"device_ns_total", c.device_ns}, {"latency_ns_total", c.latency_ns}}}};
}

void Service::predict(const httplib::Request& req, httplib::Response& res) {
  const Clock::time_point t0 = Clock::now();
  ++predict_requests_;
  if (!known_model(req, res)) return;
  std::vector<BodyPart> parts;
  for (const auto& [field, file] : req.files) parts.push_back({file.name, file.content});
  Result<PredictRequest> pr =
      parse_predict_request(sig_.inputs, sig_.outputs, req.get_header_value("Content-Type"),
                            req.body, parts, req.get_param_value("output"));
  if (!pr) return send_error(res, pr.status());
  JobResult r = batcher_.submit(std::move(pr->inputs)).get();
  if (!r.status.is_ok()) return send_error(res, r.status);

  std::string body;
  const char* type = "application/json";
  if (pr->response == Encoding::npy) {
    size_t o = 0;
    while (sig_.outputs[o].name != pr->output) ++o;  // parse_predict_request checked the name
    Result<std::string> npy = encode_npy(r.outputs[o]);
    if (!npy) return send_error(res, npy.status());
    body = std::move(*npy);
    type = "application/x-npy";
  }
  const double wall_ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
  wall_ns_total_ += static_cast<uint64_t>(wall_ns);
  const RunStats& s = r.stats;
  if (pr->response == Encoding::json) {
    json outputs = json::object();
    for (size_t o = 0; o < sig_.outputs.size(); ++o) {
      if (!pr->output.empty() && sig_.outputs[o].name != pr->output) continue;
      Result<json> t = tensor_to_json(r.outputs[o]);
      if (!t) return send_error(res, t.status());
      outputs[sig_.outputs[o].name] = std::move(*t);
    }
    json stats = {{"wall_ns", wall_ns},
                  {"queue_ns", r.queue_ns},
                  {"latency_ns", s.latency_ns},
                  {"device_ns", s.device_ns},
                  {"host_ops_ns", s.host_ops_ns},
                  {"run_wall_ns", s.host_wall_ns},
                  {"entry", s.entry},
                  {"padded", s.padded},
                  {"batch",
                   {{"mode", batch_mode_name(batcher_.plan().mode)},
                    {"requests", r.batch_requests},
                    {"rows", r.batch_rows}}}};
    body = json{{"model", options_.name}, {"outputs", std::move(outputs)}, {"stats", stats}}.dump();
  }
  // The same numbers as headers, so .npy clients see them too.
  res.set_header("X-Neuronc-Wall-Ns", std::to_string(static_cast<int64_t>(wall_ns)));
  res.set_header("X-Neuronc-Queue-Ns", std::to_string(static_cast<int64_t>(r.queue_ns)));
  res.set_header("X-Neuronc-Latency-Ns", std::to_string(static_cast<int64_t>(s.latency_ns)));
  res.set_header("X-Neuronc-Device-Ns", std::to_string(static_cast<int64_t>(s.device_ns)));
  res.set_header("X-Neuronc-Entry", s.entry);
  res.set_header("X-Neuronc-Batch-Requests", std::to_string(r.batch_requests));
  res.set_header("X-Neuronc-Batch-Rows", std::to_string(r.batch_rows));
  res.set_content(std::move(body), type);
}

void Service::install(httplib::Server& server) {
  server.set_payload_max_length(options_.max_body_bytes);
  server.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(
        json{{"models", {{{"name", options_.name}, {"path", options_.model_path}}}}}.dump(),
        "application/json");
  });
  server.Get(R"(/v1/models/([^/:]+))", [this](const httplib::Request& req, httplib::Response& res) {
    if (known_model(req, res)) res.set_content(model_json().dump(2), "application/json");
  });
  server.Post(R"(/v1/models/([^/:]+):predict)",
              [this](const httplib::Request& req, httplib::Response& res) { predict(req, res); });
  server.Get("/v1/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_json().dump(2), "application/json");
  });
  for (const char* path : {R"(/v1/models/[^/]+:predict)"}) {
    server.Get(path, not_allowed("POST"));
    server.Put(path, not_allowed("POST"));
    server.Delete(path, not_allowed("POST"));
    server.Patch(path, not_allowed("POST"));
  }
  for (const char* path : {R"(/v1/models/[^/:]+)", "/v1/models", "/v1/metrics"}) {
    server.Post(path, not_allowed("GET"));
    server.Put(path, not_allowed("GET"));
    server.Delete(path, not_allowed("GET"));
    server.Patch(path, not_allowed("GET"));
  }
  // Errors httplib answers itself (no route, a body over the limit) get the same JSON body.
  server.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string message;
    StatusCode code = StatusCode::invalid_argument;
    if (res.status == 413) {
      message = "body is " +
                (req.has_header("Content-Length") ? req.get_header_value("Content-Length")
                                                  : std::string("more than")) +
                " bytes, expected at most " + std::to_string(options_.max_body_bytes) +
                " (--max-body-bytes)";
      code = StatusCode::out_of_range;
    } else if (res.status == 404) {
      message = "no route for " + req.method + " " + req.path +
                ": expected GET /v1/models, GET /v1/models/<name>, POST "
                "/v1/models/<name>:predict or GET /v1/metrics";
      code = StatusCode::not_found;
    } else {
      message = "the request could not be served (HTTP " + std::to_string(res.status) + ")";
    }
    res.set_content(error_body(res.status, Status(code, message)), "application/json");
  });
  server.set_logger([this](const httplib::Request&, const httplib::Response& res) {
    const size_t s = static_cast<size_t>(std::clamp(res.status, 0, 599));
    responses_by_status_[s].fetch_add(1, std::memory_order_relaxed);
  });
}

}  // namespace neuronc::server
