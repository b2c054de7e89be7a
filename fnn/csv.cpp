#include "fnn/csv.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <istream>
#include <ostream>
#include <string_view>
#include <system_error>

#include "fnn/text.hpp"

namespace fnn {

namespace {

using fnn::text::shown;

constexpr std::size_t kColumns = kInputs + 1;  // the five features, then CP
constexpr const char* kExpected = "F,M,P,UF,UM,CP";
constexpr std::size_t kAbsent = static_cast<std::size_t>(-1);

std::string_view trim(std::string_view s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_commas(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t b = 0;
  for (;;) {
    const std::size_t e = line.find(',', b);
    out.push_back(
        trim(line.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b)));
    if (e == std::string_view::npos) break;
    b = e + 1;
  }
  return out;
}

std::string column_name(std::size_t c) { return c < kInputs ? kInputNames[c] : "CP"; }


}  // namespace

SampleTable read_samples_csv(std::istream& in, const std::string& source, bool require_cp) {
  auto fail = [&](std::size_t line, const std::string& what) -> InputError {
    return InputError(source + ":" + std::to_string(line) + ": " + what);
  };

  std::string line;
  std::size_t n = 0;
  // Header: skip nothing, the first line must name the columns.
  if (!std::getline(in, line) || trim(line).empty()) {
    throw InputError(source + ": empty file; expected the header " + kExpected +
                     " and one sample per line");
  }
  ++n;
  if (line.size() >= 3 && line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);  // UTF-8 BOM

  std::array<std::size_t, kColumns> where;  // column index in the file of F..UM, CP
  where.fill(kAbsent);
  const std::vector<std::string_view> names = split_commas(line);
  for (std::size_t f = 0; f < names.size(); ++f) {
    std::size_t c = 0;
    while (c < kColumns && names[f] != column_name(c)) ++c;
    if (c == kColumns) {
      throw fail(
          n, "unknown column '" + shown(names[f]) + "' in the header (expected " + kExpected + ")");
    }
    if (where[c] != kAbsent)
      throw fail(n, "column " + column_name(c) + " appears twice in the header");
    where[c] = f;
  }
  for (std::size_t c = 0; c < kColumns; ++c) {
    if (where[c] == kAbsent && (c < kInputs || require_cp)) {
      throw fail(n, "the header lacks column " + column_name(c) + " (expected " + kExpected + ")");
    }
  }

  SampleTable t;
  t.has_cp = where[kInputs] != kAbsent;
  std::size_t blank = 0;  // line number of the first blank line seen, 0 if none
  while (std::getline(in, line)) {
    ++n;
    if (trim(line).empty()) {
      if (blank == 0) blank = n;
      continue;
    }
    if (blank != 0) throw fail(blank, "empty line inside the data; remove it");
    const std::vector<std::string_view> fields = split_commas(line);
    if (fields.size() != names.size()) {
      throw fail(n, std::to_string(fields.size()) + " fields, the header has " +
                        std::to_string(names.size()));
    }
    std::array<double, kColumns> v{};
    for (std::size_t c = 0; c < kColumns; ++c) {
      if (where[c] == kAbsent) continue;
      const std::string_view tok = fields[where[c]];
      double x = 0.0;
      const auto r = std::from_chars(tok.data(), tok.data() + tok.size(), x);
      if (tok.empty() || r.ec != std::errc() || r.ptr != tok.data() + tok.size() || std::isnan(x)) {
        throw fail(n, "column " + column_name(c) + ": '" + shown(tok) + "' is not a number");
      }
      if (!(x >= 0.0 && x <= 1.0)) {
        throw fail(n, "column " + column_name(c) + ": " + shown(tok) +
                          " is outside [0, 1]; normalise the data first");
      }
      v[c] = x;
    }
    std::array<double, kInputs> x{};
    for (std::size_t c = 0; c < kInputs; ++c) x[c] = v[c];
    t.samples.push_back({Features::from_array(x), v[kInputs]});
  }
  if (in.bad()) throw InputError(source + ": read error");
  if (t.samples.empty()) throw InputError(source + ": a header but no samples");
  return t;
}

void write_samples_csv(const std::vector<Sample>& samples, std::ostream& out) {
  out << kExpected << "\n";
  char buf[32];
  for (const Sample& s : samples) {
    const std::array<double, kInputs> x = s.x.to_array();
    for (std::size_t c = 0; c < kColumns; ++c) {
      const double v = c < kInputs ? x[c] : s.cp;
      const auto r = std::to_chars(buf, buf + sizeof buf, v);
      out.write(buf, r.ptr - buf);
      out << (c + 1 < kColumns ? ',' : '\n');
    }
  }
}

}  // namespace fnn
