// Dynamic batching over per-thread Sessions: requests that passed validate_inputs are queued, and
// each of `threads` workers (one Session each, one Model shared) takes the oldest request plus
// the compatible ones queued within --max-delay-ms of it, up to --max-batch, and runs them.
//
// A compiled model has fixed shapes, so what a batch is depends on the signature (plan_batching):
//   concat      every input and output has the same symbolic dim 0 (a model compiled into shape
//               buckets over its batch dim, e.g. models/dynamic_batch) and the buckets may pad it:
//               the requests' rows are concatenated along dim 0 into one run of at most
//               --max-batch rows (requests with equal other dims only) and the outputs split;
//   sequential  anything else (a fixed batch dim, state, several symbols, an unpadded batch
//               symbol): the group runs back to back on the worker's Session, which saves the
//               queue hand-offs but no device time.
// Every response equals the request's single run bit for bit: a concatenated batch is only used
// after a start-up check that rows run alone and concatenated give the same bytes (the compiler
// proves padding exact, not that rows are independent), a stateful model's state is reset
// before every run, and a batch whose run fails is run again one request at a time so the error
// goes to the request that caused it.
//
// Thread-safety: submit(), counters() and shutdown() may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "neuronc/model.h"
#include "neuronc/session.h"
#include "neuronc/status.h"
#include "neuronc/tensor.h"

namespace neuronc::server {

// What the batcher needs to know of a model (Model's accessors, so tests can build one by hand).
struct Signature {
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  std::vector<TensorSpec> states;
  std::vector<EntryInfo> entries;
  static Signature of(const Model& model);
};

enum class BatchMode { concat, sequential };
const char* batch_mode_name(BatchMode mode);

struct BatchPlan {
  BatchMode mode = BatchMode::sequential;
  std::string symbol;    // concat: the batch dim's symbol
  int64_t max_rows = 1;  // concat: the most rows one run takes (--max-batch, the symbol's range
                         // and its largest bucket)
  std::string reason;    // why this mode, for GET /v1/models/<name> and the log
};

// The batching a signature allows; `allow_concat` false (--batching sequential) forces
// sequential. Does not run anything: see check_concat_exact.
BatchPlan plan_batching(const Signature& sig, int max_batch, bool allow_concat);

// Runs probe inputs (deterministic pseudo-random values of the signature's dtypes, integers in
// their valid ranges) alone and concatenated on `session` and compares the bytes of every
// output row. Ok when they agree; otherwise why not (the caller falls back to sequential).
Status check_concat_exact(Session& session, const Signature& sig, const BatchPlan& plan);

// Dim-0 concatenation of tensors that agree in dtype and every other dim, and the rows
// [begin, begin + count) of one: how a batch's inputs are joined and its outputs split.
Tensor concat_rows(const std::vector<const Tensor*>& parts);
Tensor slice_rows(const Tensor& tensor, int64_t begin, int64_t count);

struct BatchOptions {
  int threads = 2;
  int max_batch = 8;
  std::chrono::microseconds max_delay{2000};
};

// The answer to one request.
struct JobResult {
  Status status;
  std::vector<Tensor> outputs;  // the signature's order
  RunStats stats;               // of the run that computed it (a concatenated batch's run)
  int batch_requests = 1;       // requests in the batch it ran in
  int64_t batch_rows = 0;       // concat: rows of that run
  double queue_ns = 0;          // from submit() to the start of its batch
};

class Batcher {
 public:
  // Creates one Session per thread; status() says whether that worked.
  Batcher(const Model& model, Signature sig, BatchPlan plan, BatchOptions options);
  ~Batcher();  // shutdown()
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  const Status& status() const { return status_; }
  const BatchPlan& plan() const { return plan_; }
  const BatchOptions& options() const { return options_; }

  // Queues a request whose inputs passed validate_inputs (signature order). After shutdown()
  // the future holds a failed_precondition error.
  std::future<JobResult> submit(std::vector<Tensor> inputs);

  // Stops taking requests, finishes the queued ones and joins the workers. Idempotent.
  void shutdown();

  struct Counters {
    uint64_t requests = 0;          // answered by a run
    uint64_t failed_requests = 0;   // answered with an error
    uint64_t batches = 0;           // worker batches
    uint64_t concat_runs = 0;       // runs of more than one request's rows
    uint64_t fallback_batches = 0;  // concatenated runs that failed and were rerun one by one
    uint64_t runs = 0;              // Session::run calls
    uint64_t max_batch_requests = 0;
    double device_ns = 0;  // simulated device time of every run
    double latency_ns = 0;
    uint64_t queued = 0;  // waiting now
  };
  Counters counters() const;

 private:
  struct Job;
  void worker(int index);
  void run_batch(Session& session, std::vector<std::unique_ptr<Job>>& batch);
  bool run_concat(Session& session, std::vector<std::unique_ptr<Job>>& batch);
  void run_one(Session& session, Job& job, int batch_requests);

  Model model_;
  Signature sig_;
  BatchPlan plan_;
  BatchOptions options_;
  Status status_;
  std::vector<Session> sessions_;
  std::vector<std::thread> threads_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Job>> queue_;
  bool collecting_ = false;  // one worker at a time gathers a batch; the others wait their turn
  bool stopping_ = false;
  Counters counters_;
};

}  // namespace neuronc::server
