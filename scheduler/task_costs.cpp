#include "scheduler/task_costs.hpp"

#include <algorithm>
#include <cmath>

#include "fnn/text.hpp"

namespace sched {

namespace txt = fnn::text;

ArchPrior ArchPrior::from_peak(double gflops, bool gpu, bool flops_work) {
  const double f = gflops > 0 && std::isfinite(gflops) ? gflops : 1.0;  // unknown: a slow core
  ArchPrior p;
  p.fixed_us = gpu ? kPriorFixedGpuUs : kPriorFixedCpuUs;
  p.throughput = flops_work ? f * 1e3 * kPriorFlopEfficiency : f * kPriorBytesPerGflop;
  return p;
}

const char* to_string(CostSource s) {
  switch (s) {
    case CostSource::Size: return "size";
    case CostSource::Fit: return "fit";
    case CostSource::Prior: return "prior";
  }
  return "?";
}

ArchPrior fit_affine(const std::vector<TaskCosts::Size>& points, const ArchPrior& prior) {
  if (points.empty()) return prior;
  // us = f + s * work, s = 1 / throughput: least squares in relative error, each timing worth
  // kFitNoise, with the prior's f0 and s0 as two more observations worth kPriorSpread.
  const double f0 = std::max(prior.fixed_us, 1e-3), s0 = 1 / prior.throughput;
  const double lambda = (kFitNoise / kPriorSpread) * (kFitNoise / kPriorSpread);
  double a11 = lambda / (f0 * f0), a12 = 0, a22 = lambda / (s0 * s0);
  double b1 = lambda / f0, b2 = lambda / s0, min_us = HUGE_VAL;
  for (const auto& p : points) {
    const double u = 1 / p.us, x = p.work * u;  // the row (1, work) / us, against 1
    a11 += u * u, a12 += u * x, a22 += x * x, b1 += u, b2 += x;
    min_us = std::min(min_us, p.us);
  }
  const double det = a11 * a22 - a12 * a12;
  double f = (b1 * a22 - a12 * b2) / det, s = (a11 * b2 - a12 * b1) / det;
  if (!(f >= 0 && f <= min_us && s > 0)) {
    // Outside its range (times that do not grow with work): the fixed cost clamped, the
    // slope refitted for it; positive, since every timing is at least f.
    f = std::clamp(std::isfinite(f) ? f : prior.fixed_us, 0.0, min_us);
    s = (b2 - a12 * f) / a22;
  }
  return {f, 1 / s};
}

TaskCosts::TaskCosts(std::vector<std::string> archs) {
  for (auto& n : archs) archs_.push_back(Arch{std::move(n), {}, {}, 0, 1});
}

void TaskCosts::set_prior(std::size_t arch, const ArchPrior& p, bool gpu) {
  Arch& a = archs_.at(arch);
  a.prior = p;
  a.skip_next = gpu;
  refit(a);
}

bool TaskCosts::size_us(std::size_t arch, std::uint32_t footprint, double* us) const {
  const auto& sizes = archs_[arch].sizes;
  const auto it = sizes.find(footprint);
  if (it == sizes.end()) return false;
  *us = it->second.us;
  return true;
}

CostEstimate TaskCosts::fitted_us(std::size_t arch, double work) const {
  const Arch& a = archs_[arch];
  return {fixed_us(arch) + work / throughput(arch), a.sizes.empty() ? CostSource::Prior : CostSource::Fit};
}

double TaskCosts::throughput(std::size_t arch) const {
  const Arch& a = archs_[arch];
  return a.sizes.empty() ? a.prior.throughput : a.throughput;
}

double TaskCosts::rate(std::size_t arch) const {
  const Arch& a = archs_[arch];
  double work = 0, us = 0;
  for (const auto& kv : a.sizes) work += kv.second.work, us += kv.second.us;
  return us > 0 ? work / us : a.prior.throughput;
}

double TaskCosts::fixed_us(std::size_t arch) const {
  const Arch& a = archs_[arch];
  return a.sizes.empty() ? a.prior.fixed_us : a.fixed_us;
}

void TaskCosts::record(std::size_t arch, std::uint32_t footprint, double work, double us) {
  if (!(us > 0) || !std::isfinite(us) || !(work > 0) || !std::isfinite(work)) return;
  Arch& a = archs_.at(arch);
  if (a.skip_next) {
    a.skip_next = false;
    return;
  }
  Size& s = a.sizes[footprint];
  s.work = work;
  ++s.runs;
  s.us = s.runs == 1 ? us : s.runs <= kWarmRuns ? std::min(s.us, us) : (1 - kEwma) * s.us + kEwma * std::min(us, kMaxStep * s.us);
  refit(a);
}

Observed observe(double dt, double described_rel, double rel, double arch_us, bool shared, double weight) {
  Observed o;
  o.record_us = dt / described_rel;
  o.rel = shared && arch_us > 0 ? (1 - weight) * rel + weight * dt / arch_us : rel;
  return o;
}

void TaskCosts::refit(Arch& a) {
  if (a.sizes.empty()) return;
  std::vector<Size> points;
  points.reserve(a.sizes.size());
  for (const auto& kv : a.sizes) points.push_back(kv.second);
  const ArchPrior f = fit_affine(points, a.prior);
  a.fixed_us = f.fixed_us, a.throughput = f.throughput;
}

// ------------------------------------------------------------------ the file
namespace {
constexpr const char* kMagic = "fnndtps-task-costs";
struct CostsError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};
}  // namespace

std::string TaskCosts::to_text(const std::string& codelet) const {
  std::string t = std::string(kMagic) + " 1\ncodelet " + codelet + "\n";
  t += "# size <arch> <footprint> <work> <mean us> <runs>\n";
  for (const Arch& a : archs_)
    for (const auto& [fp, s] : a.sizes) {
      char hex[9];
      std::snprintf(hex, sizeof hex, "%08x", fp);
      t += "size " + a.name + " " + hex + " " + txt::number(s.work) + " " + txt::number(s.us) + " " +
           std::to_string(s.runs) + "\n";
    }
  return t + "checksum fnv1a64 " + txt::hex16(txt::fnv1a64(t)) + "\n";
}

void TaskCosts::from_text(const std::string& text, const std::string& codelet) {
  txt::Parser<CostsError> p(text, "task costs of " + codelet);
  txt::Line l = p.next(std::string("'") + kMagic + " 1'");
  p.expect(l, kMagic, 1, std::string("'") + kMagic + " 1'");
  if (l.tokens[1] != "1") p.fail(l.number, "unsupported version '" + txt::shown(l.tokens[1]) + "'");
  l = p.next("'codelet <name>'");
  p.expect(l, "codelet", 1, "'codelet <name>'");
  if (l.tokens[1] != codelet) p.fail(l.number, "the file is codelet '" + txt::shown(l.tokens[1]) + "''s");
  std::vector<Arch> read = archs_;
  for (Arch& a : read) a.sizes.clear();
  for (;;) {
    l = p.next("'checksum fnv1a64 <hex>'");
    if (l.tokens[0] == "checksum") break;
    p.expect(l, "size", 5, "'size <arch> <footprint> <work> <us> <runs>'");
    std::uint32_t fp = 0;
    const std::string_view h = l.tokens[2];
    const auto r = std::from_chars(h.data(), h.data() + h.size(), fp, 16);
    if (r.ec != std::errc() || r.ptr != h.data() + h.size()) p.fail(l.number, "bad footprint '" + txt::shown(h) + "'");
    const double work = p.real(l, l.tokens[3], "work"), us = p.real(l, l.tokens[4], "time");
    const std::size_t runs = p.count(l, l.tokens[5], "runs");
    if (!(work > 0) || !(us > 0) || runs == 0) p.fail(l.number, "work, time and runs must be positive");
    for (Arch& a : read)
      if (a.name == l.tokens[1]) a.sizes[fp] = Size{work, us, long(runs)};
  }
  p.expect(l, "checksum", 2, "'checksum fnv1a64 <hex>'", "fields");
  if (l.tokens[1] != "fnv1a64") p.fail(l.number, "unknown checksum '" + txt::shown(l.tokens[1]) + "'");
  if (l.tokens[2] != txt::hex16(txt::fnv1a64(std::string_view(text).substr(0, l.offset))))
    p.fail(l.number, "checksum mismatch: the file is corrupt or was edited by hand");
  if (!p.at_end()) p.fail(p.line(), "unexpected content after the checksum line");
  for (Arch& a : read) refit(a);
  archs_ = std::move(read);
}

}  // namespace sched
