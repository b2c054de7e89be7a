// Geometry of the local-transform layout (seed 002, Table 6.2): the image is cut into
// horizontal strips, the data units; each unit keeps the coefficients of its own rows at
// every level, in a per-unit Mallat layout. Provides the permutation to and from the
// standard (global) Mallat layout.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace lwt {

// Thrown for geometry that cannot be transformed; the message is one line for the user.
struct PlanError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// A set of the transform's levels: bit l for detail level l (1 = the finest), bit 0 for the
// approximation. The inverse of the coefficients of a set alone is its band (apps/filter).
using LevelSet = std::uint32_t;
inline constexpr LevelSet kAllLevels = ~LevelSet(0);

// The blocks of one unit's per-unit Mallat layout, whose level-0 size is h0 rows x w0 columns
// at `levels` levels: f(r0, r1, c0, c1, l) for each block of rows [r0, r1) and columns
// [c0, c1) holding level l (0: the approximation). The blocks partition the unit. A row
// r >= low_count^m(h0) (and below low_count^(m-1)(h0)) is an H row of level m whose first
// cols(m-1) columns are level m's and whose columns [cols(j), cols(j-1)) are level j's HL for
// j < m; rows below low_count^L(h0) are L rows at every level, the approximation in their
// first cols(L) columns.
template <typename F>
void for_each_level_block(int h0, int w0, int levels, F&& f) {
  auto shrink = [](int n, int l) {
    for (int i = 0; i < l; ++i) n = (n + 1) / 2;
    return n;
  };
  for (int m = 1; m <= levels + 1; ++m) {
    const int r0 = m <= levels ? shrink(h0, m) : 0, r1 = shrink(h0, m - 1);
    if (m == levels + 1) {  // rows above the last H rows: L rows at every level
      const int top = shrink(h0, levels);
      for (int j = 1; j <= levels; ++j) f(0, top, shrink(w0, j), shrink(w0, j - 1), j);
      f(0, top, 0, shrink(w0, levels), 0);
      break;
    }
    if (r0 == r1) continue;
    for (int j = 1; j < m; ++j) f(r0, r1, shrink(w0, j), shrink(w0, j - 1), j);
    f(r0, r1, 0, shrink(w0, m - 1), m);
  }
}

class Plan {
 public:
  // units == 0 picks a default (the most units up to `preferred` that the levels allow).
  // Throws PlanError when the sizes are too small for the levels or units.
  Plan(int height, int width, int levels, int units, int preferred = 16);

  // Most units that H rows allow at L levels: every unit needs 4 rows at level L-1 for
  // its neighbours' halos, i.e. L <= log2(2H / (8U)) (seed 002 eq. 6.8, D - 2 = 8).
  static int max_units(int height, int levels);

  int height() const { return height_; }
  int width() const { return width_; }
  int levels() const { return levels_; }
  int units() const { return int(row0_.size()) - 1; }

  // Rows of the whole image at level l (l = 0 is the input), and columns.
  int image_rows(int l) const;
  int cols(int l) const;
  // First row of unit k at level l (even for l < levels) and its row count there.
  int unit_row0(int l, int k) const;
  int unit_rows(int l, int k) const;
  bool has_above(int k) const { return k > 0; }
  bool has_below(int k) const { return k + 1 < units(); }

  // Unit layout (H x W, unit k in rows [unit_row0(0,k), ...) holding its own per-unit
  // Mallat layout) <-> the standard Mallat layout of the whole image.
  template <typename T>
  void to_mallat(const T* units_layout, T* mallat) const;
  template <typename T>
  void from_mallat(const T* mallat, T* units_layout) const;
  // The same for unit k alone: only its rows of units_layout are written, and only the rows
  // of the Mallat layout that unit_mallat_rows(k) names are read.
  template <typename T>
  void from_mallat_unit(int k, const T* mallat, T* units_layout) const;
  // Unit k's rows of units_layout into the blocks of the Mallat layout that
  // unit_mallat_blocks(k) names: units write disjoint blocks, so that units may be copied in
  // parallel.
  template <typename T>
  void to_mallat_unit(int k, const T* units_layout, T* mallat) const;
  // The row ranges (first row, row count) of the Mallat layout that hold unit k's coefficients:
  // its low and high rows at every level. A row may hold other units' coefficients too (a
  // coarser level's, in its first columns).
  std::vector<std::pair<int, int>> unit_mallat_rows(int k) const;
  // Unit k's coefficients in the Mallat layout exactly: per level its high rows (every column
  // of the level) and its low rows' high half, and the last level's LL band. Each block's
  // columns are the same in the unit layout, its rows there from unit_row0(0, k) + unit_row,
  // so that a unit's blocks go between a file's Mallat layout and the unit layout directly.
  struct Block {
    int row0, rows, col0, cols, unit_row;
  };
  std::vector<Block> unit_mallat_blocks(int k) const;

 private:
  int height_, width_, levels_;
  std::vector<int> row0_;  // level-0 unit starts, units + 1 entries
};

}  // namespace lwt
