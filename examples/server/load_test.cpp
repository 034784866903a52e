// A bounded load test of neuronc-server on loopback: starts the server on a free port, sends
// --requests predictions from --clients concurrent keep-alive clients (JSON and .npy in turn,
// a handful of distinct inputs in rotation), and malformed requests alongside them; then stops
// the server with SIGTERM. It fails (exit 1, each failure named) unless
//   - every prediction got 200 and outputs equal, bit for bit, to a local Session's single run
//     of the same input;
//   - every malformed request got its 4xx status and a message naming what was wrong;
//   - the server's VmRSS at the end is within --rss-tolerance-kb of its VmRSS after the warm-up;
//   - the server exits 0 after SIGTERM.
// It prints throughput, P50/P99 wall latency, the simulated device latency and error counts
// (--report: as the markdown row bench/server.sh collects).
//   server_load_test --server build/examples/server/neuronc-server --model mlp.nca
#include <httplib.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "examples/server/batcher.h"
#include "examples/server/npy_codec.h"
#include "examples/server/tensor_json.h"
#include "neuronc/model.h"
#include "neuronc/session.h"

extern char** environ;

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace srv = neuronc::server;

struct Options {
  std::string server;
  std::string model;
  std::string name = "model";
  int clients = 64;
  int requests = 20000;
  int warmup = 2000;
  int distinct = 6;
  int64_t rss_tolerance_kb = 8192;
  size_t max_body_bytes = 1 << 20;
  std::vector<std::string> server_args;
  std::string expect_batching;
  bool report = false;
};

// One distinct input, its expected outputs and its encoded bodies.
struct Case {
  std::vector<neuronc::Tensor> inputs;
  std::vector<neuronc::Tensor> expected;  // the signature's outputs
  std::string json_body;
  std::string npy_body;                   // single-input models
  httplib::MultipartFormDataItems parts;  // multi-input models
};

// A request that must be refused, and how.
struct BadCase {
  std::string what;
  std::string method;
  std::string path;
  std::string content_type;
  std::string body;
  int status;
  std::string message;  // a substring the error message must hold
};

// Failures, collected from every thread; the first few of each kind are kept verbatim.
class Failures {
 public:
  void add(const std::string& what) {
    std::lock_guard lock(mu_);
    ++count_;
    if (kept_.size() < 20) kept_.push_back(what);
  }
  uint64_t count() const {
    std::lock_guard lock(mu_);
    return count_;
  }
  std::vector<std::string> kept() const {
    std::lock_guard lock(mu_);
    return kept_;
  }

 private:
  mutable std::mutex mu_;
  uint64_t count_ = 0;
  std::vector<std::string> kept_;
};

uint64_t next_random(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// A tensor for `spec` with dim 0 = `rows` when that dim is symbolic, other symbolic dims at
// their minimum (at least 1), filled with values of its dtype.
neuronc::Tensor make_input(const neuronc::TensorSpec& spec, int64_t rows, uint64_t seed) {
  neuronc::Shape shape;
  for (size_t d = 0; d < spec.dims.size(); ++d) {
    const neuronc::DimSpec& ds = spec.dims[d];
    if (!ds.is_symbolic())
      shape.push_back(ds.value);
    else
      shape.push_back(ds.coeff * (d == 0 ? rows : std::max<int64_t>(ds.min, 1)));
  }
  neuronc::Tensor t(spec.dtype, shape);
  auto* p = static_cast<std::byte*>(t.mutable_data());
  for (int64_t k = 0; k < t.numel(); ++k) {
    const uint64_t r = next_random(seed);
    std::byte* e = p + k * neuronc::dtype_size(spec.dtype);
    if (neuronc::dtype_is_integral(spec.dtype)) {
      int64_t lo = 0, hi = 2;
      if (spec.valid_range) lo = spec.valid_range->lo, hi = spec.valid_range->hi;
      const int64_t v =
          lo + static_cast<int64_t>(r % static_cast<uint64_t>(std::max<int64_t>(hi - lo, 1)));
      std::memcpy(e, &v, neuronc::dtype_size(spec.dtype));
      continue;
    }
    const float f = static_cast<float>(static_cast<double>(r >> 11) * 0x1.0p-53 * 6.0 - 3.0);
    switch (spec.dtype) {
      case neuronc::DType::f64: {
        const double d = f;
        std::memcpy(e, &d, 8);
        break;
      }
      case neuronc::DType::f16: {
        const uint16_t h = srv::f32_to_f16_bits(f);
        std::memcpy(e, &h, 2);
        break;
      }
      case neuronc::DType::bf16: {
        const uint16_t h = srv::f32_to_bf16_bits(f);
        std::memcpy(e, &h, 2);
        break;
      }
      default:
        std::memcpy(e, &f, 4);
        break;
    }
  }
  return t;
}

bool same_bytes(const neuronc::Tensor& a, const neuronc::Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

// A numeric response header, or `fallback` when it is absent.
double header_number(const httplib::Response& res, const char* key, double fallback) {
  return res.has_header(key) ? std::stod(res.get_header_value(key)) : fallback;
}

int64_t vm_rss_kb(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  return -1;
}

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

// Starts the server with stdout on a pipe and reads its port from "listening on http://H:P".
std::optional<std::pair<pid_t, int>> start_server(const Options& o) {
  int fds[2];
  if (pipe(fds) != 0) return std::nullopt;
  std::vector<std::string> args = {o.server,           o.model,
                                   "--name",           o.name,
                                   "--port",           "0",
                                   "--max-body-bytes", std::to_string(o.max_body_bytes),
                                   "--http-threads",   std::to_string(o.clients + 8)};
  args.insert(args.end(), o.server_args.begin(), o.server_args.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, o.server.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    std::cerr << "load_test: cannot start " << o.server << ": " << std::strerror(rc) << "\n";
    return std::nullopt;
  }
  std::string out;
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < deadline) {
    pollfd p{fds[0], POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    char buf[256];
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    const size_t at = out.find("listening on http://");
    const size_t nl = at == std::string::npos ? at : out.find('\n', at);
    if (nl != std::string::npos) {
      const std::string line = out.substr(at, nl - at);
      close(fds[0]);
      return std::pair{pid, std::stoi(line.substr(line.rfind(':') + 1))};
    }
  }
  close(fds[0]);
  std::cerr << "load_test: the server printed no port within 60 s (stdout: '" << out << "')\n";
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return std::nullopt;
}

std::vector<BadCase> bad_cases(const srv::Signature& sig, const Options& o) {
  const std::string predict = "/v1/models/" + o.name + ":predict";
  const neuronc::TensorSpec& x = sig.inputs[0];
  auto tensor_json = [&](const neuronc::TensorSpec& s, const neuronc::Shape& shape,
                         const std::string& dtype) {
    json data = json::array();
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    for (int64_t k = 0; k < n; ++k) data.push_back(0);
    (void)s;
    return json{{"dtype", dtype}, {"shape", shape}, {"data", data}};
  };
  neuronc::Shape good;
  for (const neuronc::DimSpec& d : x.dims)
    good.push_back(d.is_symbolic() ? d.coeff * std::max<int64_t>(d.min, 1) : d.value);
  json others = json::object();
  for (size_t i = 1; i < sig.inputs.size(); ++i) {
    neuronc::Shape s;
    for (const neuronc::DimSpec& d : sig.inputs[i].dims)
      s.push_back(d.is_symbolic() ? d.coeff * std::max<int64_t>(d.min, 1) : d.value);
    others[sig.inputs[i].name] =
        tensor_json(sig.inputs[i], s, std::string(neuronc::dtype_name(sig.inputs[i].dtype)));
  }
  auto with_x = [&](json xv) {
    json in = others;
    in[x.name] = std::move(xv);
    return json{{"inputs", in}}.dump();
  };
  const std::string xdtype(neuronc::dtype_name(x.dtype));
  std::vector<BadCase> cases = {
      {"bad JSON", "POST", predict, "application/json", "{\"inputs\": {", 400, "not valid JSON"},
      {"unknown input", "POST", predict, "application/json",
       json{{"inputs", {{"no_such_input", tensor_json(x, good, xdtype)}}}}.dump(), 400,
       "unknown input 'no_such_input'"},
      {"missing input", "POST", predict, "application/json",
       json{{"inputs", json::object()}}.dump(), 400, "input '" + x.name + "' is missing"},
      {"wrong dtype", "POST", predict, "application/json",
       with_x(tensor_json(x, good, x.dtype == neuronc::DType::i32 ? "i64" : "i32")), 400,
       "dtype is " + std::string(x.dtype == neuronc::DType::i32 ? "i64" : "i32") + ", expected " +
           xdtype},
      {"wrong rank", "POST", predict, "application/json",
       with_x(tensor_json(x, neuronc::Shape(good.begin(), good.end() - 1), xdtype)), 400,
       "rank is " + std::to_string(good.size() - 1)},
      {"data count", "POST", predict, "application/json",
       with_x(json{{"shape", good}, {"data", {1, 2, 3}}}), 400, "data has 3 values"},
      {"not npy", "POST", predict, "application/x-npy", "definitely not numpy", 400,
       sig.inputs.size() == 1 ? "not a .npy file" : "carries one input"},
      {"content type", "POST", predict, "text/plain", "hello", 415,
       "content type 'text/plain' is not supported"},
      {"unknown model", "POST", "/v1/models/no_such_model:predict", "application/json", "{}", 404,
       "unknown model 'no_such_model'"},
      {"wrong method", "GET", predict, "", "", 405, "method GET is not allowed"},
      {"oversize body", "POST", predict, "application/json", std::string(o.max_body_bytes + 1, ' '),
       413, "expected at most " + std::to_string(o.max_body_bytes)},
  };
  // A fixed dim off by one, or a symbolic one beyond its range.
  for (size_t d = 0; d < x.dims.size(); ++d) {
    neuronc::Shape bad = good;
    const neuronc::DimSpec& ds = x.dims[d];
    bad[d] = ds.is_symbolic() ? ds.coeff * (ds.max + 1) : ds.value + 1;
    cases.push_back({"wrong dim " + std::to_string(d), "POST", predict, "application/json",
                     with_x(tensor_json(x, bad, xdtype)), 400,
                     ds.is_symbolic()
                         ? "gives symbol '" + ds.symbol + "' = " + std::to_string(ds.max + 1)
                         : "dim " + std::to_string(d) + " is " + std::to_string(bad[d]) +
                               ", expected " + std::to_string(ds.value)});
    break;  // one is enough per run; the unit tests cover the rest
  }
  return cases;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"bounded load test of neuronc-server on loopback"};
  app.add_option("--server", o.server, "the neuronc-server binary")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--model", o.model, "the compiled model (.nca)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--name", o.name, "the model's name in URLs")->capture_default_str();
  app.add_option("--clients", o.clients, "concurrent clients")->capture_default_str();
  app.add_option("--requests", o.requests, "predictions in all, warm-up included")
      ->capture_default_str();
  app.add_option("--warmup", o.warmup, "predictions before the first RSS reading")
      ->capture_default_str();
  app.add_option("--distinct", o.distinct, "distinct inputs, rotated")->capture_default_str();
  app.add_option("--rss-tolerance-kb", o.rss_tolerance_kb,
                 "allowed growth of the server's VmRSS from the warm-up to the end (negative: "
                 "not checked)")
      ->capture_default_str();
  app.add_option("--server-arg", o.server_args, "an extra server flag (repeatable)");
  app.add_option("--expect-batching", o.expect_batching,
                 "fail unless the server batches this way (concat or sequential)");
  app.add_flag("--report", o.report, "print the markdown row bench/server.sh collects");
  CLI11_PARSE(app, argc, argv);

  // Expected outputs from a local Session, one single run per distinct input.
  neuronc::Result<neuronc::Model> model = neuronc::Model::load(o.model);
  if (!model) {
    std::cerr << "load_test: " << model.status().to_string() << "\n";
    return 1;
  }
  const srv::Signature sig = srv::Signature::of(*model);
  neuronc::Session local(*model);
  std::vector<Case> cases;
  const neuronc::DimSpec* batch_dim =
      !sig.inputs[0].dims.empty() && sig.inputs[0].dims[0].is_symbolic() ? &sig.inputs[0].dims[0]
                                                                         : nullptr;
  for (int c = 0; c < o.distinct; ++c) {
    Case k;
    // Rows 1, 2, 3, 1, 2, 3, ... within the symbol's range: concatenated batches then mix sizes.
    const int64_t rows =
        batch_dim ? std::clamp<int64_t>(1 + c % 3, batch_dim->min, batch_dim->max) : 0;
    std::vector<neuronc::NamedInput> named;
    json inputs = json::object();
    for (size_t i = 0; i < sig.inputs.size(); ++i) {
      k.inputs.push_back(make_input(sig.inputs[i], rows, 1000 + static_cast<uint64_t>(c) * 17 + i));
      named.push_back({sig.inputs[i].name, k.inputs.back().view()});
      inputs[sig.inputs[i].name] = *srv::tensor_to_json(k.inputs.back());
      const std::string npy = *srv::encode_npy(k.inputs.back());
      if (sig.inputs.size() == 1) k.npy_body = npy;
      k.parts.push_back(
          {sig.inputs[i].name, npy, sig.inputs[i].name + ".npy", "application/x-npy"});
    }
    k.json_body = json{{"inputs", inputs}}.dump();
    neuronc::Result<neuronc::Outputs> out = local.run(named);
    if (!out) {
      std::cerr << "load_test: the local run failed: " << out.status().to_string() << "\n";
      return 1;
    }
    for (const neuronc::TensorSpec& s : sig.outputs) k.expected.push_back(out->release(s.name));
    cases.push_back(std::move(k));
  }
  // The distinct inputs must give distinct outputs, or a response mixed up with another
  // request's would go unnoticed.
  for (size_t a = 0; a < cases.size(); ++a)
    for (size_t b = a + 1; b < cases.size(); ++b)
      if (same_bytes(cases[a].expected[0], cases[b].expected[0])) {
        std::cerr << "load_test: inputs " << a << " and " << b << " give the same output\n";
        return 1;
      }

  const auto started = start_server(o);
  if (!started) return 1;
  const auto [pid, port] = *started;
  Failures failures, bad_failures;
  std::string batching = "?";
  {
    httplib::Client cli("127.0.0.1", port);
    auto res = cli.Get("/v1/models/" + o.name);
    if (!res || res->status != 200) {
      failures.add("GET /v1/models/" + o.name + " failed");
    } else {
      const json j = json::parse(res->body);
      batching = j["batching"]["mode"].get<std::string>();
      std::cerr << "load_test: batching " << batching << ": " << j["batching"]["reason"] << "\n";
      if (!o.expect_batching.empty() && batching != o.expect_batching)
        failures.add("the server batches " + batching + ", expected " + o.expect_batching + ": " +
                     j["batching"]["reason"].get<std::string>());
    }
  }

  const std::string predict = "/v1/models/" + o.name + ":predict";
  std::atomic<int> next{0};
  std::mutex stats_mu;
  std::vector<double> wall_ms;
  double device_ns_sum = 0, latency_ns_sum = 0;
  uint64_t batched = 0, answered = 0;
  std::vector<double> batch_requests_seen;

  // Predictions [from, to) from --clients threads.
  auto run_phase = [&](int to) {
    std::vector<std::thread> threads;
    for (int c = 0; c < o.clients; ++c) {
      threads.emplace_back([&] {
        httplib::Client cli("127.0.0.1", port);
        cli.set_keep_alive(true);
        cli.set_tcp_nodelay(true);  // see the server's main.cpp: Nagle costs 40 ms a request
        cli.set_read_timeout(60, 0);
        std::vector<double> my_wall;
        double my_device = 0, my_latency = 0;
        uint64_t my_batched = 0, my_answered = 0;
        for (;;) {
          // Claims the next index only while it is below `to`, so none is lost between phases.
          int i = next.load();
          while (i < to && !next.compare_exchange_weak(i, i + 1)) {
          }
          if (i >= to) break;
          const Case& k = cases[static_cast<size_t>(i) % cases.size()];
          const bool npy = (i / static_cast<int>(cases.size())) % 2 == 1;
          const Clock::time_point t0 = Clock::now();
          httplib::Result res = !npy ? cli.Post(predict, k.json_body, "application/json")
                                : sig.inputs.size() == 1
                                    ? cli.Post(predict, k.npy_body, "application/x-npy")
                                    : cli.Post(predict + "?output=" + sig.outputs[0].name, k.parts);
          my_wall.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
          const std::string who = "request " + std::to_string(i) + (npy ? " (npy)" : " (json)");
          if (!res) {
            failures.add(who + ": " + httplib::to_string(res.error()));
            continue;
          }
          if (res->status != 200) {
            failures.add(who + ": HTTP " + std::to_string(res->status) + " " + res->body);
            continue;
          }
          std::vector<neuronc::Tensor> got;
          if (npy) {
            neuronc::Result<neuronc::Tensor> t = srv::decode_npy(res->body, "response");
            if (!t) {
              failures.add(who + ": " + t.status().message());
              continue;
            }
            got.push_back(std::move(*t));
          } else {
            const json j = json::parse(res->body, nullptr, false);
            bool ok = !j.is_discarded() && j.contains("outputs");
            for (size_t oi = 0; ok && oi < sig.outputs.size(); ++oi) {
              neuronc::Result<neuronc::Tensor> t = srv::tensor_from_json(
                  j["outputs"][sig.outputs[oi].name], "output", sig.outputs[oi].dtype);
              ok = t.is_ok();
              if (ok) got.push_back(std::move(*t));
            }
            if (!ok) {
              failures.add(who + ": malformed JSON response " + res->body.substr(0, 200));
              continue;
            }
          }
          for (size_t oi = 0; oi < got.size(); ++oi)
            if (!same_bytes(got[oi], k.expected[oi])) {
              failures.add(who + ": output '" + sig.outputs[oi].name +
                           "' differs from the single-request result");
              break;
            }
          my_device += header_number(*res, "X-Neuronc-Device-Ns", 0);
          my_latency += header_number(*res, "X-Neuronc-Latency-Ns", 0);
          my_batched += header_number(*res, "X-Neuronc-Batch-Requests", 1) > 1;
          ++my_answered;
        }
        std::lock_guard lock(stats_mu);
        wall_ms.insert(wall_ms.end(), my_wall.begin(), my_wall.end());
        device_ns_sum += my_device;
        latency_ns_sum += my_latency;
        batched += my_batched;
        answered += my_answered;
      });
    }
    for (std::thread& t : threads) t.join();
  };

  run_phase(std::min(o.warmup, o.requests));
  const int64_t rss_warm = vm_rss_kb(pid);

  // Malformed requests alongside the main phase, each checked for its status and message.
  std::atomic<bool> load_done{false};
  std::atomic<uint64_t> bad_sent{0};
  const std::vector<BadCase> bad = bad_cases(sig, o);
  std::thread bad_thread([&] {
    httplib::Client cli("127.0.0.1", port);
    // Paced (one every 2 ms, each kind at least once), so they mix with the load rather than
    // take the machine from it: an oversize body alone is --max-body-bytes of traffic.
    for (size_t i = 0; !load_done || i < bad.size(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      const BadCase& b = bad[i % bad.size()];
      httplib::Result res =
          b.method == "GET" ? cli.Get(b.path) : cli.Post(b.path, b.body, b.content_type);
      ++bad_sent;
      if (!res) {
        bad_failures.add(b.what + ": " + httplib::to_string(res.error()));
        continue;
      }
      const json j = json::parse(res->body, nullptr, false);
      const std::string message =
          !j.is_discarded() && j.contains("error") ? j["error"].value("message", "") : "";
      if (res->status != b.status || message.find(b.message) == std::string::npos)
        bad_failures.add(b.what + ": expected HTTP " + std::to_string(b.status) + " with '" +
                         b.message + "', got " + std::to_string(res->status) + " " +
                         res->body.substr(0, 300));
    }
  });
  const Clock::time_point t0 = Clock::now();
  run_phase(o.requests);
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  load_done = true;
  bad_thread.join();
  const int64_t rss_end = vm_rss_kb(pid);

  json metrics;
  {
    httplib::Client cli("127.0.0.1", port);
    auto res = cli.Get("/v1/metrics");
    if (res && res->status == 200) metrics = json::parse(res->body, nullptr, false);
    if (!metrics.is_object()) failures.add("GET /v1/metrics failed");
  }

  kill(pid, SIGTERM);
  int status = 0;
  const Clock::time_point stop_deadline = Clock::now() + std::chrono::seconds(30);
  pid_t w = 0;
  while ((w = waitpid(pid, &status, WNOHANG)) == 0 && Clock::now() < stop_deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (w == 0) {
    failures.add("the server did not exit within 30 s of SIGTERM");
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    failures.add("the server exited with status " + std::to_string(status) + " after SIGTERM");
  }

  const int main_requests = o.requests - std::min(o.warmup, o.requests);
  std::vector<double> all_wall = wall_ms;
  const double p50 = percentile(all_wall, 0.50), p99 = percentile(all_wall, 0.99);
  const double mean_device_us = answered ? device_ns_sum / static_cast<double>(answered) / 1e3 : 0;
  const double mean_latency_us =
      answered ? latency_ns_sum / static_cast<double>(answered) / 1e3 : 0;
  const int64_t growth = rss_end - rss_warm;
  if (o.rss_tolerance_kb < 0) {
    // Not checked (sanitizer builds: their allocators keep freed memory in quarantine).
  } else if (rss_warm < 0 || rss_end < 0) {
    failures.add("VmRSS of the server could not be read");
  } else if (growth > o.rss_tolerance_kb) {
    failures.add("the server's VmRSS grew by " + std::to_string(growth) + " kB over " +
                 std::to_string(main_requests) + " requests, expected at most " +
                 std::to_string(o.rss_tolerance_kb) + " kB");
  }
  // 64 clients and a few workers queue requests: batches of more than one must have formed.
  if (o.clients > 1 && batched == 0) failures.add("no response came from a batch of more than one");
  if (answered + failures.count() < static_cast<uint64_t>(o.requests))
    failures.add("only " + std::to_string(answered) + " of " + std::to_string(o.requests) +
                 " predictions were answered");
  if (metrics.is_object() &&
      metrics["predict"]["answered"].get<uint64_t>() < static_cast<uint64_t>(o.requests))
    failures.add("the server's metrics count " + metrics["predict"]["answered"].dump() +
                 " answered predictions, expected at least " + std::to_string(o.requests));

  std::cerr << "load_test: " << o.requests << " predictions from " << o.clients << " clients ("
            << main_requests << " after " << std::min(o.warmup, o.requests)
            << " warm-up): " << static_cast<double>(main_requests) / seconds
            << " requests/s, wall P50 " << p50 << " ms, P99 " << p99 << " ms; simulated device "
            << mean_device_us << " us, latency " << mean_latency_us << " us per run; " << batched
            << " answered in batches of more than one; errors " << failures.count()
            << "; malformed requests sent " << bad_sent << " (" << bad.size()
            << " kinds), wrong answers " << bad_failures.count() << "; server VmRSS " << rss_warm
            << " kB after warm-up, " << rss_end << " kB at the end (" << (growth >= 0 ? "+" : "")
            << growth << " kB)\n";
  if (metrics.is_object()) std::cerr << "load_test: server metrics " << metrics.dump() << "\n";
  if (o.report) {
    // From the server's counters: the device time its runs took per prediction answered (a
    // concatenated run's time shared by its rows), and the mean requests per batch.
    double device_per_request_us = 0, mean_batch = 0;
    if (metrics.is_object() && metrics["predict"]["answered"].get<double>() > 0) {
      device_per_request_us = metrics["runs"]["device_ns_total"].get<double>() /
                              metrics["predict"]["answered"].get<double>() / 1e3;
      mean_batch = metrics["batches"]["mean_requests"].get<double>();
    }
    std::printf(
        "| %s | %s | %d | %d | %.0f | %.2f | %.2f | %.1f | %.1f | %.2f | %.1f | %llu | %llu / %llu "
        "| %lld | %lld |\n",
        o.name.c_str(), batching.c_str(), o.clients, o.requests,
        static_cast<double>(main_requests) / seconds, p50, p99, mean_device_us, mean_latency_us,
        device_per_request_us, mean_batch, static_cast<unsigned long long>(failures.count()),
        static_cast<unsigned long long>(bad_failures.count()),
        static_cast<unsigned long long>(bad_sent.load()), static_cast<long long>(rss_warm),
        static_cast<long long>(rss_end));
  }
  for (const std::string& f : failures.kept()) std::cerr << "FAIL: " << f << "\n";
  for (const std::string& f : bad_failures.kept()) std::cerr << "FAIL (malformed): " << f << "\n";
  return failures.count() == 0 && bad_failures.count() == 0 ? 0 : 1;
}
