#include "fnn/io.hpp"


#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string_view>
#include <system_error>
#include <vector>

#include "fnn/text.hpp"

namespace fnn {

namespace {

using fnn::text::fnv1a64;
using fnn::text::hex16;
using fnn::text::number;
using fnn::text::shown;

constexpr std::size_t kMaxFileBytes = 1 << 20;  // a 64-wide model is about 20 KB





using Line = fnn::text::Line;
using Parser = fnn::text::Parser<FormatError>;

}  // namespace

void write_model(const Model& m, std::ostream& out) {
  std::ostringstream s;
  s << "fnn-model " << kFormatVersion << "\n"
    << "# fuzzy neural network, seed 000 eqs. (9)-(16)\n"
    << "# membership <input> a_low c_low a_high c_high: f(x) = 1/(1+exp(-a(x-c))), eq. (11)\n"
    << "# hidden_unit <j> theta w[FL FH ML MH PL PH UFL UFH UML UMH], eq. (13)\n"
    << "# output_unit <k: 0 CPL, 1 CPH> theta' w'[hidden units], eq. (15)\n"
    << "# decode w''_L w''_H, eq. (16)\n"
    << "inputs " << kInputs << "\n"
    << "hidden " << m.hidden() << "\n"
    << "outputs " << kOutputs << "\n";
  for (std::size_t i = 0; i < kInputs; ++i) {
    const Membership& mb = m.membership(i);
    s << "membership " << kInputNames[i] << ' ' << number(mb.a_low) << ' ' << number(mb.c_low)
      << ' ' << number(mb.a_high) << ' ' << number(mb.c_high) << "\n";
  }
  for (std::size_t j = 0; j < m.hidden(); ++j) {
    s << "hidden_unit " << j << ' ' << number(m.hidden_threshold(j));
    for (std::size_t i = 0; i < kFuzzy; ++i) s << ' ' << number(m.hidden_weight(j, i));
    s << "\n";
  }
  for (std::size_t k = 0; k < kOutputs; ++k) {
    s << "output_unit " << k << ' ' << number(m.output_threshold(k));
    for (std::size_t j = 0; j < m.hidden(); ++j) s << ' ' << number(m.output_weight(k, j));
    s << "\n";
  }
  s << "decode " << number(m.decode_weight(0)) << ' ' << number(m.decode_weight(1)) << "\n";
  const std::string body = s.str();
  out << body << "checksum fnv1a64 " << hex16(fnv1a64(body)) << "\n";
}

Model read_model(std::istream& in, const std::string& source) {
  const std::string text = text::read_at_most(in, kMaxFileBytes);
  if (in.bad()) throw FormatError(source + ": read error");
  if (text.size() > kMaxFileBytes) {
    throw FormatError(source + ": larger than " + std::to_string(kMaxFileBytes) +
                      " bytes, not an fnn model");
  }
  if (text.empty()) throw FormatError(source + ": empty file, not an fnn model");
  Parser p(text, source);
  const std::string header = "'fnn-model " + std::to_string(kFormatVersion) + "'";

  // Header and version.
  Line l = p.next(header);
  if (l.tokens[0] != "fnn-model" || l.tokens.size() != 2) {
    p.fail(l.number, "not an fnn model (the first line should be " + header + ")");
  }
  const std::size_t version = p.count(l, l.tokens[1]);
  if (version != static_cast<std::size_t>(kFormatVersion)) {
    p.fail(l.number, "model format version " + shown(l.tokens[1]) +
                         " is not supported (this build reads version " +
                         std::to_string(kFormatVersion) + "); retrain the model");
  }

  // Layer sizes.
  l = p.next("'inputs 5'");
  p.expect(l, "inputs", 1, "'inputs 5'");
  if (p.count(l, l.tokens[1]) != kInputs)
    p.fail(l.number, "the network has 5 inputs, not " + shown(l.tokens[1]));
  l = p.next("'hidden <width>'");
  p.expect(l, "hidden", 1, "'hidden <width>'");
  const std::size_t hidden = p.count(l, l.tokens[1]);
  if (hidden < 1 || hidden > kMaxHidden) {
    p.fail(l.number, "hidden width " + shown(l.tokens[1]) + " is outside [1, " +
                         std::to_string(kMaxHidden) + "]");
  }
  l = p.next("'outputs 2'");
  p.expect(l, "outputs", 1, "'outputs 2'");
  if (p.count(l, l.tokens[1]) != kOutputs)
    p.fail(l.number, "the network has 2 outputs, not " + shown(l.tokens[1]));

  Model m(hidden);
  // Membership constants, eq. (11).
  for (std::size_t i = 0; i < kInputs; ++i) {
    const std::string shape =
        std::string("'membership ") + kInputNames[i] + " a_low c_low a_high c_high'";
    l = p.next(shape);
    p.expect(l, "membership", 5, shape);
    if (l.tokens[1] != kInputNames[i]) {
      p.fail(l.number, "expected the membership of " + std::string(kInputNames[i]) + ", found '" +
                           shown(l.tokens[1]) + "'");
    }
    Membership mb{p.real(l, l.tokens[2]), p.real(l, l.tokens[3]), p.real(l, l.tokens[4]),
                  p.real(l, l.tokens[5])};
    if (mb.a_low == 0.0 || mb.a_high == 0.0) p.fail(l.number, "membership slope a must not be 0");
    m.set_membership(i, mb);
  }

  std::vector<double>& w = m.parameters();
  // Hidden layer, eq. (13).
  for (std::size_t j = 0; j < hidden; ++j) {
    const std::string shape = "'hidden_unit " + std::to_string(j) + " theta w_1..w_10'";
    l = p.next(shape);
    p.expect(l, "hidden_unit", 2 + kFuzzy, shape);
    if (p.count(l, l.tokens[1]) != j)
      p.fail(l.number,
             "expected hidden_unit " + std::to_string(j) + ", found index " + shown(l.tokens[1]));
    w[m.hidden_threshold_index(j)] = p.real(l, l.tokens[2]);
    for (std::size_t i = 0; i < kFuzzy; ++i)
      w[m.hidden_weight_index(j, i)] = p.real(l, l.tokens[3 + i]);
  }
  // Output layer, eq. (15).
  for (std::size_t k = 0; k < kOutputs; ++k) {
    const std::string shape =
        "'output_unit " + std::to_string(k) + " theta' w'_1..w'_" + std::to_string(hidden) + "'";
    l = p.next(shape);
    p.expect(l, "output_unit", 2 + hidden, shape);
    if (p.count(l, l.tokens[1]) != k)
      p.fail(l.number,
             "expected output_unit " + std::to_string(k) + ", found index " + shown(l.tokens[1]));
    w[m.output_threshold_index(k)] = p.real(l, l.tokens[2]);
    for (std::size_t j = 0; j < hidden; ++j)
      w[m.output_weight_index(k, j)] = p.real(l, l.tokens[3 + j]);
  }
  // Decode, eq. (16).
  l = p.next("'decode w''_L w''_H'");
  p.expect(l, "decode", 2, "'decode w''_L w''_H'");
  w[m.decode_weight_index(0)] = p.real(l, l.tokens[1]);
  w[m.decode_weight_index(1)] = p.real(l, l.tokens[2]);

  // Checksum over every byte before its line.
  l = p.next("'checksum fnv1a64 <hex>'");
  p.expect(l, "checksum", 2, "'checksum fnv1a64 <hex>'");
  if (l.tokens[1] != "fnv1a64") p.fail(l.number, "unknown checksum '" + shown(l.tokens[1]) + "'");
  if (l.tokens[2] != hex16(fnv1a64(std::string_view(text).substr(0, l.offset)))) {
    p.fail(l.number,
           "checksum mismatch: the file is corrupt or was edited by hand; retrain or restore it");
  }
  if (!p.at_end()) p.fail(p.line(), "unexpected content after the checksum line");
  return m;
}

void save_model(const Model& m, const std::string& path) {
  std::ostringstream out;
  write_model(m, out);
  text::replace_file(path, out.str());
}

Model load_model(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  return read_model(in, path);
}

}  // namespace fnn
