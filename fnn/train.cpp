#include "fnn/train.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <stdexcept>
#include <string>

namespace fnn {

double mean_loss(const Model& m, const std::vector<Sample>& samples) {
  if (samples.empty()) return 0.0;
  double sum = 0.0;
  for (const Sample& s : samples) {
    const double e = m.predict(s.x) - s.cp;
    sum += 0.5 * e * e;
  }
  return sum / static_cast<double>(samples.size());
}

double mean_abs_error(const Model& m, const std::vector<Sample>& samples) {
  if (samples.empty()) return 0.0;
  double sum = 0.0;
  for (const Sample& s : samples) sum += std::fabs(m.predict(s.x) - s.cp);
  return sum / static_cast<double>(samples.size());
}

StepReport train_step(Model& m, const std::vector<Sample>& samples, const StepOptions& step,
                      Order order, std::size_t batch_size, Rng& rng) {
  if (!(std::isfinite(step.learning_rate) && step.learning_rate > 0.0)) {
    throw std::invalid_argument("fnn: learning rate must be positive, got " +
                                std::to_string(step.learning_rate));
  }
  if (batch_size < 1) throw std::invalid_argument("fnn: batch size must be at least 1");

  StepReport r;
  r.samples = samples.size();
  r.epochs = step.epochs;
  r.learning_rate = step.learning_rate;
  r.loss_before = mean_loss(m, samples);

  std::vector<std::size_t> idx(samples.size());
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  std::vector<double> grad(batch_size > 1 ? m.num_parameters() : 0);
  for (std::size_t epoch = 0; epoch < step.epochs; ++epoch) {
    if (order == Order::shuffled) shuffle(idx, rng);
    if (batch_size == 1) {
      for (std::size_t i : idx) m.sgd_step(samples[i], step.learning_rate);
      continue;
    }
    for (std::size_t b = 0; b < idx.size(); b += batch_size) {
      const std::size_t e = std::min(idx.size(), b + batch_size);
      std::fill(grad.begin(), grad.end(), 0.0);
      for (std::size_t i = b; i < e; ++i) m.accumulate_gradient(samples[idx[i]], grad);
      m.add_scaled(grad, -step.learning_rate / static_cast<double>(e - b));
    }
  }

  r.loss_after = mean_loss(m, samples);
  r.mae_after = mean_abs_error(m, samples);
  return r;
}

TrainReport train_two_step(Model& m, const std::vector<Sample>& samples, const TrainOptions& opt) {
  if (samples.empty()) throw std::invalid_argument("fnn: no samples to train on");
  if (!(opt.pretrain_fraction > 0.0 && opt.pretrain_fraction <= 1.0)) {
    throw std::invalid_argument("fnn: pre-training fraction must be in (0, 1], got " +
                                std::to_string(opt.pretrain_fraction));
  }
  const auto n = samples.size();
  auto n1 = static_cast<std::size_t>(std::llround(opt.pretrain_fraction * static_cast<double>(n)));
  n1 = std::min(n, std::max<std::size_t>(1, n1));
  const std::vector<Sample> first(samples.begin(),
                                  samples.begin() + static_cast<std::ptrdiff_t>(n1));
  const std::vector<Sample> rest(samples.begin() + static_cast<std::ptrdiff_t>(n1), samples.end());

  // A stream of its own, so that the batch order does not depend on how the weights were drawn.
  Rng rng(opt.seed ^ 0x9e3779b97f4a7c15ULL);
  TrainReport r;
  r.pretrain = train_step(m, first, opt.pretrain, opt.order, opt.batch_size, rng);
  if (!rest.empty()) {
    r.finetune = train_step(m, rest, opt.finetune, opt.order, opt.batch_size, rng);
  } else {
    r.finetune.epochs = 0;
    r.finetune.learning_rate = opt.finetune.learning_rate;
  }
  return r;
}

}  // namespace fnn
