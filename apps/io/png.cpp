#include "apps/io/png.hpp"

#include <png.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "apps/io/npy.hpp"
#include "apps/io/output.hpp"
#include "codelets/lifting.hpp"

namespace io {
namespace {

struct Image {
  int w, h;
  std::vector<std::uint8_t> rgb;
  Image(int width, int height, std::uint8_t fill = 255)
      : w(width), h(height), rgb(std::size_t(width) * height * 3, fill) {}
  void set(int x, int y, std::uint8_t r, std::uint8_t g, std::uint8_t b) {
    if (x < 0 || y < 0 || x >= w || y >= h) return;
    std::uint8_t* p = &rgb[(std::size_t(y) * w + x) * 3];
    p[0] = r;
    p[1] = g;
    p[2] = b;
  }
};

// 3 x 5 glyphs, one row per 3-bit number, most significant bit leftmost.
struct Glyph {
  char c;
  std::uint8_t rows[5];
};
constexpr Glyph kFont[] = {
    {'0', {7, 5, 5, 5, 7}}, {'1', {2, 6, 2, 2, 7}}, {'2', {7, 1, 7, 4, 7}}, {'3', {7, 1, 7, 1, 7}},
    {'4', {5, 5, 7, 1, 1}}, {'5', {7, 4, 7, 1, 7}}, {'6', {7, 4, 7, 5, 7}}, {'7', {7, 1, 1, 1, 1}},
    {'8', {7, 5, 7, 5, 7}}, {'9', {7, 5, 7, 1, 7}}, {'.', {0, 0, 0, 0, 2}}, {'-', {0, 0, 7, 0, 0}},
    {'+', {0, 2, 7, 2, 0}}, {'e', {0, 7, 7, 4, 7}}, {'A', {2, 5, 7, 5, 5}}, {'u', {0, 5, 5, 5, 7}},
    {'m', {0, 6, 7, 5, 5}}, {' ', {0, 0, 0, 0, 0}},
};

// Text at (x, y), each font pixel `s` x `s`, with a one-pixel outline in the opposite colour.
void text(Image& im, int x, int y, const std::string& t, int s, std::uint8_t ink) {
  const std::uint8_t rim = 255 - ink;
  for (int pass = 0; pass < 2; ++pass)
    for (std::size_t i = 0; i < t.size(); ++i) {
      const Glyph* g = nullptr;
      for (const Glyph& f : kFont)
        if (f.c == t[i]) g = &f;
      if (!g) continue;
      for (int r = 0; r < 5; ++r)
        for (int c = 0; c < 3; ++c) {
          if (!((g->rows[r] >> (2 - c)) & 1)) continue;
          const int x0 = x + int(i) * 4 * s + c * s, y0 = y + r * s;
          for (int dy = -1 + pass; dy < s + 1 - pass; ++dy)
            for (int dx = -1 + pass; dx < s + 1 - pass; ++dx)
              im.set(x0 + dx, y0 + dy, pass ? ink : rim, pass ? ink : rim, pass ? ink : rim);
        }
    }
}

// Shades of the colour map and of the mosaic's grey: with the few colours of borders and text
// they fit a 256-entry palette, and an indexed PNG is a third the size of an RGB one.
constexpr int kLevels = 239;

// Blue - teal - green - yellow, a viridis-like ramp for t in [0, 1].
void colour(double t, std::uint8_t* rgb) {
  static const double k[5][3] = {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
  t = std::round(std::clamp(t, 0.0, 1.0) * kLevels) / kLevels * 4.0;
  const int i = std::min(int(t), 3);
  const double f = t - i;
  for (int j = 0; j < 3; ++j) rgb[j] = std::uint8_t(std::lround(k[i][j] + f * (k[i + 1][j] - k[i][j])));
}

// The image's colours as a palette and indices, where it has at most 256 colours.
bool to_palette(const Image& im, std::vector<png_color>& palette, std::vector<std::uint8_t>& index) {
  std::unordered_map<std::uint32_t, std::uint8_t> seen;
  index.resize(std::size_t(im.w) * im.h);
  for (std::size_t i = 0; i < index.size(); ++i) {
    const std::uint8_t* p = &im.rgb[3 * i];
    const std::uint32_t key = std::uint32_t(p[0]) << 16 | std::uint32_t(p[1]) << 8 | p[2];
    auto it = seen.find(key);
    if (it == seen.end()) {
      if (seen.size() == 256) return false;
      it = seen.emplace(key, std::uint8_t(seen.size())).first;
      palette.push_back(png_color{p[0], p[1], p[2]});
    }
    index[i] = it->second;
  }
  return true;
}

// libpng reports errors by longjmp back here: nothing with a destructor is created in between.
bool encode(png_structp png, png_infop info, std::FILE* f, const Image& im,
            const std::vector<png_color>& palette, const std::vector<std::uint8_t>& index) {
  if (setjmp(png_jmpbuf(png)) != 0) return false;
  png_init_io(png, f);
  png_set_compression_level(png, 9);  // views go into repositories and reports: small files
  const bool indexed = !palette.empty();
  png_set_IHDR(png, info, png_uint_32(im.w), png_uint_32(im.h), 8,
               indexed ? PNG_COLOR_TYPE_PALETTE : PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (indexed) png_set_PLTE(png, info, palette.data(), int(palette.size()));
  png_write_info(png, info);
  for (int y = 0; y < im.h; ++y)
    png_write_row(png, const_cast<png_bytep>(indexed ? &index[std::size_t(y) * im.w]
                                                     : &im.rgb[std::size_t(y) * im.w * 3]));
  png_write_end(png, nullptr);
  return true;
}

void write_png(const std::string& path, const Image& im, const std::string& protected_input) {
  if (!protected_input.empty() && same_file(path, protected_input))
    throw OutputError(path + ": refusing to overwrite the input file " + protected_input);
  base::AtomicFile file(path);
  std::FILE* f = file.open();
  if (!f) throw OutputError(path + ": cannot create " + file.temp() + " (" + std::strerror(errno) + ")");
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  std::vector<png_color> palette;
  std::vector<std::uint8_t> index;
  if (!to_palette(im, palette, index)) palette.clear();
  bool ok = png && info && encode(png, info, f, im, palette, index);
  png_destroy_write_struct(png ? &png : nullptr, info ? &info : nullptr);
  if (file.close() != 0) ok = false;
  if (!ok || file.commit() != 0)
    throw OutputError(path + ": PNG write failed; check free disk space and permissions");
}

int shrink(int n, int l) {
  for (int i = 0; i < l; ++i) n = lwt::low_count(n);
  return n;
}

struct Frame {
  int w, h;  // pixels of the view
  double step;  // samples per pixel
};
Frame frame(int rows, int cols, int max_side) {
  const double step = std::max(1.0, double(std::max(rows, cols)) / std::max(max_side, 16));
  return {std::max(1, int(cols / step)), std::max(1, int(rows / step)), step};
}

}  // namespace

void write_mosaic_png(const std::string& path, const float* m, int rows, int cols, int levels,
                      int max_side, const std::string& protected_input) {
  const Frame fr = frame(rows, cols, max_side);
  Image im(fr.w, fr.h, 0);
  const std::size_t W = std::size_t(cols);
  // A subband: rows [r0, r1) x cols [c0, c1) of the Mallat layout, and its label.
  auto draw = [&](int r0, int r1, int c0, int c1, const std::string& label, bool approx) {
    if (r1 <= r0 || c1 <= c0) return;
    double lo = INFINITY, hi = -INFINITY, s1 = 0, s2 = 0;
    for (int r = r0; r < r1; ++r)
      for (int c = c0; c < c1; ++c) {
        const double v = m[r * W + c];
        lo = std::min(lo, v);
        hi = std::max(hi, v);
        s1 += v;
        s2 += v * v;
      }
    const double cnt = double(r1 - r0) * (c1 - c0), mean = s1 / cnt;
    const double sd = std::sqrt(std::max(0.0, s2 / cnt - mean * mean));
    if (!approx) {
      lo = mean - 3 * sd;
      hi = mean + 3 * sd;
    }
    const int y0 = int(r0 / fr.step), y1 = int(r1 / fr.step), x0 = int(c0 / fr.step), x1 = int(c1 / fr.step);
    for (int y = y0; y < std::min(y1, fr.h); ++y)
      for (int x = x0; x < std::min(x1, fr.w); ++x) {
        const int r = std::min(r1 - 1, int(y * fr.step)), c = std::min(c1 - 1, int(x * fr.step));
        const double t = hi > lo ? (m[r * W + c] - lo) / (hi - lo) : 0.5;
        const auto g = std::uint8_t(std::lround(255.0 / kLevels * std::round(kLevels * std::clamp(t, 0.0, 1.0))));
        im.set(x, y, g, g, g);
      }
    for (int x = x0; x < x1; ++x) im.set(x, y0, 255, 64, 64);  // subband borders
    for (int y = y0; y < y1; ++y) im.set(x0, y, 255, 64, 64);
    const int s = std::clamp((y1 - y0) / 24, 1, 3);
    if (y1 - y0 >= 7 * s && x1 - x0 >= 4 * s * int(label.size()) + 2) text(im, x0 + 2 * s, y0 + 2 * s, label, s, 255);
  };
  for (int l = 1; l <= levels; ++l) {
    const int ro = shrink(rows, l - 1), co = shrink(cols, l - 1), ri = shrink(rows, l), ci = shrink(cols, l);
    const std::string label = std::to_string(l);
    draw(0, ri, ci, co, label, false);
    draw(ri, ro, 0, ci, label, false);
    draw(ri, ro, ci, co, label, false);
  }
  draw(0, shrink(rows, levels), 0, shrink(cols, levels), "A", true);
  write_png(path, im, protected_input);
}

void write_height_png(const std::string& path, const float* z, int rows, int cols,
                      const std::string& unit, int max_side, const std::string& protected_input) {
  const Frame fr = frame(rows, cols, max_side);
  double lo = INFINITY, hi = -INFINITY;
  for (std::size_t i = 0; i < std::size_t(rows) * cols; ++i)
    if (std::isfinite(z[i])) {
      lo = std::min(lo, double(z[i]));
      hi = std::max(hi, double(z[i]));
    }
  if (!(lo <= hi)) lo = hi = 0;
  const int s = std::max(2, fr.h / 160);  // font scale
  const int bar_x = fr.w + 6 * s, bar_w = 6 * s, label_x = bar_x + bar_w + 3 * s;
  const int pad = 4 * s;
  Image im(label_x + 4 * s * 11, fr.h + 2 * pad, 255);
  for (int y = 0; y < fr.h; ++y)
    for (int x = 0; x < fr.w; ++x) {
      const int r = std::min(rows - 1, int(y * fr.step)), c = std::min(cols - 1, int(x * fr.step));
      const float v = z[std::size_t(r) * cols + c];
      std::uint8_t p[3] = {160, 160, 160};
      if (std::isfinite(v)) colour(hi > lo ? (v - lo) / (hi - lo) : 0.5, p);
      im.set(x, y + pad, p[0], p[1], p[2]);
    }
  for (int y = 0; y < fr.h; ++y) {
    std::uint8_t p[3];
    colour(1.0 - double(y) / std::max(1, fr.h - 1), p);
    for (int x = bar_x; x < bar_x + bar_w; ++x) im.set(x, y + pad, p[0], p[1], p[2]);
  }
  auto label = [&](double v, int y) {
    char b[32];
    std::snprintf(b, sizeof b, "%.3g", v);
    std::string t = b;
    if (!unit.empty()) t += " " + unit;
    text(im, label_x, y, t, s, 0);
  };
  label(hi, pad);
  label((lo + hi) / 2, pad + fr.h / 2 - 2 * s);
  label(lo, pad + fr.h - 5 * s);
  write_png(path, im, protected_input);
}

}  // namespace io
