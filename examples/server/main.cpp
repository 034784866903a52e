// neuronc-server: serves one compiled model (.nca) over HTTP with dynamic batching, as a service
// embedding the loader would (examples/server/README.md).
//   neuronc-server model.nca [--name NAME] [--port 8080] [--threads 2] [--max-batch 8]
//                  [--max-delay-ms 2] [--max-body-bytes 67108864] [--batching auto|sequential]
// Prints "listening on http://HOST:PORT" once it accepts connections (--port 0 picks a free
// port) and stops cleanly on SIGINT or SIGTERM: it finishes the requests it has, then exits 0.
#include <pthread.h>
#include <sys/socket.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <thread>

#include "examples/server/batcher.h"
#include "examples/server/service.h"
#include "neuronc/model.h"
#include "neuronc/session.h"

namespace {

using neuronc::server::BatchMode;

struct Flags {
  std::string model;
  std::string name;
  std::string host = "127.0.0.1";
  int port = 8080;
  int threads = 2;
  int http_threads = 64;
  int max_batch = 8;
  double max_delay_ms = 2;
  size_t max_body_bytes = 64 << 20;
  std::string batching = "auto";
};

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{"neuronc-server: serve one compiled model (.nca) over HTTP"};
  app.add_option("model", f.model, "the compiled model (.nca)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--name", f.name, "the model's name in URLs (default: the file's stem)");
  app.add_option("--host", f.host, "address to listen on")->capture_default_str();
  app.add_option("--port", f.port, "port (0: a free one, printed)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  app.add_option("--threads", f.threads, "worker threads, one Session each")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  app.add_option("--http-threads", f.http_threads,
                 "HTTP connection threads: at least the number of concurrent clients")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--max-batch", f.max_batch,
                 "most requests (sequential) or rows (concat) in one batch")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--max-delay-ms", f.max_delay_ms,
                 "how long the oldest queued request waits for others to batch with")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 10000.0));
  app.add_option("--max-body-bytes", f.max_body_bytes, "larger request bodies get 413")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--batching", f.batching,
                 "auto: concatenate along a symbolic batch dim when the model allows it; "
                 "sequential: never")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "sequential"}));
  CLI11_PARSE(app, argc, argv);
  if (f.name.empty()) f.name = std::filesystem::path(f.model).stem().string();

  // Signals go to one thread that waits for them (below); every thread started from here on
  // inherits the mask, so none is interrupted mid-request.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  neuronc::Result<neuronc::Model> model = neuronc::Model::load(f.model);
  if (!model) {
    std::cerr << "neuronc-server: " << f.model << ": " << model.status().to_string() << "\n";
    return 1;
  }
  if (model->info().timing_only) {
    std::cerr << "neuronc-server: " << f.model
              << ": timing-only artifact (compiled without weights): expected one a Session "
                 "can run\n";
    return 1;
  }
  neuronc::server::Signature sig = neuronc::server::Signature::of(*model);
  neuronc::server::BatchPlan plan =
      neuronc::server::plan_batching(sig, f.max_batch, f.batching == "auto");
  if (plan.mode == BatchMode::concat) {
    neuronc::Session probe(*model);
    neuronc::Status exact = probe.status().is_ok()
                                ? neuronc::server::check_concat_exact(probe, sig, plan)
                                : probe.status();
    if (!exact.is_ok())
      plan = neuronc::server::BatchPlan{
          BatchMode::sequential, "", 1,
          "requests run back to back on a worker's session (the start-up check of "
          "concatenated runs failed: " +
              exact.message() + ")"};
  }
  neuronc::server::BatchOptions options;
  options.threads = f.threads;
  options.max_batch = f.max_batch;
  options.max_delay = std::chrono::microseconds(static_cast<int64_t>(f.max_delay_ms * 1000));
  neuronc::server::Batcher batcher(*model, sig, plan, options);
  if (!batcher.status().is_ok()) {
    std::cerr << "neuronc-server: " << batcher.status().to_string() << "\n";
    return 1;
  }

  httplib::Server server;
  const int http_threads = f.http_threads;
  server.new_task_queue = [http_threads] {
    return new httplib::ThreadPool(static_cast<size_t>(http_threads));
  };
  // Clients keep their connections: with 5 requests each (httplib's default) a busy client
  // reconnects all the time.
  server.set_keep_alive_max_count(1000);
  // Headers and body go out in separate writes: with Nagle's algorithm the second one waits for
  // the client's delayed ACK, some 40 ms per response on loopback.
  server.set_tcp_nodelay(true);
  // An idle connection holds a pool thread, and stop() waits for it: keep that wait short.
  server.set_keep_alive_timeout(2);
  neuronc::server::Service service(
      *model, batcher, {.name = f.name, .model_path = f.model, .max_body_bytes = f.max_body_bytes});
  service.install(server);

  // httplib 0.11 listens with a backlog of 5 (compiled into Debian's libcpp-httplib): a burst of
  // clients connecting at once overflows it, and some of them see their first request fail.
  // Listening again on the bound socket raises the backlog; the socket comes from the options
  // hook, which also keeps httplib's default SO_REUSEADDR.
  int listen_fd = -1;
  server.set_socket_options([&listen_fd](int fd) {
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    listen_fd = fd;
  });
  const int port = f.port == 0 ? server.bind_to_any_port(f.host)
                               : (server.bind_to_port(f.host, f.port) ? f.port : -1);
  if (port < 0 || listen(listen_fd, SOMAXCONN) != 0) {
    std::cerr << "neuronc-server: cannot listen on " << f.host << ":" << f.port << "\n";
    return 1;
  }
  std::cerr << "neuronc-server: serving '" << f.name << "' (" << f.model << "), batching "
            << neuronc::server::batch_mode_name(plan.mode) << ": " << plan.reason << "\n";
  std::cout << "listening on http://" << f.host << ":" << port << std::endl;

  std::thread waiter([&] {
    int sig_no = 0;
    sigwait(&signals, &sig_no);
    std::cerr << "neuronc-server: " << (sig_no == SIGINT ? "SIGINT" : "SIGTERM")
              << ", finishing the requests in flight\n";
    server.stop();
  });
  const bool ok = server.listen_after_bind();
  if (!ok && server.is_running()) std::cerr << "neuronc-server: listening failed\n";
  // listen_after_bind returns once stop() was called (or on error); wake the waiter in the
  // latter case so it can be joined.
  pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  batcher.shutdown();
  std::cerr << "neuronc-server: stopped; " << service.metrics_json().dump() << "\n";
  return 0;
}
