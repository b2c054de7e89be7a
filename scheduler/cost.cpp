#include "scheduler/cost.hpp"

#include <algorithm>

namespace sched {

const char* to_string(SpeedSource s) {
  switch (s) {
    case SpeedSource::Even: return "even";
    case SpeedSource::Boyer: return "boyer";
    case SpeedSource::Fnn: return "fnn";
    case SpeedSource::Dtps: return "dtps";
    case SpeedSource::FnnDtps: return "fnn-dtps";
  }
  return "?";
}

namespace {

// The measured speeds, untimed workers at the mean of the timed ones.
std::vector<double> measured_or_mean(const std::vector<double>& m) {
  double sum = 0;
  int timed = 0;
  for (double x : m)
    if (x > 0) sum += x, ++timed;
  std::vector<double> s(m.size(), timed ? sum / timed : 1.0);
  for (std::size_t w = 0; w < m.size(); ++w)
    if (m[w] > 0) s[w] = m[w];
  return s;
}

// `within`'s relative values scaled so that the timed workers' total equals their measured one.
std::vector<double> scaled_to_measured(const std::vector<double>& within, const std::vector<double>& m) {
  double meas = 0, pred = 0;
  for (std::size_t w = 0; w < m.size(); ++w)
    if (m[w] > 0 && within[w] > 0) meas += m[w], pred += within[w];
  if (pred <= 0) return measured_or_mean(m);
  std::vector<double> s(within.size());
  for (std::size_t w = 0; w < s.size(); ++w) s[w] = within[w] > 0 ? within[w] * meas / pred : 0;
  return s;
}

double sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

// Class totals alpha R (CPU) and (1 - alpha) R (GPU), split within a class by `within`.
// One class only: nothing to split, `alone` stands.
std::vector<double> class_split(const std::vector<double>& within, const std::vector<char>& gpu, double alpha,
                                double total, const std::vector<double>& alone) {
  double cls[2] = {0, 0};
  for (std::size_t w = 0; w < within.size(); ++w) cls[gpu[w] ? 1 : 0] += within[w];
  if (cls[0] <= 0 || cls[1] <= 0) return alone;
  std::vector<double> s(within.size());
  for (std::size_t w = 0; w < s.size(); ++w) {
    const int k = gpu[w] ? 1 : 0;
    s[w] = (k ? 1 - alpha : alpha) * total * within[w] / cls[k];
  }
  return s;
}

// seed 000 eqs. 7-16 on measured scales: measured x CP now / CP while measured for the timed
// workers, the predicted CP scaled to the timed workers' measured total for the others.
std::vector<double> fnn_speeds(const SpeedInputs& in) {
  std::vector<double> s = scaled_to_measured(in.ability, in.measured);
  for (std::size_t w = 0; w < s.size(); ++w)
    if (in.measured[w] > 0 && w < in.ability_measured.size() && in.ability_measured[w] > 0)
      s[w] = in.measured[w] * std::clamp(in.ability[w] / in.ability_measured[w], 1 / kMaxFnnChange, kMaxFnnChange);
  return s;
}

}  // namespace

std::vector<double> speeds(SpeedSource source, const SpeedInputs& in) {
  const std::vector<double> boyer = measured_or_mean(in.measured);
  const bool have_fnn = !in.ability.empty();
  switch (source) {
    case SpeedSource::Even:
      return std::vector<double>(boyer.size(), boyer.empty() ? 1.0 : sum(boyer) / double(boyer.size()));
    case SpeedSource::Boyer:
      return boyer;
    case SpeedSource::Fnn:
      return have_fnn ? fnn_speeds(in) : boyer;
    case SpeedSource::Dtps:
      return in.alpha >= 0 ? class_split(std::vector<double>(boyer.size(), 1.0), in.gpu, in.alpha, sum(boyer), boyer)
                          : boyer;
    case SpeedSource::FnnDtps: {
      const std::vector<double> within = have_fnn ? fnn_speeds(in) : boyer;
      return in.alpha >= 0 ? class_split(within, in.gpu, in.alpha, sum(boyer), within) : within;
    }
  }
  return boyer;
}

}  // namespace sched
