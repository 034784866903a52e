// The NeuronCore model: runs a device::Program on real data with the hardware's numerics
// (functional half) inside an event-driven timing model (timing half), and optionally checks
// for data races between engines. One Simulator owns the on-chip memories (SBUF, PSUM) of the
// cores it runs; HBM is an arena the caller owns and binds per run.
//
// Thread-safety: a Simulator is not thread-safe; use one per thread. Runs are deterministic:
// the same program, HBM contents and options give the same bytes and the same report,
// whatever the number of oneTBB workers.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "device/cost_model.h"
#include "device/isa.h"
#include "device/numerics.h"
#include "device/status.h"
#include "device/target.h"

namespace neuronc::device {

class ProcessGroup;

struct SimulatorOptions {
  bool functional = true;    // compute data; false = timing only (no memory is touched)
  bool check_races = false;  // race checker (tests turn it on)
  bool trace = false;        // record one TraceEvent per instruction and DMA transfer
  bool poison = false;       // fill SBUF/PSUM with NaN bytes (0xff) on reset (SIM debug mode)
  bool parallel = true;      // oneTBB: independent instructions, large ones inside, and the cores
  // Simulate DMA engines whose states are the same bits once (false: each on its own). The
  // results are the same bits either way (tests compare them).
  bool dma_engine_classes = true;
  Rounding rounding = Rounding::nearest_even;  // stores to narrow types
  uint64_t stochastic_seed = 0;
  double model_flops = 0;  // FLOPs of the source graph, for MFU (0: MFU not reported)
  // Functional runs split over processes (not owned; null: this process computes every core).
  ProcessGroup* processes = nullptr;
};

// The processes a functional run's cores are split over (`mpirun -np K neuronc ...`: the MPI
// ranks). Every process runs the same program on its own copy of HBM. Process r computes the
// instructions of the cores it owns (core c belongs to process c x size / cores) and times every
// core; at each collective and at the end of the run the processes swap the HBM bytes their
// cores wrote. So every process ends each run with the HBM bytes and the report one process
// computes, and fails with the error one process gives. The cores of different processes may
// not write overlapping HBM bytes between two collectives (cores that do are racing, or their
// writes cannot be told apart: the run fails saying so).
class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every process calls it at the same points, each with its own bytes; each gets all of them,
  // in rank order.
  virtual Result<std::vector<std::vector<std::byte>>> all_gather(
      std::span<const std::byte> mine) = 0;
};

// The process that computes core `core` of a `cores`-core program split over `processes`.
int owner_process(int core, int cores, int processes);

// One row of the timeline. `unit` is an engine name ("tensor", ...) or "dma.q<N>" or
// "collective"; times are in ns from the start of the run.
struct TraceEvent {
  uint16_t core = 0;
  std::string unit;
  double start_ns = 0;
  double end_ns = 0;
  Opcode opcode = Opcode::nop;
  Engine engine = Engine::sync;  // stream holding the instruction
  uint32_t instruction_index = 0;
  uint32_t debug_id = kNoDebugId;
  uint64_t bytes = 0;  // DMA transfers
};

struct EngineStats {
  double busy_ns = 0;         // sum of initiation intervals (union of [start, start + II))
  double active_percent = 0;  // busy / total_time (neuron-profile `<engine>_active_time_percent`)
  uint64_t instructions = 0;
};

struct CoreStats {
  std::array<EngineStats, kNumEngines> engines;
  double dma_active_ns = 0;  // union of intervals in which any DMA engine moves data
  double dma_active_percent = 0;
  uint64_t dma_transfers = 0;
  uint64_t dma_bytes = 0;
  double tensor_flops = 0;
};

struct RunReport {
  std::string_view target;
  double total_time_ns = 0;  // first issue to last completion
  std::vector<CoreStats> cores;
  uint64_t hbm_read_bytes = 0;
  uint64_t hbm_write_bytes = 0;
  uint64_t sb_read_bytes = 0;   // DMA reads from SBUF
  uint64_t sb_write_bytes = 0;  // DMA writes into SBUF
  double average_dma_bytes = 0;
  double hfu_percent = 0;  // TensorE FLOPs / (peak x total time x cores)
  double mfu_percent = 0;  // options.model_flops / (peak x total time x cores); 0 if unknown
  double mbu_percent = 0;  // HBM bytes / (HBM share of the cores x total time)
  double mm_arithmetic_intensity = 0;  // TensorE FLOPs / HBM bytes
  uint64_t instructions = 0;
  std::vector<Assumption> assumptions;
  std::vector<TraceEvent> trace;
};

// The timing model's view of one program on one target: every instruction's cost, the on-chip
// bytes it reads and writes, and each DMA's split over the core's DMA engines. These depend on
// the program and the target alone, so a program that runs many times (a loader Session, `bench
// --timing-only`) works them out once and hands them to every run; Simulator::run works them
// out itself when given none. Made from a program verify_program accepts; it refers to the
// program, which must outlive it unchanged. Its tables are fixed once made, and the dependency
// graphs functional runs add (log_graphs) are kept under a lock: safe to share between threads.
class ProgramTiming {
 public:
  ProgramTiming(const CostModel& cost, const Program& program);
  // The timing of the `copies`-core program replicate_cores(one_core, copies, core_stride)
  // (replicate.h) makes, without making it: every core runs core 0's instructions and tables
  // (the costs never depend on an HBM address). Such a timing is for timing-only runs without
  // race checks (Simulator::run refuses others: they need each copy's own addresses). Throws
  // std::invalid_argument when `one_core` does not have exactly one core; the replication itself
  // is checked when a run verifies the program.
  ProgramTiming(const CostModel& cost, const Program& one_core, uint32_t copies,
                uint64_t core_stride);
  ~ProgramTiming();
  ProgramTiming(const ProgramTiming&) = delete;
  ProgramTiming& operator=(const ProgramTiming&) = delete;

  const Program& program() const { return program_; }
  std::string_view target() const { return target_; }
  // For the replicating constructor: its copies (0 otherwise) and their stride.
  uint32_t copies() const { return copies_.cores; }
  uint64_t copy_stride() const { return copies_.stride; }

  struct Tables;  // the simulator's (simulator.cpp)
  const Tables& tables() const { return *tables_; }
  // The dependency graphs of the logs of deferred effects a functional run applies (every run
  // of the program applies the same logs), made by the first run that applies each; internally
  // synchronised (simulator.cpp).
  struct LogGraphs;
  LogGraphs& log_graphs() const { return *log_graphs_; }

 private:
  struct Copies {
    uint32_t cores = 0;
    uint64_t stride = 0;
  };
  ProgramTiming(const CostModel& cost, const Program& program, Copies copies);

  const Program& program_;
  std::string_view target_;
  Copies copies_;
  std::unique_ptr<const Tables> tables_;
  std::unique_ptr<LogGraphs> log_graphs_;
};

class Simulator {
 public:
  explicit Simulator(const Target& target, SimulatorOptions options = {});
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  const Target& target() const { return target_; }
  const CostModel& cost_model() const { return cost_; }
  SimulatorOptions& options() { return options_; }

  // (Re)allocates SBUF/PSUM for `cores` cores, zero-filled (or poisoned); a timing-only
  // simulator (options().functional false) allocates none. run() calls it when the core count
  // changes or a functional run finds none; memory otherwise persists between runs.
  void reset(int cores);

  // Verifies `program` against the target, then executes it. `hbm` must hold at least
  // program.hbm_size bytes (it may be empty when options.functional is false). With
  // ProgramCheck::verified the caller vouches that verify_program already passed on this
  // program and target (artifact::read_artifact verifies every program it reads), and it is
  // not checked again: on a program that would fail, the behaviour is undefined.
  // `timing`, when given, must have been made from `program` (the same object) for this
  // simulator's target; else the run makes its own. A timing made over copies of core 0 runs as
  // run_replicated does (`hbm` unused). With options().parallel, a functional run
  // applies the effects of instructions that share no byte side by side (the bytes are those a
  // serial run gives). A run that fails reports the first failing instruction in completion
  // order, as a serial run does, and leaves memory unspecified: effects independent of the
  // failing one may or may not have been applied.
  enum class ProgramCheck { verify, verified };
  Result<RunReport> run(const Program& program, std::span<std::byte> hbm,
                        ProgramCheck check = ProgramCheck::verify,
                        const ProgramTiming* timing = nullptr);

  // The timing-only run of replicate_cores(one_core, copies, core_stride)'s program (replicate.h)
  // without making the copies: the same report, trace included, as run() of that program gives,
  // with one copy of the instructions and of their table of costs rather than N (codegen times a
  // tensor-parallel candidate so). The verification is verify_replicated_program's.
  // invalid_argument when the simulator is functional or checks races (those need each copy's own
  // addresses) or `one_core` has more than one core.
  Result<RunReport> run_replicated(const Program& one_core, uint32_t copies, uint64_t core_stride,
                                   ProgramCheck check = ProgramCheck::verify);

  // Partition `partition` of core `core`'s on-chip memory (its sbuf_partition_bytes or
  // psum_partition_bytes). Valid after reset()/run(); a partition throws std::out_of_range
  // past the target's.
  std::span<std::byte> sbuf(int core, int partition);
  std::span<std::byte> psum(int core, int partition);

 private:
  struct Memories;
  Target target_;
  SimulatorOptions options_;
  CostModel cost_;
  std::unique_ptr<Memories> memories_;

  // invalid_argument when this simulator's runs need each copy's own addresses.
  Status replicated_run_allowed() const;
  Result<RunReport> run_replicated(const ProgramTiming& timing, ProgramCheck check);
};

}  // namespace neuronc::device
