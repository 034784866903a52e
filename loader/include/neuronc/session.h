// Runs a Model: binds named inputs, executes the execution plan — device partitions on the
// NeuronCore model (functional results and simulated timing), host-fallback ops on the CPU —
// and returns named outputs. A Session owns the simulated device state (HBM arena with the
// model's device-resident weights, SBUF/PSUM) and reusable intermediate buffers.
//
// Thread-safety: a Session is NOT thread-safe; use one per thread. Any number of Sessions may
// share one Model concurrently. Results are deterministic: the same inputs give the same output
// bytes and the same simulated times in any Session, on any thread.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "neuronc/model.h"
#include "neuronc/status.h"
#include "neuronc/tensor.h"

namespace neuronc {

// The processes a Session's NeuronCores are split over (`mpirun -np K neuronc generate ...`: the
// MPI ranks). Each process makes a Session of the same model with its own ProcessGroup and makes
// the same calls with the same inputs. Process r computes the cores it owns (core c belongs to
// process c x size / cores) and times every core; at each collective and at the end of a device
// call the processes swap the HBM bytes their cores wrote. So every process gets the outputs,
// states, simulated times and errors one process would; each holds the whole model.
class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every process calls it at the same points, each with its own bytes; each gets all of them,
  // in rank order. An error fails the run that called it.
  virtual Result<std::vector<std::vector<std::byte>>> all_gather(
      std::span<const std::byte> mine) = 0;
};

struct SessionOptions {
  // NeuronCores this session may use; 0 = as many as the artifact was compiled for. Fewer
  // than the artifact needs is an error.
  int target_cores = 0;
  bool check_races = false;  // run the device model's race checker (slower)
  bool parallel = true;      // let the device model use oneTBB: instructions that share no
                             // byte side by side, large ones inside, and the cores of a
                             // multi-core program (the same bytes as a serial run)
  // Splits the cores over processes (not owned; must outlive the Session). Null: this process
  // computes every core.
  ProcessGroup* processes = nullptr;
};

struct NamedInput {
  std::string name;
  TensorView tensor;
};

struct NamedOutput {
  std::string name;
  MutableTensorView buffer;
};

// Engines in the order of RunStats::engine_busy_ns.
inline constexpr std::array<std::string_view, 5> kEngineNames = {"tensor", "vector", "scalar",
                                                                 "gpsimd", "sync"};

struct RunStats {
  double latency_ns = 0;   // simulated device time + measured host-op time
  double device_ns = 0;    // simulated time of all device partitions
  double host_ops_ns = 0;  // wall time of the host-fallback ops
  // End to end (docs/DEVICE_MODEL.md "End to end"): what a caller of the runtime waits for one
  // inference, latency_ns plus the time each execution pays outside the device: the program
  // start and runtime call of every device call, the PCIe copies of its input and output bytes,
  // program switches and the rank skew of multi-core calls. Issued synchronously (each call
  // waits for the one before), and asynchronously (the host prepares a call while the device
  // runs the one before, as vLLM-Neuron's async mode). The figure to set beside a published
  // end-to-end latency, and the one a cost per inference is computed from.
  double end_to_end_ns = 0;
  double end_to_end_async_ns = 0;
  double execution_call_ns = 0;      // of end_to_end_ns: program start + runtime call, all calls
  double host_transfer_ns = 0;       // of end_to_end_ns: PCIe copies
  uint64_t host_transfer_bytes = 0;  // bytes copied host -> device and back
  double host_wall_ns = 0;           // wall time of the whole run() call on this machine
  std::array<double, 5> engine_busy_ns{};  // simulated busy time per engine, summed over cores
  uint64_t instructions = 0;               // device instructions executed
  uint64_t dma_bytes = 0;
  uint32_t device_calls = 0;
  uint32_t host_ops = 0;
  // This run resolved every value's shape and sized the intermediate buffers: the session's
  // first run, or input shapes that bind the symbolic dims differently from the previous run.
  // A run with the previous run's shapes only binds data pointers.
  bool shapes_prepared = false;
  // The entry that ran: for a model with shape buckets, the bucket run() picked; `padded` when
  // the inputs were padded up to it.
  std::string entry;
  bool padded = false;
};

// Outputs of one run, by signature name.
class Outputs {
 public:
  size_t size() const { return tensors_.size(); }
  // Null when no output has that name.
  const Tensor* find(std::string_view name) const;
  // The named output; the name must be one of the model's outputs (checked: aborts otherwise,
  // like an out-of-bounds index).
  const Tensor& at(std::string_view name) const;
  const std::vector<std::string>& names() const { return names_; }
  // Moves the named output out (an empty Tensor afterwards).
  Tensor release(std::string_view name);

 private:
  friend class Session;
  std::vector<std::string> names_;
  std::vector<Tensor> tensors_;
};

class Session {
 public:
  explicit Session(const Model& model, const SessionOptions& options = {});
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Ok unless creation failed (e.g. target_cores too small, HBM arena allocation); every run()
  // of a failed session returns this status.
  const Status& status() const;

  // Runs the model. `inputs` must name every model input exactly once (dtype and shape as the
  // signature says; symbolic dims within their ranges). `outputs` optionally gives buffers for
  // some outputs (exact dtype and shape); the run writes those in place and allocates the rest.
  // Inputs are read in place and must stay unchanged until run() returns.
  Result<Outputs> run(const std::vector<NamedInput>& inputs,
                      const std::vector<NamedOutput>& outputs = {});
  // Runs the model's entry `entry` (Model::entries()) the same way: its inputs and outputs, the
  // session's states shared by every entry (a prefill entry fills the KV cache decode reads).
  // The run above is the first entry's.
  Result<Outputs> run(std::string_view entry, const std::vector<NamedInput>& inputs,
                      const std::vector<NamedOutput>& outputs = {});

  // Statistics of the last successful run.
  const RunStats& stats() const;

  // State (Model::states()): this session's copy, which a new session starts with the values
  // the model was exported with and every successful run replaces with what the run wrote (a
  // failed run leaves it as it was). In a device's HBM between runs, so moving it costs no
  // simulated time. Null when the model has no state of that name; valid until the next run,
  // set_state() or reset_state().
  const Tensor* state(std::string_view name) const;
  // Replaces a state's value (exact dtype and shape): to start generation from another
  // session's KV cache, say.
  Status set_state(std::string_view name, const TensorView& value);
  // Every state back to the model's initial values.
  void reset_state();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace neuronc
