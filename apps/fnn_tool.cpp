// fnn-tool: train, apply and show the FNN models of fnn/ (seed 000 §3.3 and §5.2).
//
//   fnn-tool train   --samples S.csv --out M.fnn [--hidden H] [--seed N] [schedule options]
//   fnn-tool predict --model M.fnn --samples T.csv     one predicted CP per sample line, in order
//   fnn-tool show    --model M.fnn                     structure and weights
//
// Other tools rely on this contract. Bad input gets one line on stderr ("fnn-tool: ...") and
// exit code 2; a failure at run time (an output that cannot be written) exit code 1.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "apps/cli.hpp"
#include "apps/io/output.hpp"
#include "fnn/csv.hpp"
#include "fnn/fnn.hpp"
#include "fnn/io.hpp"
#include "fnn/train.hpp"

namespace {

using apps::UsageError;

std::string usage() {
  std::ostringstream o;
  o << "usage: fnn-tool <command> [options]\n"
       "\n"
       "commands:\n"
       "  train   --samples S.csv --out M.fnn [--hidden H] [--seed N]\n"
       "          [--pretrain-fraction X] [--epochs1 N] [--epochs2 N] [--lr1 R] [--lr2 R]\n"
       "          [--order shuffled|in-order] [--batch N] [--slope A]\n"
       "      Trains a model on S.csv (header F,M,P,UF,UM,CP, one sample per line, values in\n"
       "      [0,1]) in two steps (seed 000 5.2): pre-training on the first X of the samples,\n"
       "      then fine-tuning on the rest at a lower rate. Prints the loss after each step.\n"
       "      --slope A sets every input's memberships to a = -A (low) / +A (high), c = 0.5.\n"
       "  predict --model M.fnn --samples T.csv\n"
       "      Prints one predicted CP per sample line of T.csv, in order (CP column optional).\n"
       "  show    --model M.fnn\n"
       "      Prints the model's structure and weights.\n"
       "\n"
       "train defaults: --hidden "
    << fnn::kDefaultHidden << " --seed 1 --pretrain-fraction " << fnn::kDefaultPretrainFraction
    << " --epochs1 " << fnn::kDefaultEpochs1 << " --lr1 " << fnn::kDefaultLearningRate1
    << " --epochs2 " << fnn::kDefaultEpochs2 << " --lr2 " << fnn::kDefaultLearningRate2
    << " --order shuffled --batch 1 --slope " << fnn::kDefaultSlope
    << "\n"
       "(the paper's rates are --lr1 0.01 --lr2 0.001; with plain SGD they underfit)\n"
       "\n"
       "exit codes: 0 success, 2 bad input, 1 run-time failure\n";
  return o.str();
}

// --name value or --name=value; each allowed flag at most once.
std::map<std::string, std::string> parse_flags(int argc, char** argv, int first,
                                               const std::set<std::string>& allowed,
                                               const std::string& command) {
  std::map<std::string, std::string> flags;
  std::vector<apps::Flag> table;
  for (const std::string& name : allowed)
    table.push_back(apps::value_flag("--" + name, [&flags, name](const std::string& v) {
      if (!flags.emplace(name, v).second) throw UsageError("option --" + name + " given twice");
    }));
  apps::parse_flags(argc, argv, first, table, command);
  return flags;
}

const std::string& required(const std::map<std::string, std::string>& f, const std::string& name,
                            const std::string& command) {
  const auto it = f.find(name);
  if (it == f.end()) {
    throw UsageError(command + " needs --" + name + " (see --help)");
  }
  return it->second;
}

unsigned long long parse_integer(const std::string& name, const std::string& s,
                                 unsigned long long lo, unsigned long long hi) {
  unsigned long long v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size() || v < lo || v > hi) {
    throw UsageError("--" + name + " takes an integer in [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "], got '" + s + "'");
  }
  return v;
}

double parse_real(const std::string& name, const std::string& s, bool allow_one_closed,
                  const char* range) {
  double v = 0.0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  const bool num =
      !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size() && std::isfinite(v);
  const bool ok = num && v > 0.0 && (!allow_one_closed || v <= 1.0);
  if (!ok) throw UsageError("--" + name + " takes a number in " + range + ", got '" + s + "'");
  return v;
}

fnn::SampleTable read_samples(const std::string& path, bool require_cp) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("cannot open samples " + path + ": " + std::strerror(errno));
  try {
    return fnn::read_samples_csv(in, path, require_cp);
  } catch (const fnn::InputError& e) {
    throw UsageError(e.what());
  }
}

fnn::Model read_model_file(const std::string& path) {
  try {
    return fnn::load_model(path);
  } catch (const std::exception& e) {  // cannot open, or FormatError: both are bad input here
    throw UsageError(std::string("model ") + e.what());
  }
}

std::string num(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

bool same_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec)) return true;
  const fs::path ca = fs::weakly_canonical(a, ec);
  if (ec) return a == b;
  const fs::path cb = fs::weakly_canonical(b, ec);
  if (ec) return a == b;
  return ca == cb;
}

void print_step(const char* what, const fnn::StepReport& r) {
  std::printf("%s: %zu samples, %zu epochs at learning rate %g: loss %.6g -> %.6g, MAE %.4g\n",
              what, r.samples, r.epochs, r.learning_rate, r.loss_before, r.loss_after, r.mae_after);
}

int cmd_train(int argc, char** argv) {
  const auto f = parse_flags(argc, argv, 2,
                             {"samples", "out", "hidden", "seed", "pretrain-fraction", "epochs1",
                              "epochs2", "lr1", "lr2", "order", "batch", "slope"},
                             "train");
  const std::string samples_path = required(f, "samples", "train");
  const std::string out_path = required(f, "out", "train");
  if (same_file(samples_path, out_path)) {
    throw UsageError("--out " + out_path + " is the samples file; choose another output path");
  }
  try {  // before training: a destination that cannot be written is bad input
    io::check_output_file(out_path);
  } catch (const io::OutputPathError& e) {
    throw UsageError(e.what());
  }
  std::size_t hidden = fnn::kDefaultHidden;
  std::uint64_t seed = 1;
  fnn::TrainOptions opt;
  if (f.count("hidden")) hidden = parse_integer("hidden", f.at("hidden"), 1, fnn::kMaxHidden);
  if (f.count("seed")) seed = parse_integer("seed", f.at("seed"), 0, ~0ULL);
  if (f.count("pretrain-fraction")) {
    opt.pretrain_fraction =
        parse_real("pretrain-fraction", f.at("pretrain-fraction"), true, "(0, 1]");
  }
  if (f.count("epochs1"))
    opt.pretrain.epochs = parse_integer("epochs1", f.at("epochs1"), 0, 1000000);
  if (f.count("epochs2"))
    opt.finetune.epochs = parse_integer("epochs2", f.at("epochs2"), 0, 1000000);
  if (f.count("lr1"))
    opt.pretrain.learning_rate = parse_real("lr1", f.at("lr1"), false, "(0, inf)");
  if (f.count("lr2"))
    opt.finetune.learning_rate = parse_real("lr2", f.at("lr2"), false, "(0, inf)");
  if (f.count("batch")) opt.batch_size = parse_integer("batch", f.at("batch"), 1, 1000000);
  if (f.count("order")) {
    const std::string& o = f.at("order");
    if (o == "shuffled") {
      opt.order = fnn::Order::shuffled;
    } else if (o == "in-order") {
      opt.order = fnn::Order::in_order;
    } else {
      throw UsageError("--order takes 'shuffled' or 'in-order', got '" + o + "'");
    }
  }
  opt.seed = seed;
  double slope = fnn::kDefaultSlope;
  if (f.count("slope")) slope = parse_real("slope", f.at("slope"), false, "(0, inf)");

  const fnn::SampleTable t = read_samples(samples_path, true);
  fnn::Model m = fnn::Model::random(hidden, seed);
  for (std::size_t i = 0; i < fnn::kInputs; ++i) {
    m.set_membership(i, {-slope, fnn::kDefaultCentre, slope, fnn::kDefaultCentre});
  }
  const fnn::TrainReport r = fnn::train_two_step(m, t.samples, opt);
  print_step("pre-training", r.pretrain);
  if (r.finetune.samples > 0) {
    print_step("fine-tuning", r.finetune);
  } else {
    std::printf("fine-tuning: skipped, no samples left after pre-training\n");
  }
  std::printf("all %zu samples: loss %.6g, MAE %.4g\n", t.samples.size(),
              fnn::mean_loss(m, t.samples), fnn::mean_abs_error(m, t.samples));
  fnn::save_model(m, out_path);  // std::runtime_error: exit 1
  std::printf("model written to %s (hidden %zu, seed %llu)\n", out_path.c_str(), hidden,
              static_cast<unsigned long long>(seed));
  return 0;
}

int cmd_predict(int argc, char** argv) {
  const auto f = parse_flags(argc, argv, 2, {"model", "samples"}, "predict");
  const fnn::Model m = read_model_file(required(f, "model", "predict"));
  const fnn::SampleTable t = read_samples(required(f, "samples", "predict"), false);
  std::string out;
  for (const fnn::Sample& s : t.samples) {
    out += num(m.predict(s.x));
    out += '\n';
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

int cmd_show(int argc, char** argv) {
  const auto f = parse_flags(argc, argv, 2, {"model"}, "show");
  const std::string path = required(f, "model", "show");
  const fnn::Model m = read_model_file(path);
  const std::size_t h = m.hidden();
  std::printf("model %s: fnn-model version %d (seed 000 eqs. 9-16)\n", path.c_str(),
              fnn::kFormatVersion);
  std::printf("layers: %zu inputs -> %zu fuzzy -> %zu hidden -> %zu outputs (CPL, CPH) -> CP\n",
              fnn::kInputs, fnn::kFuzzy, h, fnn::kOutputs);
  std::printf("\nfuzzy layer, f(x) = 1/(1+exp(-a(x-c))) (eq. 11):\n");
  std::printf("  %-5s %10s %10s %10s %10s\n", "input", "a_low", "c_low", "a_high", "c_high");
  for (std::size_t i = 0; i < fnn::kInputs; ++i) {
    const fnn::Membership& mb = m.membership(i);
    std::printf("  %-5s %10.4g %10.4g %10.4g %10.4g\n", fnn::kInputNames[i], mb.a_low, mb.c_low,
                mb.a_high, mb.c_high);
  }
  std::printf("\nhidden layer, O3_j = sigmoid(sum_i w_ji O2_i - theta_j) (eq. 13-14):\n  %4s %9s",
              "j", "theta");
  for (std::size_t i = 0; i < fnn::kFuzzy; ++i) {
    const std::string n = std::string(fnn::kInputNames[i / 2]) + (i % 2 == 0 ? "L" : "H");
    std::printf(" %8s", n.c_str());
  }
  std::printf("\n");
  for (std::size_t j = 0; j < h; ++j) {
    std::printf("  %4zu %9.4f", j, m.hidden_threshold(j));
    for (std::size_t i = 0; i < fnn::kFuzzy; ++i) std::printf(" %8.4f", m.hidden_weight(j, i));
    std::printf("\n");
  }
  std::printf("\noutput layer, O4_k = sigmoid(sum_j w'_kj O3_j - theta'_k) (eq. 15):\n");
  std::printf("  %4s %9s  w'_k0 .. w'_k%zu\n", "k", "theta'", h - 1);
  for (std::size_t k = 0; k < fnn::kOutputs; ++k) {
    std::printf("  %4s %9.4f ", k == 0 ? "CPL" : "CPH", m.output_threshold(k));
    for (std::size_t j = 0; j < h; ++j) {
      std::printf(" %8.4f", m.output_weight(k, j));
      if (j % 8 == 7 && j + 1 < h) std::printf("\n  %4s %9s ", "", "");
    }
    std::printf("\n");
  }
  std::printf("\ndecode, CP = (w''_L O4_L + w''_H O4_H) / (O4_L + O4_H) (eq. 16):\n");
  std::printf("  w''_L = %.6g  w''_H = %.6g\n", m.decode_weight(0), m.decode_weight(1));
  return 0;
}

int run(int argc, char** argv) {
  if (argc < 2) throw UsageError("no command given (see --help)");
  const std::string cmd = argv[1];
  if (cmd == "train") return cmd_train(argc, argv);
  if (cmd == "predict") return cmd_predict(argc, argv);
  if (cmd == "show") return cmd_show(argc, argv);
  throw UsageError("unknown command '" + cmd + "' (train, predict or show; see --help)");
}

}  // namespace

int main(int argc, char** argv) {
  const apps::Program program{"fnn-tool", usage()};
  if (argc >= 2 && std::strcmp(argv[1], "help") == 0) {  // as --help
    std::fputs(program.usage.c_str(), stdout);
    return 0;
  }
  return apps::run_main(program, argc, argv, [&] { return run(argc, argv); });
}
