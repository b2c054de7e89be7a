// Bands of lwt2d filter: which wavelet levels form, waviness and roughness hold (DESIGN §7; the
// multiresolution filters of ISO 16610-29 separate a surface this way).
//
// Levels count from 1, the finest: detail level l holds wavelengths of about 2^l to 2^(l+1)
// samples. A spec such as "roughness=1-2,waviness=3-4,form=rest" gives each band a range of
// detail levels; exactly one band is "rest": the coarsest approximation and every level no
// other band names. So the bands partition the coefficients, and since the inverse transform
// is linear they sum to the input (within float rounding).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "codelets/plan.hpp"

namespace filter {

// A bad spec; what() is one line for the user.
struct BandError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

struct Band {
  std::string name;          // form, waviness or roughness
  std::vector<bool> level;   // level[l] for l in 1..levels (level[0] unused)
  bool approximation = false;
  std::string levels_text() const;  // "1-2", "3 4 + approximation"...
  // For lwt::inverse's `keep`: the same selection in the transform's unit layout, made per unit
  // on the workers (lwt::cpu::copy_levels / lwt::cuda::copy_levels).
  lwt::LevelSet levels() const;
};

// Parses `spec` for a transform of `levels` levels. Throws BandError for an unknown or repeated
// band name, a malformed, empty or out-of-range level range, overlapping ranges, or no or
// several "rest" bands.
std::vector<Band> parse_bands(const std::string& spec, int levels);

// The band's coefficients: `mallat` (rows x cols, standard Mallat layout of `levels` levels)
// where the band holds them, zero elsewhere, into `out`.
void band_coefficients(const Band& band, const float* mallat, int rows, int cols, int levels,
                       float* out);


}  // namespace filter
