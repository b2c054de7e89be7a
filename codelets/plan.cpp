#include "codelets/plan.hpp"

#include <algorithm>
#include <cstring>

#include "codelets/lifting.hpp"

namespace lwt {
namespace {
int shrink(int n, int l) {
  for (int i = 0; i < l; ++i) n = low_count(n);
  return n;
}
}  // namespace

int Plan::max_units(int height, int levels) {
  if (levels < 1 || height < 1) return 0;
  // A unit's height is a multiple of 2^L (so that every level starts on an even row) and
  // at least 4 rows at level L-1.
  const long quantum = 1L << levels, min_rows = 4L << (levels - 1);
  long units = 0, used = 0;
  while (used + std::max(min_rows, quantum) <= height) {
    used += std::max(min_rows, quantum);
    ++units;
  }
  return int(std::max(1L, units));
}

Plan::Plan(int height, int width, int levels, int units, int preferred)
    : height_(height), width_(width), levels_(levels) {
  if (height < 1 || width < 1)
    throw PlanError("image size " + std::to_string(height) + " x " + std::to_string(width) +
                    " is empty: both dimensions must be positive");
  if (levels < 1 || levels > 30)
    throw PlanError("levels must be between 1 and 30, got " + std::to_string(levels));
  if (shrink(height, levels - 1) < 2 || shrink(width, levels - 1) < 2)
    throw PlanError("image " + std::to_string(height) + " x " + std::to_string(width) +
                    " is too small for " + std::to_string(levels) +
                    " levels: every level needs at least 2 rows and 2 columns; use fewer levels");
  const int most = max_units(height, levels);
  if (units < 0) throw PlanError("units must be positive, got " + std::to_string(units));
  if (units == 0) units = std::min(std::max(preferred, 1), most);
  if (units > most)
    throw PlanError(std::to_string(units) + " units are too many for " + std::to_string(height) +
                    " rows at " + std::to_string(levels) + " levels: each unit needs at least " +
                    std::to_string(4L << (levels - 1)) + " rows (seed 002 eq. 6.8); use at most " +
                    std::to_string(most) + " units or fewer levels");
  // Equal strips, starts rounded to multiples of 2^L; the last unit takes the remainder.
  const long quantum = 1L << levels, min_rows = std::max(quantum, 4L << (levels - 1));
  row0_.assign(units + 1, 0);
  for (int k = 1; k < units; ++k) {
    long r = (long(height) * k / units + quantum / 2) / quantum * quantum;
    r = std::max(r, row0_[k - 1] + min_rows);
    r = std::min(r, long(height) - min_rows * (units - k));
    row0_[k] = int(r / quantum * quantum);
  }
  row0_[units] = height;
  // The last unit may be odd-sized; it still needs 4 rows at level L-1 when it has a
  // neighbour above.
  for (int k = 0; k < units; ++k)
    if (units > 1 && unit_rows(levels - 1, k) < kHalo)
      throw PlanError(std::to_string(units) + " units are too many for " + std::to_string(height) +
                      " rows at " + std::to_string(levels) + " levels; use fewer units or levels");
}

int Plan::image_rows(int l) const { return shrink(height_, l); }
int Plan::cols(int l) const { return shrink(width_, l); }
int Plan::unit_row0(int l, int k) const { return row0_[k] >> l; }
int Plan::unit_rows(int l, int k) const {
  const int end = k + 1 < units() ? row0_[k + 1] >> l : image_rows(l);
  return end - unit_row0(l, k);
}

// Level l of unit k holds, in its rows [0, unit_rows(l,k)) and columns [0, cols(l)):
// L rows (the first low_count) then H rows. H rows are final (LH | HH); L rows keep HL in
// columns [cols(l+1), cols(l)) and pass [0, cols(l+1)) on to level l+1. In the global
// layout, L row i of unit k is row unit_row0(l+1,k) + i and H row i is row
// image_rows(l+1) + unit_row0(l+1,k) + i.
template <typename T>
void Plan::to_mallat(const T* in, T* out) const {
  for (int k = 0; k < units(); ++k) to_mallat_unit(k, in, out);
}

template <typename T>
void Plan::to_mallat_unit(int k, const T* in, T* out) const {
  const std::size_t W = std::size_t(width_);
  const T* unit = in + std::size_t(row0_[k]) * W;
  for (const Block& b : unit_mallat_blocks(k))
    for (int i = 0; i < b.rows; ++i)
      std::memcpy(out + std::size_t(b.row0 + i) * W + b.col0, unit + std::size_t(b.unit_row + i) * W + b.col0,
                  sizeof(T) * std::size_t(b.cols));
}

template <typename T>
void Plan::from_mallat(const T* in, T* out) const {
  for (int k = 0; k < units(); ++k) from_mallat_unit(k, in, out);
}

template <typename T>
void Plan::from_mallat_unit(int k, const T* in, T* out) const {
  const std::size_t W = std::size_t(width_);
  T* unit = out + std::size_t(row0_[k]) * W;
  for (const Block& b : unit_mallat_blocks(k))
    for (int i = 0; i < b.rows; ++i)
      std::memcpy(unit + std::size_t(b.unit_row + i) * W + b.col0, in + std::size_t(b.row0 + i) * W + b.col0,
                  sizeof(T) * std::size_t(b.cols));
}

// Level l's high rows of unit k lie at image_rows(l + 1) + unit_row0(l + 1, k), its low rows
// (their HL part, and at the last level the LL band) at unit_row0(l + 1, k): the rows
// from_mallat_unit copies from.
std::vector<std::pair<int, int>> Plan::unit_mallat_rows(int k) const {
  std::vector<std::pair<int, int>> rows;
  for (int l = 0; l < levels_; ++l) {
    const int h = unit_rows(l, k), nl = low_count(h), g = unit_row0(l + 1, k);
    if (h > nl) rows.emplace_back(image_rows(l + 1) + g, h - nl);
    if (nl > 0) rows.emplace_back(g, nl);
  }
  return rows;
}

std::vector<Plan::Block> Plan::unit_mallat_blocks(int k) const {
  std::vector<Block> blocks;
  for (int l = 0; l < levels_; ++l) {
    const int h = unit_rows(l, k), nl = low_count(h), g = unit_row0(l + 1, k), w = cols(l), wl = cols(l + 1);
    if (h > nl) blocks.push_back(Block{image_rows(l + 1) + g, h - nl, 0, w, nl});
    if (nl > 0 && w > wl) blocks.push_back(Block{g, nl, wl, w - wl, 0});
  }
  if (const int hL = unit_rows(levels_, k); hL > 0) blocks.push_back(Block{unit_row0(levels_, k), hL, 0, cols(levels_), 0});
  return blocks;
}

template void Plan::to_mallat<float>(const float*, float*) const;
template void Plan::to_mallat<double>(const double*, double*) const;
template void Plan::from_mallat<float>(const float*, float*) const;
template void Plan::from_mallat<double>(const double*, double*) const;
template void Plan::from_mallat_unit<float>(int, const float*, float*) const;
template void Plan::to_mallat_unit<float>(int, const float*, float*) const;
template void Plan::to_mallat_unit<double>(int, const double*, double*) const;
template void Plan::from_mallat_unit<double>(int, const double*, double*) const;

}  // namespace lwt
