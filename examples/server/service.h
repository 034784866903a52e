// The HTTP face of the server: routes, encodings, errors and counters over one model and its
// Batcher (examples/server/README.md lists the API).
//   GET  /v1/models                  the model served, by name
//   GET  /v1/models/<name>           its signature, entries and batching
//   POST /v1/models/<name>:predict   a prediction (JSON, .npy or multipart .npy)
//   GET  /v1/metrics                 counters
// Every error is JSON, {"error": {"code", "status", "message"}}, the message saying what was
// expected and what was found.
//
// Thread-safety: the handlers run on httplib's pool threads concurrently; the Service's state is
// atomics and the Batcher, which is thread-safe.
#pragma once

#include <httplib.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

#include "examples/server/batcher.h"
#include "neuronc/model.h"

namespace neuronc::server {

struct ServiceOptions {
  std::string name;        // the model's name in URLs
  std::string model_path;  // shown by GET
  size_t max_body_bytes = 64 << 20;
};

class Service {
 public:
  Service(const Model& model, Batcher& batcher, ServiceOptions options);

  // Registers the routes, the JSON error bodies and the request counters on `server`, and sets
  // its payload limit to max_body_bytes.
  void install(httplib::Server& server);

  nlohmann::json model_json() const;
  nlohmann::json metrics_json() const;

 private:
  void predict(const httplib::Request& req, httplib::Response& res);
  bool known_model(const httplib::Request& req, httplib::Response& res) const;

  Model model_;
  Batcher& batcher_;
  ServiceOptions options_;
  Signature sig_;
  std::chrono::steady_clock::time_point started_;
  std::array<std::atomic<uint64_t>, 600> responses_by_status_{};
  std::atomic<uint64_t> predict_requests_{0};
  std::atomic<uint64_t> wall_ns_total_{0};
};

}  // namespace neuronc::server
