// The one place that says what an instruction costs (TRAINIUM.md §4.1, §5). The timing model
// and codegen both query it, so the compiler and the simulator never disagree. Costs are the
// published average initiation intervals (II) in cycles of the executing engine, plus the
// completion-latency and dependency assumptions of §5.2. Immutable after construction; safe to
// share between threads.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "device/isa.h"
#include "device/target.h"

namespace neuronc::device {

struct InstructionCost {
  double ii_cycles = 0;  // engine cycles until the engine may issue the next instruction
  double ii_ns = 0;
  double latency_ns = 0;    // from the end of the II until the result is visible (assumption)
  double tensor_flops = 0;  // 2*K*M*N for TensorE instructions (HFU numerator)
};

// Work one DMA transfer puts on each of the core's DMA engines (§5.3).
struct DmaWork {
  std::array<uint64_t, kMaxDmaEnginesPerCore> bytes{};
  std::array<uint32_t, kMaxDmaEnginesPerCore> descriptors{};
  // Bytes weighted by the transfer-size curve: an engine's data time is this over the full
  // (large-transfer) rate.
  std::array<double, kMaxDmaEnginesPerCore> rate_weighted_bytes{};
  uint64_t total_bytes = 0;  // bytes moved (max of source and destination element bytes)
  uint64_t hbm_read_bytes = 0;
  uint64_t hbm_write_bytes = 0;
  uint64_t sbuf_read_bytes = 0;
  uint64_t sbuf_write_bytes = 0;
  bool cast = false;
  int engines_used() const;
};

// What one inference moved and ran outside the device (docs/DEVICE_MODEL.md "End to end").
struct ExecutionTraffic {
  uint32_t calls = 0;             // device calls: runtime executions of a loaded program
  uint64_t bytes_in = 0;          // copied host -> device before the calls
  uint64_t bytes_out = 0;         // copied device -> host after them
  uint32_t program_switches = 0;  // calls that ran another program than the call before
  uint32_t multi_core_calls = 0;  // calls of a program run over several cores
};

// How the host issues calls: synchronous (each call waits for the previous one, as a plain
// `model(x)` in a loop) or asynchronous (the host prepares the next call while the device runs,
// vLLM-Neuron's async mode).
enum class IssueMode : uint8_t { synchronous, asynchronous };
const char* issue_mode_name(IssueMode m);

// The per-execution time of one inference, by term.
struct ExecutionOverhead {
  double call_ns = 0;        // program start + runtime call + framework, per call
  double transfer_ns = 0;    // PCIe copies of the inputs and outputs
  double switch_ns = 0;      // program switches
  double multi_core_ns = 0;  // the ranks' start (barrier, skew) of multi-core calls
  double total_ns() const { return call_ns + transfer_ns + switch_ns + multi_core_ns; }
};

// The runtime's collective algorithms (TRAINIUM.md §8.3, CC).
enum class CollectiveAlgorithm : uint8_t { mesh, rdh, kangaring, ring };
const char* collective_algorithm_name(CollectiveAlgorithm a);

// A model choice that no public source fixes, reported with every run (TRAINIUM.md §1).
struct Assumption {
  std::string name;
  double value = 0;
  std::string unit;
  std::string why;
};

class CostModel {
 public:
  explicit CostModel(const Target& target) : t_(target) {}  // copies the parameters

  const Target& target() const { return t_; }
  double clock_ghz(Engine e) const;
  double cycles_to_ns(Engine e, double cycles) const { return cycles / clock_ghz(e); }

  // Cost of `op` on engine `e` as a back-to-back instruction.
  InstructionCost cost(Engine e, const Operation& op) const;

  // Minimum start-to-start distance when an instruction reads what the previous instruction
  // on the same engine wrote (§5.2): ScalarE max(II, L_dep), VectorE/GpSimdE II + ~100 cycles.
  double dependent_issue_ns(Engine e, double prev_ii_cycles) const;

  // Latency from a semaphore increment to the waiting engine seeing it (assumption).
  double semaphore_latency_ns(Engine waiting) const;

  // DMA: the split of a transfer into descriptors per engine, and an engine's busy time for
  // `bytes` in `descriptors` at `bytes_per_ns`.
  DmaWork dma_work(const DmaCopy& dma) const;
  double dma_engine_ns(double rate_weighted_bytes, uint32_t descriptors, double bytes_per_ns) const;
  // An engine's full rate for `w` before HBM sharing (the DMABW rate, capped, slower when the
  // transfer casts), and the delay from the end of the trigger to the first byte.
  double dma_engine_rate(const DmaWork& w) const;
  double dma_start_delay_ns(const DmaCopy& dma) const;
  // GpSimd's time generating an indirect DMA's descriptors (software DGE), 0 for a direct DMA.
  double swdge_ns(const DmaCopy& dma, const DmaWork& w) const;

  // Rate of an engine that moves `contiguous_hbm_bytes` back to back in HBM, as a fraction of
  // the full rate (§5.3 curve).
  double dma_transfer_efficiency(uint64_t contiguous_hbm_bytes) const;

  // One collective over `ranks` ranks on `chips` chips, from trigger to completion, inside a
  // program (docs/DEVICE_MODEL.md "Collectives"); the first form puts the ranks on the fewest
  // chips.
  double collective_ns(const Collective& c, int cores) const;
  double collective_ns(const Collective& c, int ranks, int chips) const;
  // The algorithm the runtime picks for a collective of nccom-test size `bytes` (CC).
  CollectiveAlgorithm collective_algorithm(uint64_t bytes, int ranks, int chips) const;

  // The time one inference pays outside the device for `traffic`, issued as `mode`: what turns
  // device time into end-to-end time (device + host ops + this).
  ExecutionOverhead execution_overhead(const ExecutionTraffic& traffic, IssueMode mode) const;

  // Every assumption parameter in effect, with its value and why it was chosen.
  std::vector<Assumption> assumptions() const;

 private:
  Target t_;
};

// Free elements per partition an instruction processes (its "N").
uint64_t instruction_free_size(const Operation& op);

}  // namespace neuronc::device
