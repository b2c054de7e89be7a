// The fuzzy neural network (FNN) of seed 000 §3.3, eqs. (9)-(16), which predicts a worker's
// relative computational ability CP from five normalised state features:
//
//   input 5 (F, M, P, UF, UM)                                  eq. (9)
//   -> fuzzy 10: a "low" and a "high" sigmoid membership each  eqs. (10)-(12), constants a, c
//   -> hidden m: sigmoid(sum_j w_ij O2_j - theta_i)            eqs. (13)-(14)
//   -> output 2 (CPL, CPH): sigmoid(sum_j w'_kj O3_j - theta'_k) eq. (15)
//   -> decode: CP = (w''_L O4_L + w''_H O4_H) / (O4_L + O4_H)   eq. (16)
//
// Trainable: w, theta, w', theta', w''. The membership constants stay fixed.
// Loss per sample: 1/2 (CP - target)^2; losses over sets are the mean of that.
// No StarPU here: the scheduler links this library.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace fnn {

constexpr std::size_t kInputs = 5;           // F, M, P, UF, UM
constexpr std::size_t kFuzzy = 2 * kInputs;  // low and high membership per input
constexpr std::size_t kOutputs = 2;          // CPL, CPH
constexpr std::size_t kMaxHidden = 64;       // bound so predict() works on stack arrays
constexpr std::size_t kDefaultHidden = 16;

// Names in input order; the fuzzy layer's unit 2i is input i's "low", 2i+1 its "high".
constexpr std::array<const char*, kInputs> kInputNames{"F", "M", "P", "UF", "UM"};

// The five state features of seed 000 Table 1, each normalised to [0, 1].
struct Features {
  double F = 0.0;   // peak floating-point rate
  double M = 0.0;   // memory size
  double P = 0.0;   // parallel ability
  double UF = 0.0;  // compute occupancy
  double UM = 0.0;  // memory occupancy

  std::array<double, kInputs> to_array() const noexcept { return {F, M, P, UF, UM}; }
  static Features from_array(const std::array<double, kInputs>& x) noexcept {
    return {x[0], x[1], x[2], x[3], x[4]};
  }
};

struct Sample {
  Features x;
  double cp = 0.0;  // target relative computational ability, in [0, 1]
};

// The membership slope |a| and centre c every input gets by default: seed 000 eq. (12)'s for
// UF (a = -15 low, +15 high, c = 0.5); the paper gives no others. A slope of 15 leaves the
// memberships nearly flat below 0.25 and above 0.75, which costs accuracy there: a slope of
// 5 trains to about a third of the error (notes/fnn.md).
constexpr double kDefaultSlope = 15.0;
constexpr double kDefaultCentre = 0.5;

// Constants of the two sigmoid memberships of one input, f(x) = 1 / (1 + e^{-a (x - c)}).
struct Membership {
  double a_low = -kDefaultSlope;
  double c_low = kDefaultCentre;
  double a_high = kDefaultSlope;
  double c_high = kDefaultCentre;
};

// seed 000 eq. (11).
double membership_value(double x, double a, double c) noexcept;

// Every layer's output for one input, for back-propagation and inspection.
struct Activations {
  std::array<double, kFuzzy> fuzzy{};       // O2
  std::array<double, kMaxHidden> hidden{};  // O3 (first hidden() entries used)
  std::array<double, kOutputs> out{};       // O4: CPL, CPH
  double cp = 0.0;                          // O5
};

class Model {
 public:
  // All weights and thresholds zero, decode weights (0, 1). Throws std::invalid_argument
  // unless 1 <= hidden <= kMaxHidden.
  explicit Model(std::size_t hidden = kDefaultHidden);

  // Weights and thresholds drawn from zero-mean Gaussians (seed 000 §5.2) with standard
  // deviation 1/sqrt(fan-in), from a generator seeded with `seed`. The decode weights start at
  // (0, 1), the centres of CP's "low" and "high" subsets, so that CPL and CPH keep their
  // meaning from the start.
  static Model random(std::size_t hidden, std::uint64_t seed);

  std::size_t hidden() const noexcept { return hidden_; }

  const Membership& membership(std::size_t input) const { return membership_.at(input); }
  void set_membership(std::size_t input, const Membership& m);  // throws on a == 0 or non-finite

  // CP for x (features in [0, 1]; a NaN feature gives NaN). No allocation, no exception: the
  // scheduler calls it on its hot path.
  double predict(const Features& x) const noexcept;
  void forward(const Features& x, Activations& act) const noexcept;

  // Trainable parameters, one flat vector:
  //   [ w (10 x hidden: all units' weights from fuzzy unit 0, then 1, ...) | theta (hidden) |
  //     w' (2 x hidden: CPL's weights, then CPH's) | theta' (2) | w'' (2) ]
  std::size_t num_parameters() const noexcept { return params_.size(); }
  const std::vector<double>& parameters() const noexcept { return params_; }
  std::vector<double>& parameters() noexcept { return params_; }

  std::size_t hidden_weight_index(std::size_t unit, std::size_t fuzzy) const noexcept {
    return fuzzy * hidden_ + unit;
  }
  std::size_t hidden_threshold_index(std::size_t unit) const noexcept {
    return hidden_ * kFuzzy + unit;
  }
  std::size_t output_weight_index(std::size_t out, std::size_t unit) const noexcept {
    return hidden_ * (kFuzzy + 1) + out * hidden_ + unit;
  }
  std::size_t output_threshold_index(std::size_t out) const noexcept {
    return hidden_ * (kFuzzy + 1 + kOutputs) + out;
  }
  std::size_t decode_weight_index(std::size_t out) const noexcept {
    return hidden_ * (kFuzzy + 1 + kOutputs) + kOutputs + out;
  }

  double hidden_weight(std::size_t unit, std::size_t fuzzy) const {
    return params_.at(hidden_weight_index(unit, fuzzy));
  }
  double hidden_threshold(std::size_t unit) const {
    return params_.at(hidden_threshold_index(unit));
  }
  double output_weight(std::size_t out, std::size_t unit) const {
    return params_.at(output_weight_index(out, unit));
  }
  double output_threshold(std::size_t out) const { return params_.at(output_threshold_index(out)); }
  double decode_weight(std::size_t out) const { return params_.at(decode_weight_index(out)); }

  // Back-propagation: adds d loss / d parameter for one sample (loss 1/2 (CP - target)^2) to
  // grad, which must have num_parameters() entries. Returns the sample's loss.
  double accumulate_gradient(const Sample& s, std::vector<double>& grad) const;

  // One plain SGD step on one sample: parameters -= learning_rate * gradient. Returns the
  // sample's loss before the step. No allocation (online fine-tuning in the scheduler).
  double sgd_step(const Sample& s, double learning_rate) noexcept;

  // parameters += scale * delta (delta has num_parameters() entries).
  void add_scaled(const std::vector<double>& delta, double scale);

 private:
  // Adds scale * gradient into grad (which may alias params_: every read of the parameters
  // happens before the first write).
  double backprop(const Sample& s, double* grad, double scale) const noexcept;

  std::size_t hidden_;
  std::array<Membership, kInputs> membership_{};
  std::vector<double> params_;
};

}  // namespace fnn
