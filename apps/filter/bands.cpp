#include "apps/filter/bands.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "codelets/lifting.hpp"

namespace filter {
namespace {

const char* const kNames[] = {"form", "waviness", "roughness"};

bool known_name(const std::string& n) {
  for (const char* k : kNames)
    if (n == k) return true;
  return false;
}

int parse_level(const std::string& band, const std::string& text, int levels) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE)
    throw BandError("band " + band + ": '" + text + "' is not a level number");
  if (v < 1 || v > levels)
    throw BandError("band " + band + ": level " + text + " is outside 1-" + std::to_string(levels) +
                    " (--levels " + std::to_string(levels) + "; level 1 is the finest)");
  return int(v);
}

// Rows (or columns) at level l: ceil(n / 2^l).
int shrink(int n, int l) {
  for (int i = 0; i < l; ++i) n = lwt::low_count(n);
  return n;
}

}  // namespace

std::string Band::levels_text() const {
  std::ostringstream s;
  int first = 0;
  const int n = int(level.size());
  for (int l = 1; l <= n; ++l) {
    const bool on = l < n && level[l];
    if (on && first == 0) first = l;
    if (!on && first != 0) {
      s << (s.tellp() > 0 ? "," : "") << first;
      if (l - 1 > first) s << "-" << l - 1;
      first = 0;
    }
  }
  if (approximation) s << (s.tellp() > 0 ? " + " : "") << "approximation";
  return s.str();
}

lwt::LevelSet Band::levels() const {
  lwt::LevelSet set = approximation ? 1u : 0u;
  for (std::size_t l = 1; l < level.size(); ++l)
    if (level[l]) set |= lwt::LevelSet(1) << l;
  return set;
}

std::vector<Band> parse_bands(const std::string& spec, int levels) {
  std::vector<Band> bands;
  std::vector<std::string> owner(levels + 1);  // which band holds each level
  int rest = -1;
  std::stringstream items(spec);
  std::string item;
  while (std::getline(items, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      throw BandError("band '" + item + "' has no levels: write NAME=FIRST-LAST or NAME=rest");
    Band b;
    b.name = item.substr(0, eq);
    const std::string range = item.substr(eq + 1);
    if (!known_name(b.name))
      throw BandError("unknown band '" + b.name + "': use form, waviness or roughness");
    for (const Band& o : bands)
      if (o.name == b.name) throw BandError("band " + b.name + " is named twice");
    b.level.assign(levels + 1, false);
    if (range == "rest") {
      if (rest >= 0) throw BandError("bands " + bands[rest].name + " and " + b.name + " are both 'rest'");
      rest = int(bands.size());
      b.approximation = true;
    } else {
      if (range.empty()) throw BandError("band " + b.name + " has an empty level range");
      const auto dash = range.find('-');
      const int first = parse_level(b.name, range.substr(0, dash), levels);
      const int last = dash == std::string::npos ? first : parse_level(b.name, range.substr(dash + 1), levels);
      if (last < first)
        throw BandError("band " + b.name + ": level range " + range + " is empty (write the finer level first)");
      for (int l = first; l <= last; ++l) {
        if (!owner[l].empty())
          throw BandError("bands " + owner[l] + " and " + b.name + " overlap at level " + std::to_string(l));
        owner[l] = b.name;
        b.level[l] = true;
      }
    }
    bands.push_back(b);
  }
  if (bands.empty()) throw BandError("--bands is empty: e.g. roughness=1-2,waviness=3-4,form=rest");
  if (rest < 0)
    throw BandError("no band is 'rest': one band must take the approximation, e.g. form=rest");
  for (int l = 1; l <= levels; ++l)
    if (owner[l].empty()) bands[rest].level[l] = true;
  return bands;
}

// Mallat layout: detail level l occupies the top-left shrink(rows, l-1) x shrink(cols, l-1)
// block less its top-left shrink(rows, l) x shrink(cols, l) block, which holds the coarser
// levels; the approximation is the top-left block of the last level.
void band_coefficients(const Band& band, const float* mallat, int rows, int cols, int levels,
                       float* out) {
  const std::size_t W = std::size_t(cols);
  std::memset(out, 0, sizeof(float) * W * std::size_t(rows));
  auto copy = [&](int r, int c0, int c1) {
    std::memcpy(out + r * W + c0, mallat + r * W + c0, sizeof(float) * std::size_t(c1 - c0));
  };
  for (int l = 1; l <= levels; ++l) {
    if (!band.level[l]) continue;
    const int r_out = shrink(rows, l - 1), c_out = shrink(cols, l - 1);
    const int r_in = shrink(rows, l), c_in = shrink(cols, l);
    for (int r = 0; r < r_out; ++r) copy(r, r < r_in ? c_in : 0, c_out);
  }
  if (band.approximation) {
    const int r_a = shrink(rows, levels), c_a = shrink(cols, levels);
    for (int r = 0; r < r_a; ++r) copy(r, 0, c_a);
  }
}

}  // namespace filter
