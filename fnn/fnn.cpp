#include "fnn/fnn.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "fnn/random.hpp"

namespace fnn {

namespace {

// seed 000 eq. (14) with slope a = 1: the paper leaves a open, and any other slope is the
// same as scaling the incoming weights and threshold, which training does anyway.
inline double sigmoid(double x) noexcept { return 1.0 / (1.0 + std::exp(-x)); }

// Sizes of the parameter blocks (see the layout in fnn.hpp).
inline std::size_t parameter_count(std::size_t hidden) {
  return hidden * (kFuzzy + 1) + kOutputs * (hidden + 1) + kOutputs;
}

// Forward pass into caller-provided arrays; returns CP. Shared by predict (stack arrays) and
// forward/backprop so that all three compute bit-identical values.
inline double forward_into(const std::array<Membership, kInputs>& mem, const double* params,
                           std::size_t hidden, const Features& f, double* fuzzy, double* hid,
                           double* out) noexcept {
  const std::array<double, kInputs> x = f.to_array();
  // seed 000 eqs. (9)-(11): the input layer passes x through; the fuzzy layer maps each
  // input to its low and high membership.
  for (std::size_t i = 0; i < kInputs; ++i) {
    const Membership& m = mem[i];
    if (m.a_low == -m.a_high && m.c_low == m.c_high) {
      // Mirrored pair (the paper's case, eq. (12)): one exponential gives both,
      // high = 1/(1+t), low = t/(1+t) with t = e^{-a_high (x - c)}.
      const double t = std::exp(-m.a_high * (x[i] - m.c_high));
      const bool overflow = t > 1e300;
      fuzzy[2 * i] = overflow ? 1.0 : t / (1.0 + t);
      fuzzy[2 * i + 1] = overflow ? 0.0 : 1.0 / (1.0 + t);
    } else {
      fuzzy[2 * i] = membership_value(x[i], m.a_low, m.c_low);
      fuzzy[2 * i + 1] = membership_value(x[i], m.a_high, m.c_high);
    }
  }
  const double* w = params;
  const double* theta = w + hidden * kFuzzy;
  const double* w2 = theta + hidden;
  const double* theta2 = w2 + kOutputs * hidden;
  const double* wd = theta2 + kOutputs;
  // seed 000 eqs. (13)-(14): I3_j = sum_i w_ji O2_i - theta_j, O3_j = phi(I3_j). The weights
  // are stored input-major so that the inner loop runs over independent hidden units (it
  // vectorises; a per-unit dot product would be one long chain of dependent additions).
  // A local accumulator, which the compiler knows aliases nothing.
  double s3[kMaxHidden];
  for (std::size_t j = 0; j < hidden; ++j) s3[j] = -theta[j];
  for (std::size_t i = 0; i < kFuzzy; ++i) {
    const double fi = fuzzy[i];
    const double* wi = w + i * hidden;
    for (std::size_t j = 0; j < hidden; ++j) s3[j] += wi[j] * fi;
  }
  for (std::size_t j = 0; j < hidden; ++j) hid[j] = sigmoid(s3[j]);
  // seed 000 eq. (15): I4_k = sum_j w'_kj O3_j - theta'_k, O4_k = phi(I4_k). Four partial
  // sums break the dependency chain; the order is fixed, so results stay reproducible.
  for (std::size_t k = 0; k < kOutputs; ++k) {
    const double* wk = w2 + k * hidden;
    double acc[4] = {0.0, 0.0, 0.0, 0.0};
    std::size_t j = 0;
    for (; j + 4 <= hidden; j += 4) {
      for (std::size_t q = 0; q < 4; ++q) acc[q] += wk[j + q] * hid[j + q];
    }
    for (; j < hidden; ++j) acc[0] += wk[j] * hid[j];
    out[k] = sigmoid(((acc[0] + acc[1]) + (acc[2] + acc[3])) - theta2[k]);
  }
  // seed 000 eq. (16): fuzzy weighted average. The sum is zero only if both outputs
  // underflowed; the decode weights' midpoint is a neutral answer then, not 0/0.
  const double sum = out[0] + out[1];
  if (!(sum > 0.0)) return 0.5 * (wd[0] + wd[1]);
  return (wd[0] * out[0] + wd[1] * out[1]) / sum;
}

void check_membership(const Membership& m) {
  const bool ok = std::isfinite(m.a_low) && std::isfinite(m.c_low) && std::isfinite(m.a_high) &&
                  std::isfinite(m.c_high) && m.a_low != 0.0 && m.a_high != 0.0;
  if (!ok) throw std::invalid_argument("fnn: membership constants must be finite with a != 0");
}

}  // namespace

double membership_value(double x, double a, double c) noexcept {
  return 1.0 / (1.0 + std::exp(-a * (x - c)));  // seed 000 eq. (11)
}

Model::Model(std::size_t hidden) : hidden_(hidden) {
  if (hidden < 1 || hidden > kMaxHidden) {
    throw std::invalid_argument("fnn: hidden width must be in [1, " + std::to_string(kMaxHidden) +
                                "], got " + std::to_string(hidden));
  }
  params_.assign(parameter_count(hidden), 0.0);
  params_[decode_weight_index(0)] = 0.0;  // CPL's centre
  params_[decode_weight_index(1)] = 1.0;  // CPH's centre
}

Model Model::random(std::size_t hidden, std::uint64_t seed) {
  Model m(hidden);
  Rng rng(seed);
  // Zero-mean Gaussian (seed 000 §5.2), deviation 1/sqrt(fan-in) so that the sigmoids start
  // in their sensitive range whatever the width. Thresholds count as weights on a -1 input.
  const double s3 = 1.0 / std::sqrt(static_cast<double>(kFuzzy));
  const double s4 = 1.0 / std::sqrt(static_cast<double>(hidden));
  for (std::size_t j = 0; j < hidden; ++j) {
    for (std::size_t i = 0; i < kFuzzy; ++i)
      m.params_[m.hidden_weight_index(j, i)] = s3 * rng.normal();
    m.params_[m.hidden_threshold_index(j)] = s3 * rng.normal();
  }
  for (std::size_t k = 0; k < kOutputs; ++k) {
    for (std::size_t j = 0; j < hidden; ++j)
      m.params_[m.output_weight_index(k, j)] = s4 * rng.normal();
    m.params_[m.output_threshold_index(k)] = s4 * rng.normal();
  }
  return m;
}

void Model::set_membership(std::size_t input, const Membership& m) {
  check_membership(m);
  membership_.at(input) = m;
}

double Model::predict(const Features& x) const noexcept {
  double fuzzy[kFuzzy];
  double hid[kMaxHidden];
  double out[kOutputs];
  return forward_into(membership_, params_.data(), hidden_, x, fuzzy, hid, out);
}

void Model::forward(const Features& x, Activations& act) const noexcept {
  act.cp = forward_into(membership_, params_.data(), hidden_, x, act.fuzzy.data(),
                        act.hidden.data(), act.out.data());
}

double Model::backprop(const Sample& s, double* grad, double scale) const noexcept {
  double fuzzy[kFuzzy];
  double hid[kMaxHidden];
  double out[kOutputs];
  const double* p = params_.data();
  const double cp = forward_into(membership_, p, hidden_, s.x, fuzzy, hid, out);
  const double e = cp - s.cp;  // d loss / d CP for loss 1/2 (CP - t)^2
  const double sum = out[0] + out[1];
  if (!(sum > 0.0)) return 0.5 * e * e;  // saturated: no usable gradient

  // Decode, eq. (16): CP = sum_k w''_k O4_k / S, S = O4_L + O4_H, so
  // dCP/dw''_k = O4_k / S and dCP/dO4_k = (w''_k - CP) / S.
  double d_decode[kOutputs];
  double d4[kOutputs];  // d loss / d I4_k, through eq. (15)'s sigmoid: phi' = O (1 - O)
  for (std::size_t k = 0; k < kOutputs; ++k) {
    const double wd = p[decode_weight_index(k)];
    d_decode[k] = e * out[k] / sum;
    d4[k] = e * (wd - cp) / sum * out[k] * (1.0 - out[k]);
  }
  // Hidden, eqs. (13)-(14): d loss / d I3_j = (sum_k d4_k w'_kj) O3_j (1 - O3_j).
  double d3[kMaxHidden];
  for (std::size_t j = 0; j < hidden_; ++j) {
    double g = 0.0;
    for (std::size_t k = 0; k < kOutputs; ++k) g += d4[k] * p[output_weight_index(k, j)];
    d3[j] = g * hid[j] * (1.0 - hid[j]);
  }

  // Writes only from here on (grad may be the parameters themselves).
  for (std::size_t i = 0; i < kFuzzy; ++i) {
    double* gw = grad + hidden_weight_index(0, i);
    const double fi = scale * fuzzy[i];
    for (std::size_t j = 0; j < hidden_; ++j) gw[j] += d3[j] * fi;  // dI3_j/dw_ji = O2_i
  }
  for (std::size_t j = 0; j < hidden_; ++j)
    grad[hidden_threshold_index(j)] -= scale * d3[j];  // dI3_j/dtheta_j = -1
  for (std::size_t k = 0; k < kOutputs; ++k) {
    double* gw = grad + output_weight_index(k, 0);
    const double dk = scale * d4[k];
    for (std::size_t j = 0; j < hidden_; ++j) gw[j] += dk * hid[j];  // dI4_k/dw'_kj = O3_j
    grad[output_threshold_index(k)] -= dk;
    grad[decode_weight_index(k)] += scale * d_decode[k];
  }
  return 0.5 * e * e;
}

double Model::accumulate_gradient(const Sample& s, std::vector<double>& grad) const {
  if (grad.size() != params_.size()) {
    throw std::invalid_argument("fnn: gradient has " + std::to_string(grad.size()) +
                                " entries, the model " + std::to_string(params_.size()));
  }
  return backprop(s, grad.data(), 1.0);
}

double Model::sgd_step(const Sample& s, double learning_rate) noexcept {
  return backprop(s, params_.data(), -learning_rate);
}

void Model::add_scaled(const std::vector<double>& delta, double scale) {
  if (delta.size() != params_.size()) {
    throw std::invalid_argument("fnn: update has " + std::to_string(delta.size()) +
                                " entries, the model " + std::to_string(params_.size()));
  }
  for (std::size_t i = 0; i < params_.size(); ++i) params_[i] += scale * delta[i];
}

}  // namespace fnn
