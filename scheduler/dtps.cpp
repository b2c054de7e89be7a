// DTPS controller and the per-kind ratio store (seed 001 §1.3-1.4; the sub-task weights of
// §1.1-1.2 are in codelets/subtask_weights.cpp). Equations (1)-(8) of seed 001 are images
// missing from our copy of the paper; the definitions marked "chosen" below are ours, built
// from the surrounding text, and the reasons are given beside each.
#include "scheduler/dtps.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string_view>
#include <system_error>
#include <utility>

#include "fnn/text.hpp"

namespace sched {

namespace {

using fnn::text::fnv1a64;
using fnn::text::hex16;
using fnn::text::number;
using fnn::text::shown;

}  // namespace

// ---------------------------------------------------------------------------------------------
// The controller

void validate(const DtpsConfig& c) {
  if (!(c.tolerance > 0.0 && c.tolerance < 1.0))
    throw std::invalid_argument("dtps: tolerance must be in (0, 1), got " +
                                std::to_string(c.tolerance));
  if (!(c.min_share > 0.0 && c.min_share < 0.5))
    throw std::invalid_argument("dtps: min_share must be in (0, 0.5), got " +
                                std::to_string(c.min_share));
  if (c.max_iterations < 1)
    throw std::invalid_argument("dtps: max_iterations must be >= 1, got " +
                                std::to_string(c.max_iterations));
  if (!(c.initial_alpha >= 0.0 && c.initial_alpha <= 1.0))
    throw std::invalid_argument("dtps: initial_alpha must be in [0, 1], got " +
                                std::to_string(c.initial_alpha));
}

const char* to_string(DtpsCase c) {
  switch (c) {
    case DtpsCase::Balanced: return "balanced";
    case DtpsCase::GpuOverloaded: return "gpu-overloaded";
    case DtpsCase::CpuOverloaded: return "cpu-overloaded";
    case DtpsCase::Ignored: return "ignored";
    case DtpsCase::Fixed: return "fixed";
    case DtpsCase::Probe: return "guard-probe";
    case DtpsCase::Guarded: return "guarded";
  }
  return "?";
}

// Seed 001 §1.3 eq. (7), chosen: m = (T_c - T_g) / max(T_c, T_g).
// The paper calls m a delay coefficient, reads m < -0.1 as "GPU overloaded" and m > 0.1 as
// "CPU overloaded", and uses one threshold 0.1 for both sides. So m has the sign of T_c - T_g
// and must be scale-free and symmetric: dividing by the later finish time gives the idle
// fraction of the batch's span for the class that finished first, in [-1, 1], with the same
// meaning on both sides (|m| = 0.1: one class idled for the last 10% of the batch).
double delay_coefficient(double t_cpu, double t_gpu) {
  if (!(std::isfinite(t_cpu) && std::isfinite(t_gpu) && t_cpu > 0.0 && t_gpu > 0.0))
    return std::numeric_limits<double>::quiet_NaN();
  return (t_cpu - t_gpu) / std::max(t_cpu, t_gpu);
}

// Seed 001 §1.3 eq. (8), chosen: the first step of a round is theta_0 = |m| * s, where s is the
// share of the late class (alpha when m > 0, beta when m < 0).
// Why: the late class spent the fraction |m| of its time after the other class had finished;
// handing that fraction of its share over is exactly right when the other class is infinitely
// fast, and too much otherwise. Under the linear time model the balancing move is
// alpha*beta*|m| / (1 - s*|m|) <= s*|m| (e.g. m > 0: 1 - alpha*m >= beta), so theta_0 never
// falls short: the halving steps (total reach 2*theta_0) always contain the balance point and the
// search converges within one round, whatever the speed ratio, and the first step never pushes
// the late class's share below 0. A fixed theta_0 would need many rounds for a 1:50 speed ratio
// or oscillate for 1:1.
// Turn (eq. (8)'s second argument): theta is re-derived from the measured m at the start of
// every adjusting round, turn 0 included, rather than carried over halved from the last round:
// a carried, shrunken step could not follow a worker that slows down later in the run. Turn
// counts the rounds per job kind and restarts at 0 for a new kind (DtpsController::reset).
double initial_theta(double m, double alpha) {
  if (!(std::isfinite(m) && std::isfinite(alpha))) return 0.0;
  const double a = std::clamp(alpha, 0.0, 1.0);
  if (m > 0.0) return m * a;
  if (m < 0.0) return -m * (1.0 - a);
  return 0.0;
}

DtpsController::DtpsController(DtpsConfig config) : DtpsController(config, DtpsState{}) {
  state_.alpha = clamp_share(config_.initial_alpha);
}

DtpsController::DtpsController(DtpsConfig config, DtpsState state)
    : config_(config), state_(state) {
  validate(config_);
  if (std::isnan(state_.alpha)) state_.alpha = config_.initial_alpha;
  state_.alpha = clamp_share(state_.alpha);
  if (!(state_.theta >= 0.0) || !std::isfinite(state_.theta)) state_.theta = 0.0;
  if (state_.turn < 0) state_.turn = 0;
}

double DtpsController::clamp_share(double a) const {
  return std::clamp(a, config_.min_share, 1.0 - config_.min_share);
}

void DtpsController::set_classes(bool has_cpu, bool has_gpu) {
  has_cpu_ = has_cpu;
  has_gpu_ = has_gpu;
}

double DtpsController::alpha() const {
  if (!has_cpu_ && has_gpu_) return 0.0;
  if (has_cpu_ && !has_gpu_) return 1.0;
  return state_.alpha;
}

void DtpsController::reset() {
  state_ = DtpsState{};
  state_.alpha = clamp_share(config_.initial_alpha);
}

// Seed 001 §1.3, at the end of each batch:
//   case (1) |m| <= 0.1: keep alpha, beta for the next batch;
//   case (2) m < -0.1 (GPU late): alpha += theta, beta -= theta, theta /= 2, re-estimate m,
//            until m >= -0.1; on overshooting to m > 0.1, alpha -= theta, beta += theta,
//            theta /= 2 until m is in range;
//   case (3) m > 0.1 (CPU late): the same, starting with alpha -= theta.
// "Re-estimate m" needs the times a ratio would give without running it: the linear time
// model keeps each class's measured rate, T_c' = T_c * alpha'/alpha, T_g' = T_g * beta'/beta
// (alpha, beta: the shares the batch ran with). We read the paper's loop as "each step goes
// the way m's sign says, and halves theta", which is the paper's two phases and continues the
// same way should the second phase overshoot too; with theta_0 from eq. (8) it is a bisection
// that converges (see initial_theta). The loop is bounded by max_iterations and by the shares'
// range [min_share, 1 - min_share]; it stops early when a bound blocks the step (saturated).
DtpsUpdate DtpsController::end_batch(double t_cpu, double t_gpu, std::optional<double> realised_alpha,
                                     double throughput) {
  const double ran_with = state_.alpha;
  const double realised = realised_alpha ? *realised_alpha : ran_with;
  GuardState& g = guard_;
  const bool corun = realised > kAloneShare && realised < 1.0 - kAloneShare;
  if (has_cpu_ && has_gpu_ && std::isfinite(throughput) && throughput > 0 && corun && !g.warmed &&
      g.alone_class >= 0) {
    // The run's first co-run after batches alone is a warm-up: the other class's buffers are
    // allocated in it (pinned host memory, milliseconds a strip) and its caches are cold.
    // Neither seed 001 nor the guard judges it; the guard keeps it as the latest co-run.
    g.warmed = true;
    DtpsUpdate u;
    u.kind = DtpsCase::Ignored;
    u.reason = "the first co-run after a batch alone is a warm-up";
    u.warm_up = true;
    u.m_before = u.m_after = delay_coefficient(t_cpu, t_gpu);
    u.alpha_before = realised;
    u.alpha = alpha();
    u.theta = state_.theta;
    u.turn = state_.turn;
    ++g.coruns;
    g.corun_rate = throughput, g.corun_alpha = state_.alpha;
    return u;
  }
  if (corun) g.warmed = true;
  DtpsUpdate u = balance(t_cpu, t_gpu, realised_alpha);
  if (u.kind != DtpsCase::Fixed && std::isfinite(throughput) && throughput > 0)
    guard_batch(t_cpu, t_gpu, realised_alpha ? *realised_alpha : ran_with, throughput, u);
  return u;
}

DtpsUpdate DtpsController::balance(double t_cpu, double t_gpu, std::optional<double> realised_alpha) {
  DtpsUpdate u;
  u.alpha_before = alpha();
  u.alpha = alpha();
  u.theta = state_.theta;
  u.turn = state_.turn;
  u.m_before = std::numeric_limits<double>::quiet_NaN();
  u.m_after = u.m_before;

  if (!has_cpu_ || !has_gpu_) {
    u.kind = DtpsCase::Fixed;
    u.reason = !has_cpu_ && !has_gpu_ ? "no workers in either class"
               : !has_cpu_            ? "no CPU-class workers: alpha fixed at 0"
                                      : "no GPU-class workers: alpha fixed at 1";
    return u;
  }

  const double a0 = realised_alpha ? *realised_alpha : state_.alpha;
  u.alpha_before = a0;
  u.kind = DtpsCase::Ignored;
  if (!(a0 > 0.0 && a0 < 1.0)) {
    u.reason = "realised CPU share " + std::to_string(a0) + " is outside (0, 1)";
    return u;
  }
  if (!(std::isfinite(t_cpu) && t_cpu > 0.0)) {
    u.reason = "CPU-class time " + std::to_string(t_cpu) + " is not a positive finite number";
    return u;
  }
  if (!(std::isfinite(t_gpu) && t_gpu > 0.0)) {
    u.reason = "GPU-class time " + std::to_string(t_gpu) + " is not a positive finite number";
    return u;
  }

  const double m0 = delay_coefficient(t_cpu, t_gpu);
  const auto predict = [&](double a) {
    return delay_coefficient(t_cpu * (a / a0), t_gpu * ((1.0 - a) / (1.0 - a0)));
  };
  u.m_before = m0;
  const double tol = config_.tolerance;

  if (std::fabs(m0) <= tol) {  // case (1): the split that ran is the one to keep
    u.kind = DtpsCase::Balanced;
    state_.alpha = a0;
    u.alpha = a0;
    u.m_after = m0;
    return u;
  }

  u.kind = m0 < 0.0 ? DtpsCase::GpuOverloaded : DtpsCase::CpuOverloaded;  // cases (2), (3)
  double theta = initial_theta(m0, a0);  // eq. (8)
  double a = a0;
  double m = m0;
  const double lo = config_.min_share;
  const double hi = 1.0 - config_.min_share;
  while (std::fabs(m) > tol && u.iterations < config_.max_iterations) {
    const double next = std::clamp(m < 0.0 ? a + theta : a - theta, lo, hi);
    theta /= 2.0;
    ++u.iterations;
    if (next == a) break;  // blocked by a bound (or theta below the spacing of doubles)
    a = next;
    m = predict(a);
  }
  u.saturated = std::fabs(m) > tol && ((m < 0.0 && a >= hi) || (m > 0.0 && a <= lo));

  state_.alpha = a;
  state_.theta = theta;
  ++state_.turn;
  u.alpha = a;
  u.theta = theta;
  u.turn = state_.turn;
  u.m_after = m;
  return u;
}

void DtpsController::start_at(double a) {
  if (!learned() && std::isfinite(a)) state_.alpha = clamp_share(a);
}

// The makespan guard (see the header), after seed 001's step: whether it overrode the share
// that step chose. `realised`: the CPU-class share of the work the batch ran. A co-run's split
// is remembered as seed 001 corrected it.
bool DtpsController::guard_batch(double t_cpu, double t_gpu, double realised, double throughput, DtpsUpdate& u) {
  const double lo = config_.min_share, hi = 1.0 - config_.min_share;
  const auto set = [&](double a, DtpsCase kind, std::string why) {
    state_.alpha = clamp_share(a);
    u.alpha = state_.alpha;
    u.kind = kind;
    u.reason = std::move(why);
    return true;
  };
  GuardState& g = guard_;
  const bool alone = realised <= kAloneShare || realised >= 1.0 - kAloneShare;
  if (alone) {
    g.alone_rate = throughput;
    g.alone_class = realised <= kAloneShare ? 1 : 0;
    g.coruns = 0;
    if (g.corun_alpha < 0) return false;  // nothing to compare with yet: seed 001 decides
    if (g.corun_rate > throughput * (1.0 + kGuardMargin))
      return set(g.corun_alpha, DtpsCase::Guarded, "one class alone was slower than the latest co-run");
    return set(g.alone_class == 1 ? lo : hi, DtpsCase::Guarded, "one class alone is at least as fast as co-running");
  }
  ++g.coruns;
  g.corun_rate = throughput, g.corun_alpha = state_.alpha;  // the latest: the node may have changed
  if (g.alone_class >= 0) {
    if (throughput < g.alone_rate * (1.0 - kGuardMargin))
      return set(g.alone_class == 1 ? lo : hi, DtpsCase::Guarded, "co-running was slower than one class alone");
    // The fastest co-run split: a faster split replaces it, a batch at it updates its rate (the
    // node may have changed), a slower split goes back to it.
    const bool at_best = g.best_alpha >= 0 && std::fabs(realised - g.best_alpha) <= kSameSplit;
    if (g.best_alpha < 0 || at_best || throughput > g.best_rate) {
      const bool hold = g.held && at_best && throughput >= g.best_rate * (1.0 - kGuardMargin);
      g.best_rate = throughput, g.best_alpha = realised, g.held = hold;
      if (!hold) return false;
      g.corun_alpha = realised;
      return set(realised, DtpsCase::Guarded, "held at the fastest co-run's split");
    }
    if (throughput >= g.best_rate * (1.0 - kGuardMargin)) return false;
    g.held = true, g.corun_alpha = g.best_alpha;
    return set(g.best_alpha, DtpsCase::Guarded, "slower than the fastest co-run: back to its split");
  }
  // Probe once seed 001 has balanced the co-run (its best split is then known), or after
  // kMaxCorunsBeforeProbe co-runs whatever.
  const bool settled = u.kind == DtpsCase::Balanced || g.coruns >= kMaxCorunsBeforeProbe;
  if (g.coruns < kCorunsBeforeProbe || !settled || !(t_cpu > 0 && t_gpu > 0)) return false;
  // The faster class: the more work per unit of its busy time.
  const bool gpu_faster = (1.0 - realised) / t_gpu >= realised / t_cpu;
  // Independent classes: alone, the faster one would take its time over its share.
  const double alone_ms = gpu_faster ? t_gpu / (1.0 - realised) : t_cpu / realised;
  if (config_.independent_classes && alone_ms > std::fmax(t_cpu, t_gpu) * (1.0 + kGuardMargin)) return false;
  return set(gpu_faster ? lo : hi, DtpsCase::Probe, "no single-class batch measured yet: the faster class alone");
}

// ---------------------------------------------------------------------------------------------
// The store

namespace {

constexpr std::size_t kMaxFileBytes = 1 << 22;  // 4 MiB: tens of thousands of kinds
constexpr const char* kMagic = "fnndtps-dtps";





// Kind names are codelet names: any bytes. Printable ASCII other than ' ' and '%' stays,
// everything else becomes %XX, so a name is one token.
std::string encode_name(const std::string& name) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : name) {
    if (c > 0x20 && c < 0x7f && c != '%') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

bool decode_name(std::string_view tok, std::string& out) {
  out.clear();
  for (std::size_t i = 0; i < tok.size(); ++i) {
    if (tok[i] != '%') {
      out += tok[i];
      continue;
    }
    if (i + 2 >= tok.size()) return false;  // '%' needs two hex digits after it
    const int hi = hex_digit(tok[i + 1]);
    const int lo = hex_digit(tok[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return !out.empty();
}

using Line = fnn::text::Line;
using Parser = fnn::text::Parser<DtpsStoreError>;

}  // namespace

DtpsStore::DtpsStore(DtpsConfig config) : config_(config) { validate(config_); }

DtpsController& DtpsStore::controller(const std::string& kind) {
  auto it = kinds_.find(kind);
  if (it == kinds_.end()) {
    it = kinds_.emplace(kind, DtpsController(config_)).first;
    it->second.set_classes(has_cpu_, has_gpu_);
  }
  return it->second;
}

const DtpsController* DtpsStore::find(const std::string& kind) const {
  const auto it = kinds_.find(kind);
  return it == kinds_.end() ? nullptr : &it->second;
}

std::vector<std::string> DtpsStore::kinds() const {
  std::vector<std::string> out;
  out.reserve(kinds_.size());
  for (const auto& kv : kinds_) out.push_back(kv.first);
  return out;
}

void DtpsStore::set_classes(bool has_cpu, bool has_gpu) {
  has_cpu_ = has_cpu;
  has_gpu_ = has_gpu;
  for (auto& kv : kinds_) kv.second.set_classes(has_cpu, has_gpu);
}

std::filesystem::path DtpsStore::file_in(const std::filesystem::path& model_dir) {
  return model_dir / kFileName;
}

std::string DtpsStore::to_text() const {
  std::ostringstream s;
  s << kMagic << ' ' << kDtpsStoreVersion << "\n";
  s << "# DTPS ratios per job kind (seed 001 §1.3): kind <name> <alpha> <theta> <turn>\n";
  s << "kinds " << kinds_.size() << "\n";
  for (const auto& kv : kinds_) {
    const DtpsState& st = kv.second.state();
    s << "kind " << encode_name(kv.first) << ' ' << number(st.alpha) << ' ' << number(st.theta)
      << ' ' << st.turn << "\n";
  }
  const std::string body = s.str();
  return body + "checksum fnv1a64 " + hex16(fnv1a64(body)) + "\n";
}

std::map<std::string, DtpsState> DtpsStore::parse(const std::string& text,
                                                  const std::string& source) {
  if (text.empty()) throw DtpsStoreError("dtps store " + source + ": empty file");
  if (text.size() > kMaxFileBytes)
    throw DtpsStoreError("dtps store " + source + ": larger than " +
                         std::to_string(kMaxFileBytes) + " bytes");
  Parser p(text, "dtps store " + source);
  const std::string header = "'" + std::string(kMagic) + " " + std::to_string(kDtpsStoreVersion) +
                             "'";
  Line l = p.next(header);
  if (l.tokens[0] != kMagic || l.tokens.size() != 2)
    p.fail(l.number, "not a DTPS store (the first line should be " + header + ")");
  const std::size_t version = p.count(l, l.tokens[1], "version");
  if (version != static_cast<std::size_t>(kDtpsStoreVersion))
    p.fail(l.number, "version " + shown(l.tokens[1]) + " is not supported (this build reads " +
                         std::to_string(kDtpsStoreVersion) + "); delete the file to start over");

  l = p.next("'kinds <n>'");
  p.expect(l, "kinds", 1, "'kinds <n>'", "fields");
  const std::size_t n = p.count(l, l.tokens[1], "kind count");
  if (n > kMaxFileBytes / 16) p.fail(l.number, "kind count " + shown(l.tokens[1]) + " is too large");

  std::map<std::string, DtpsState> out;
  const std::string shape = "'kind <name> <alpha> <theta> <turn>'";
  for (std::size_t k = 0; k < n; ++k) {
    l = p.next(shape + " (" + std::to_string(k + 1) + " of " + std::to_string(n) + ")");
    p.expect(l, "kind", 4, shape, "fields");
    std::string name;
    if (!decode_name(l.tokens[1], name))
      p.fail(l.number, "kind name '" + shown(l.tokens[1]) + "' is not valid %-encoding");
    DtpsState st;
    st.alpha = p.real(l, l.tokens[2], "alpha");
    if (!(st.alpha >= 0.0 && st.alpha <= 1.0))
      p.fail(l.number, "alpha " + shown(l.tokens[2]) + " is outside [0, 1]");
    st.theta = p.real(l, l.tokens[3], "theta");
    if (!(st.theta >= 0.0 && st.theta <= 1.0))
      p.fail(l.number, "theta " + shown(l.tokens[3]) + " is outside [0, 1]");
    const std::size_t turn = p.count(l, l.tokens[4], "turn");
    if (turn > static_cast<std::size_t>(std::numeric_limits<int>::max()))
      p.fail(l.number, "turn " + shown(l.tokens[4]) + " is too large");
    st.turn = static_cast<int>(turn);
    if (!out.emplace(name, st).second)
      p.fail(l.number, "kind '" + shown(l.tokens[1]) + "' appears twice");
  }

  l = p.next("'checksum fnv1a64 <hex>'");
  p.expect(l, "checksum", 2, "'checksum fnv1a64 <hex>'", "fields");
  if (l.tokens[1] != "fnv1a64") p.fail(l.number, "unknown checksum '" + shown(l.tokens[1]) + "'");
  if (l.tokens[2] != hex16(fnv1a64(std::string_view(text).substr(0, l.offset))))
    p.fail(l.number, "checksum mismatch: the file is corrupt or was edited by hand");
  if (!p.at_end()) p.fail(p.line(), "unexpected content after the checksum line");
  return out;
}

void DtpsStore::save(const std::filesystem::path& model_dir) const {
  std::error_code ec;
  std::filesystem::create_directories(model_dir, ec);
  if (ec) throw std::runtime_error("cannot create " + model_dir.string() + ": " + ec.message());
  const std::string path = file_in(model_dir).string();
  fnn::text::replace_file(path, to_text());
}

bool DtpsStore::load(const std::filesystem::path& model_dir) {
  const std::filesystem::path file = file_in(model_dir);
  const std::string path = file.string();
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) {
    if (ec) throw DtpsStoreError("dtps store " + path + ": " + ec.message());
    return false;
  }
  if (std::filesystem::is_directory(file, ec))
    throw DtpsStoreError("dtps store " + path + ": is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DtpsStoreError("dtps store " + path + ": cannot open: " + std::strerror(errno));
  const std::string text = fnn::text::read_at_most(in, kMaxFileBytes);
  if (in.bad()) throw DtpsStoreError("dtps store " + path + ": read error");
  const std::map<std::string, DtpsState> states = parse(text, path);

  std::map<std::string, DtpsController> fresh;
  for (const auto& kv : states) {
    auto it = fresh.emplace(kv.first, DtpsController(config_, kv.second)).first;
    it->second.set_classes(has_cpu_, has_gpu_);
  }
  kinds_ = std::move(fresh);
  return true;
}

}  // namespace sched
