// DTPS: dynamic task partitioning and scheduling between the CPU class and the GPU class of
// workers (seed 001, 001_db3574ac63890b2d.txt, sections 1.3-1.4). Pure logic, no StarPU: the
// policies feed it each class's execution time per batch and read back the CPU-class share alpha.
// The sub-task weights of §1.1 (eqs. (3)-(5)) describe a program's tasks and are in
// codelets/subtask_weights.hpp; what a policy reads of them (task->flops, buffer bytes) and
// the dispatch of §1.2-1.3 case (1) (a batch of different weights cut at alpha, the light end
// to the CPU class) are in dtps_dispatch.hpp.
//
// Seed 001's equations (1)-(8) are images missing from the text we have. Where this file needs
// one it states the definition it chose, marked "chosen", next to the code (DESIGN section 6):
//   eq. (7)  m  = (T_c - T_g) / max(T_c, T_g)          delay coefficient (chosen), in [-1, 1]
//   eq. (8)  theta_0 = |m| * (share of the late class) first step of a round (chosen)
//
// The makespan guard extends seed 001. Seed 001 balances the classes' times (m -> 0), which
// assumes that each class runs as fast beside the other as alone. On a memory-bound node it
// does not: CPU passes and the GPU's DMA share host DRAM, and every LWT co-run measured on the
// GPU machine was slower than the GPU alone (DESIGN §6). So the controller also keeps, per job
// kind, the throughput (work / makespan) of its batches: once seed 001 has balanced a co-run
// (or after four), with no single-class batch measured, the faster class runs one batch alone
// (a probe); a co-run batch slower than the latest single-class batch sends the split to that
// class alone (the run's first co-run, when it follows a batch alone, is a warm-up that
// neither seed 001 nor the guard judges); a single-class batch slower than the latest co-run
// restores that co-run's split. It never settles on a split slower than one class alone, and
// follows a class that slows down. Between co-runs it keeps the fastest split: seed 001
// balances finish times, and where work comes in whole units (a unit 32 ms on a core) or the
// classes wait on each other's halos, the balanced split need not be the fastest; a co-run
// slower than the fastest split's latest batch goes back to that split and holds it while it
// stays as fast. A batch the program ends itself (fnndtps_end_batch) lasts until that call, so
// that the copies of its results home count: on a memory-bound node they are part of what
// co-running slows.
//
// Not thread-safe: the scheduler calls it under its own lock (one batch end at a time).
#pragma once

#include <cstddef>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace sched {

// ---------------------------------------------------------------------------------------------
// The dynamic ratio controller (seed 001 §1.3)

struct DtpsConfig {
  double tolerance = 0.1;      // |m| <= tolerance is balanced (seed 001 §1.3 case (1)); (0, 1)
  double min_share = 0.001;    // alpha kept in [min_share, 1 - min_share]; (0, 0.5)
  int max_iterations = 30;     // bound on the inner iterations of cases (2) and (3); >= 1
  double initial_alpha = 0.5;  // alpha of a job kind never seen; [0, 1], clamped as above
  // The classes share no resource (the nodes of an MPI job, no rank of one on a host of the
  // other's): one class alone runs no faster than at its co-run rate, so the makespan guard
  // tries it alone only where that rate could beat the co-run (within kGuardMargin).
  bool independent_classes = false;
};

// Throws std::invalid_argument naming the first bad field.
void validate(const DtpsConfig& c);

// What a job kind has learned. `alpha` is the learned CPU-class share; while a class has no
// workers the controller reports 0 or 1 but keeps this value.
struct DtpsState {
  double alpha = 0.5;  // CPU-class share; beta = 1 - alpha
  double theta = 0.0;  // step after the last round (0 before the first)
  int turn = 0;        // adjusting rounds so far (seed 001 eq. (8)'s Turn); 0: none yet
};

// What the makespan guard has measured in this run (not stored: throughputs depend on the
// problem's size). Throughputs are work per microsecond of a batch's makespan.
struct GuardState {
  double alone_rate = 0;    // the latest batch one class ran alone, 0 before any
  int alone_class = -1;     // ... its class: 0 CPU, 1 GPU
  double corun_rate = 0;    // the latest co-run batch, 0 before any
  double corun_alpha = -1;  // ... the share seed 001 chose after it
  int coruns = 0;           // co-run batches since the last single-class one
  bool warmed = false;      // a co-run batch has been seen (the first, after a batch alone, warms up)
  double best_rate = 0;     // the fastest co-run split's latest batch, 0 before any
  double best_alpha = -1;   // ... that split (the CPU-class share it realised)
  bool held = false;        // the split is held at best_alpha: a step off it was slower
};

// The guard's parameters.
constexpr double kAloneShare = 0.01;   // a batch whose smaller class did less than this ran alone
constexpr double kGuardMargin = 0.03;  // throughputs closer than this are the same
constexpr int kCorunsBeforeProbe = 2;     // co-run batches before a single class is tried alone,
constexpr int kMaxCorunsBeforeProbe = 4;  // ... once seed 001 balanced them, or after this many
constexpr double kSameSplit = 0.01;       // realised CPU shares closer than this are one split

enum class DtpsCase {
  Balanced,       // seed 001 §1.3 case (1): |m| <= tolerance, alpha kept
  GpuOverloaded,  // case (2): m < -tolerance, alpha raised first
  CpuOverloaded,  // case (3): m > tolerance, alpha lowered first
  Ignored,        // the batch's times are unusable (zero, negative, NaN, inf); see `reason`
  Fixed,          // a class has no workers: alpha fixed at 0 or 1
  Probe,          // the makespan guard: the faster class runs the next batch alone
  Guarded,        // the makespan guard: the split set to whichever of co-run and alone was faster
};
const char* to_string(DtpsCase c);

// One batch end, for logging.
struct DtpsUpdate {
  DtpsCase kind = DtpsCase::Ignored;
  double m_before = 0.0;      // eq. (7) from the measured times (NaN when Ignored or Fixed)
  double m_after = 0.0;       // eq. (7) predicted for the new alpha by the linear time model
  double alpha_before = 0.0;  // the share the batch ran with
  double alpha = 0.0;         // the share for the next batch
  double theta = 0.0;         // step after the round
  int turn = 0;               // adjusting rounds after this one
  int iterations = 0;         // inner iterations of this round (0 unless case (2) or (3))
  bool saturated = false;     // stopped at a bound of [min_share, 1 - min_share]
  bool warm_up = false;       // the run's first co-run, which neither seed 001 nor the guard judges
  std::string reason;         // why, when Ignored or Fixed; empty otherwise
};

// Seed 001 §1.3 eq. (7), chosen: m = (T_c - T_g) / max(T_c, T_g). NaN unless both times are
// finite and positive.
double delay_coefficient(double t_cpu, double t_gpu);

// Seed 001 §1.3 eq. (8), chosen: theta_0 = |m| * alpha when m > 0 (CPU late), |m| * (1 - alpha)
// when m < 0 (GPU late), 0 when m = 0 or NaN.
double initial_theta(double m, double alpha);

class DtpsController {
 public:
  // Throws std::invalid_argument on a bad config. The state's alpha is clamped into
  // [min_share, 1 - min_share]; a NaN alpha, a negative theta or turn are replaced by the
  // config's start values.
  explicit DtpsController(DtpsConfig config = {});
  DtpsController(DtpsConfig config, DtpsState state);

  // Which classes have workers (both, by default). With one class empty, alpha() is 0 (no CPU
  // workers) or 1 (no GPU workers) and end_batch() changes nothing.
  void set_classes(bool has_cpu, bool has_gpu);
  bool has_cpu() const { return has_cpu_; }
  bool has_gpu() const { return has_gpu_; }

  // The shares for the next batch.
  double alpha() const;
  double beta() const { return 1.0 - alpha(); }
  double theta() const { return state_.theta; }
  int turn() const { return state_.turn; }
  const DtpsState& state() const { return state_; }
  const DtpsConfig& config() const { return config_; }

  // A batch ended: the CPU class took t_cpu for its part, the GPU class t_gpu (the policies
  // pass each class's busiest worker's time running tasks; DESIGN §6 says finish times, which
  // a task graph's dependencies make equal: see dtps_feedback in policy.cpp). `realised_alpha` is the CPU-class share of the work the
  // batch actually ran (units are whole, so it can differ from alpha()); by default alpha().
  // Applies seed 001 §1.3's three cases; see dtps.cpp.
  // `throughput`: the batch's work over its makespan, for the makespan guard (NaN: no guard).
  DtpsUpdate end_batch(double t_cpu, double t_gpu,
                       std::optional<double> realised_alpha = std::nullopt,
                       double throughput = std::numeric_limits<double>::quiet_NaN());
  const GuardState& guard() const { return guard_; }

  // A new job kind: alpha back to the config's initial_alpha, theta 0, turn 0.
  void reset();

  // Whether seed 001 or the guard has set alpha from a measured batch (this run or a stored
  // one); until then a policy may start it where its own model puts the split (start_at).
  bool learned() const { return state_.turn > 0 || guard_.corun_alpha >= 0; }
  // Before learned(): alpha set to `a` (clamped), in place of the config's initial_alpha.
  void start_at(double a);

 private:
  double clamp_share(double a) const;
  DtpsUpdate balance(double t_cpu, double t_gpu, std::optional<double> realised_alpha);
  bool guard_batch(double t_cpu, double t_gpu, double realised, double throughput, DtpsUpdate& u);

  DtpsConfig config_;
  DtpsState state_;
  GuardState guard_;
  bool has_cpu_ = true;
  bool has_gpu_ = true;
};

// ---------------------------------------------------------------------------------------------
// Per-job-kind ratios, kept across runs (seed 001 §1.4: the ratio guides later jobs of the kind)

// A store file that cannot be read: one line naming the file, the line and the defect.
class DtpsStoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

constexpr int kDtpsStoreVersion = 1;

// Maps a job kind (the codelet's name) to its controller. File format, in <model_dir>/dtps.txt:
//
//   fnndtps-dtps 1
//   # comment lines start with '#'
//   kinds <n>
//   kind <name> <alpha> <theta> <turn>          n lines; name percent-encoded (%XX for bytes
//                                               outside '!'..'~' and for '%'), no duplicates
//   checksum fnv1a64 <16 hex digits>            over every byte before its line
//
// Numbers are written in the shortest form that reads back to the same double.
class DtpsStore {
 public:
  static constexpr const char* kFileName = "dtps.txt";

  explicit DtpsStore(DtpsConfig config = {});

  // The controller of a kind, created at the config's initial alpha when new.
  DtpsController& controller(const std::string& kind);
  // nullptr when the kind is unknown.
  const DtpsController* find(const std::string& kind) const;
  std::size_t size() const { return kinds_.size(); }
  const DtpsConfig& config() const { return config_; }
  std::vector<std::string> kinds() const;

  // Applies to every controller, present and future.
  void set_classes(bool has_cpu, bool has_gpu);

  // The file inside a model directory.
  static std::filesystem::path file_in(const std::filesystem::path& model_dir);

  // Writes <model_dir>/dtps.txt through a temporary file and a rename, so a reader never sees
  // half a file; creates model_dir when missing. Throws std::runtime_error when it cannot.
  void save(const std::filesystem::path& model_dir) const;

  // Replaces the store's kinds by those in <model_dir>/dtps.txt. Returns false, changing
  // nothing, when the file does not exist (a first run). Throws DtpsStoreError when the file
  // exists but is not a valid store (the store is then unchanged).
  bool load(const std::filesystem::path& model_dir);

  // The text form, and its parser (`source` names it in messages). For tests and tools.
  std::string to_text() const;
  static std::map<std::string, DtpsState> parse(const std::string& text,
                                                 const std::string& source);

 private:
  DtpsConfig config_;
  bool has_cpu_ = true;
  bool has_gpu_ = true;
  std::map<std::string, DtpsController> kinds_;
};

}  // namespace sched
