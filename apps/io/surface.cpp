// Synthetic engineering surface: form + waviness + roughness. See surface.hpp for the model.
#include "apps/io/surface.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/host_threads.hpp"

namespace io {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ull;

// splitmix64's output function (Steele, Lea, Flood 2014; constants of Stafford's Mix13).
inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Sequential splitmix64 for the surface's parameters.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() { return mix64(state_ += kGolden); }
  // Uniform in [lo, hi), 53 random bits.
  double uniform(double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(next() >> 11) * 0x1.0p-53;
  }
  double sign() { return (next() >> 63) ? -1.0 : 1.0; }

 private:
  std::uint64_t state_;
};

// Roughness field kernels: three box passes, width 3 along rows and 5 along columns.
constexpr int kRh = 3;  // horizontal radius
constexpr int kRv = 6;  // vertical radius
constexpr std::array<int, 2 * kRh + 1> kKh{1, 3, 6, 7, 6, 3, 1};
constexpr std::array<int, 2 * kRv + 1> kKv{1, 3, 6, 10, 15, 18, 19, 18, 15, 10, 6, 3, 1};
// Noise: integers in [-2^19, 2^19). Row sums stay below 2^19 * 27 < 2^24 (exact in float),
// column sums below 2^24 * 125 < 2^31 (exact in double).
constexpr int kNoiseBits = 20;

constexpr int kWaviness = 4;
constexpr int kRoughWaves = 12;

struct Wave {
  double amp, kx, ky, phase;
  unsigned part;
};

struct Model {
  int rows = 0, cols = 0;
  unsigned parts = 0;
  // Form (normalised coordinates u, v in [-1, 1] along the larger side).
  double half = 1, tilt_x = 0, tilt_y = 0, cyl = 0, cyl_c = 1, cyl_s = 0, sph = 0;
  std::vector<Wave> waves;
  std::uint64_t noise_key = 0;
  double noise_scale = 0;
  // Per-column tables: u(c), cos and sin of (kx c + phase) for each wave.
  std::vector<double> u, cx, sx;
};

Model build_model(int rows, int cols, std::uint64_t seed, unsigned parts) {
  Model m;
  m.rows = rows;
  m.cols = cols;
  m.parts = parts;
  SplitMix64 rng(seed);
  const double d = std::max(rows, cols);
  m.half = std::max(d - 1.0, 1.0) / 2.0;

  m.tilt_x = rng.sign() * rng.uniform(1.0, 4.0);
  m.tilt_y = rng.sign() * rng.uniform(1.0, 4.0);
  m.cyl = rng.uniform(2.0, 6.0);
  const double axis = rng.uniform(0.0, kPi);
  m.cyl_c = std::cos(axis);
  m.cyl_s = std::sin(axis);
  m.sph = rng.sign() * rng.uniform(1.0, 3.0);

  auto add_wave = [&](double lambda, double amp, unsigned part) {
    const double theta = rng.uniform(0.0, 2.0 * kPi);
    const double phase = rng.uniform(0.0, 2.0 * kPi);
    const double k = 2.0 * kPi / lambda;
    m.waves.push_back({amp, k * std::cos(theta), k * std::sin(theta), phase, part});
  };
  for (int i = 0; i < kWaviness; ++i) {
    const double lambda = std::max(d / rng.uniform(2.0, 6.0), 16.0);
    add_wave(lambda, rng.uniform(0.4, 1.2), kSurfaceWaviness);
  }
  for (int i = 0; i < kRoughWaves; ++i) {
    const double lambda = std::min(rng.uniform(16.0, 64.0), std::max(d / 2.0, 4.0));
    add_wave(lambda, rng.uniform(0.04, 0.08), kSurfaceRoughness);
  }
  // Keep only the waves asked for.
  m.waves.erase(std::remove_if(m.waves.begin(), m.waves.end(),
                               [&](const Wave& w) { return (w.part & parts) == 0; }),
                m.waves.end());

  m.noise_key = mix64(seed ^ 0x5851f42d4c957f2dull);
  // RMS of the smoothed field = sqrt(var(noise) * sum kh^2 * sum kv^2); scale it to 0.3 um.
  double sh = 0, sv = 0;
  for (int k : kKh) sh += double(k) * k;
  for (int k : kKv) sv += double(k) * k;
  const double span = std::ldexp(1.0, kNoiseBits);
  const double var = (span * span - 1.0) / 12.0;
  m.noise_scale = 0.3 / std::sqrt(var * sh * sv);

  m.u.resize(cols);
  for (int c = 0; c < cols; ++c) m.u[c] = (c - (cols - 1) / 2.0) / m.half;
  const std::size_t nw = m.waves.size();
  m.cx.resize(nw * cols);
  m.sx.resize(nw * cols);
  for (std::size_t w = 0; w < nw; ++w)
    for (int c = 0; c < cols; ++c) {
      const double a = m.waves[w].kx * c + m.waves[w].phase;
      m.cx[w * cols + c] = std::cos(a);
      m.sx[w * cols + c] = std::sin(a);
    }
  return m;
}

constexpr int floor_div2(int x) { return x >= 0 ? x / 2 : -((1 - x) / 2); }

// White integer noise in [-2^19, 2^19) at (row, 2 pair) and (row, 2 pair + 1), any integers (the
// field extends past the edges): the two 32-bit halves of one counter-based splitmix64 output.
inline void noise_pair(std::uint64_t key, int row, int pair, double* two) {
  const std::uint64_t n = (std::uint64_t(std::uint32_t(row)) << 32) | std::uint32_t(pair);
  const std::uint64_t h = mix64(key + n * kGolden);
  constexpr std::int64_t kHalf = std::int64_t(1) << (kNoiseBits - 1);
  two[0] = double(std::int64_t(h >> (64 - kNoiseBits)) - kHalf);
  two[1] = double(std::int64_t((h >> (32 - kNoiseBits)) & ((1u << kNoiseBits) - 1)) - kHalf);
}

// Work in tiles of kTileRows rows x kColChunk columns: a tile reuses the chunk's slices of the
// wave tables (16 waves x 2 x 512 doubles = 128 KiB) and of the ring rows from cache.
constexpr int kColChunk = 512;
constexpr int kTileRows = 8;

// Generates rows [r0, r1).
void fill_rows(const Model& m, int r0, int r1, float* out) {
  const int cols = m.cols;
  const std::size_t nw = m.waves.size();
  const bool rough = (m.parts & kSurfaceRoughness) != 0;
  std::vector<double> p(nw * kTileRows), q(nw * kTileRows);

  // Noise line: columns [2 p0, 2 p1 + 2) cover [-kRh, cols + kRh).
  const int p0 = floor_div2(-kRh), p1 = floor_div2(cols + kRh - 1);
  const int off = -2 * p0 - kRh;  // line index of column -kRh
  std::vector<double> line(rough ? std::size_t(2) * (p1 - p0 + 1) : 0);
  // Ring of row-smoothed noise rows: a tile's rows and kRv on each side.
  constexpr int kRing = 2 * kRv + kTileRows;
  std::vector<double> ring(rough ? std::size_t(kRing) * cols : 0);
  auto slot = [&](int k) { return ring.data() + std::size_t(((k % kRing) + kRing) % kRing) * cols; };

  // Row-smoothed noise of image row k into its ring slot (exact: integers below 2^24).
  auto smooth_row = [&](int k) {
    for (int pr = p0; pr <= p1; ++pr) noise_pair(m.noise_key, k, pr, &line[2 * (pr - p0)]);
    const double* l = line.data() + off;
    double* dst = slot(k);
    for (int c = 0; c < cols; ++c)
      dst[c] = kKh[0] * (l[c] + l[c + 6]) + kKh[1] * (l[c + 1] + l[c + 5]) +
               kKh[2] * (l[c + 2] + l[c + 4]) + kKh[3] * l[c + 3];
  };
  if (rough)
    for (int k = r0 - kRv; k < r0 + kRv; ++k) smooth_row(k);

  double acc[kColChunk];
  double field[kColChunk];
  for (int rt = r0; rt < r1; rt += kTileRows) {
    const int nr = std::min(kTileRows, r1 - rt);
    // A cos(kx c + ky r + phase) = (A cos(ky r)) cx[c] - (A sin(ky r)) sx[c].
    for (int j = 0; j < nr; ++j)
      for (std::size_t w = 0; w < nw; ++w) {
        p[j * nw + w] = m.waves[w].amp * std::cos(m.waves[w].ky * (rt + j));
        q[j * nw + w] = -m.waves[w].amp * std::sin(m.waves[w].ky * (rt + j));
      }
    if (rough)
      for (int j = 0; j < nr; ++j) smooth_row(rt + j + kRv);

    for (int c0 = 0; c0 < cols; c0 += kColChunk) {
      const int n = std::min(kColChunk, cols - c0);
      for (int j = 0; j < nr; ++j) {
        const int r = rt + j;
        if (m.parts & kSurfaceForm) {
          const double v = (r - (m.rows - 1) / 2.0) / m.half;
          const double* uu = m.u.data() + c0;
          for (int i = 0; i < n; ++i) {
            const double u = uu[i];
            const double a = u * m.cyl_c + v * m.cyl_s;
            acc[i] = m.tilt_x * u + m.tilt_y * v + m.cyl * a * a + m.sph * (u * u + v * v);
          }
        } else {
          std::fill(acc, acc + n, 0.0);
        }
        for (std::size_t w = 0; w < nw; ++w) {
          const double pw = p[j * nw + w], qw = q[j * nw + w];
          const double* cx = m.cx.data() + w * cols + c0;
          const double* sx = m.sx.data() + w * cols + c0;
          for (int i = 0; i < n; ++i) acc[i] += pw * cx[i] + qw * sx[i];
        }
        if (rough) {
          // Column pass of the symmetric 13-tap kernel (exact: integers below 2^31).
          const double* mid = slot(r) + c0;
          for (int i = 0; i < n; ++i) field[i] = kKv[kRv] * mid[i];
          for (int t = 0; t < kRv; ++t) {
            const double kv = kKv[t];
            const double* a = slot(r - kRv + t) + c0;
            const double* b = slot(r + kRv - t) + c0;
            for (int i = 0; i < n; ++i) field[i] += kv * (a[i] + b[i]);
          }
          for (int i = 0; i < n; ++i) acc[i] += m.noise_scale * field[i];
        }
        float* o = out + std::size_t(r) * cols + c0;
        for (int i = 0; i < n; ++i) o[i] = static_cast<float>(acc[i]);
      }
    }
  }
}

}  // namespace

void make_surface(int rows, int cols, std::uint64_t seed, float* out, int threads,
                  unsigned parts) {
  if (rows < 1 || cols < 1)
    throw std::invalid_argument("make_surface: rows and cols must be positive, got " +
                                std::to_string(rows) + " x " + std::to_string(cols));
  if (!out) throw std::invalid_argument("make_surface: null output buffer");
  const Model m = build_model(rows, cols, seed, parts & kSurfaceAll);
  if (threads <= 0) threads = static_cast<int>(base::host_threads());
  threads = std::min(threads, rows);
  base::run_on_host_threads(unsigned(threads), [&](unsigned t) {
    fill_rows(m, int(std::int64_t(rows) * t / threads), int(std::int64_t(rows) * (t + 1) / threads), out);
  });
}

void make_layered_surface(int rows, int cols, std::uint64_t seed, double wavelength, float* out,
                          unsigned parts) {
  if (rows < 1 || cols < 1)
    throw std::invalid_argument("make_layered_surface: rows and cols must be positive, got " +
                                std::to_string(rows) + " x " + std::to_string(cols));
  if (!out) throw std::invalid_argument("make_layered_surface: null output buffer");
  if (!(wavelength >= 2.0))
    throw std::invalid_argument("make_layered_surface: the wavelength must be at least 2 samples");
  SplitMix64 rng(seed);
  const double half = std::max(std::max(rows, cols) - 1.0, 1.0) / 2.0;
  const double tilt_x = rng.sign() * rng.uniform(1.0, 4.0);
  const double tilt_y = rng.sign() * rng.uniform(1.0, 4.0);
  const double sag = rng.uniform(2.0, 5.0);
  constexpr double kRadius = 2.0;  // the cap's corner (rho^2 = 2) stays inside the sphere
  const double cap_scale = sag / (kRadius - std::sqrt(kRadius * kRadius - 2.0));
  const double theta = rng.uniform(0.0, 2.0 * kPi), phase = rng.uniform(0.0, 2.0 * kPi);
  const double k = 2.0 * kPi / wavelength, kx = k * std::cos(theta), ky = k * std::sin(theta);
  const std::uint64_t key = mix64(seed ^ 0x2545f4914f6cdd1dull);
  // Uniform on [-a, a) has RMS a / sqrt(3).
  const double rough_a = 0.3 * std::sqrt(3.0);
  for (int r = 0; r < rows; ++r) {
    const double v = (r - (rows - 1) / 2.0) / half;
    for (int c = 0; c < cols; ++c) {
      const double u = (c - (cols - 1) / 2.0) / half;
      double z = 0;
      if (parts & kSurfaceForm)
        z += tilt_x * u + tilt_y * v +
             cap_scale * (std::sqrt(kRadius * kRadius - u * u - v * v) - kRadius);
      if (parts & kSurfaceWaviness) z += std::cos(kx * c + ky * r + phase);
      if (parts & kSurfaceRoughness) {
        const std::uint64_t n = (std::uint64_t(std::uint32_t(r)) << 32) | std::uint32_t(c);
        const double unit = double(mix64(key + n * kGolden) >> 11) * 0x1.0p-53;  // [0, 1)
        z += rough_a * (2.0 * unit - 1.0);
      }
      out[std::size_t(r) * cols + c] = static_cast<float>(z);
    }
  }
}

}  // namespace io
