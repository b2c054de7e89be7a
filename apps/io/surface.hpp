// A deterministic synthetic engineering surface (DESIGN §7): the lwt2d app's default input.
//
// Heights in micrometres on a grid of unit spacing, the sum of three parts that surface metrology
// separates with the DWT (ISO 16610 / 25178 vocabulary):
// - form: a tilted plane plus a gentle cylinder (random axis) and sphere curvature, about 5-20 um
//   over the field;
// - waviness: four plane waves of long wavelength (a sixth to a half of the larger side, at least
//   16 samples), random direction and phase, 0.4-1.2 um each;
// - roughness: twelve plane waves of 16-64 samples wavelength (about 0.2 um RMS together) plus a
//   band-limited random field of 0.3 um RMS: white integer noise from a counter-based splitmix64
//   hash of (seed, row, column), smoothed by a separable 7 x 13 tap kernel (three box passes of
//   width 3 along rows and 5 along columns: an anisotropic "lay", correlation ~1.4 x 2.4 samples).
//
// Determinism: a sample depends only on (seed, rows, cols, row, column), never on how rows are
// split among threads, so the output is bit-identical for every thread count. The random field
// is exact integer arithmetic (the noise and both kernel sums stay below 2^53), so it does not
// depend on summation order or vectorisation either; the form and waves go through libm's
// cos/sin, hence identical for one build and C library.
//
// Cost: O(1) per sample (half a hash, 7 + 13 taps, 32 table multiply-adds) plus per-row and
// per-column tables, in tiles of 8 rows x 512 columns that reuse the tables from cache; rows are
// cut into one contiguous block per thread (std::thread). About 10 ns per sample per core.
#pragma once

#include <cstdint>

namespace io {

// Which parts to generate; the parts of one seed sum to the whole surface (up to float rounding).
enum SurfacePart : unsigned {
  kSurfaceForm = 1u,
  kSurfaceWaviness = 2u,
  kSurfaceRoughness = 4u,
  kSurfaceAll = 7u,
};

// Fills out[0 .. rows*cols) (row-major) with the surface for `seed`. threads <= 0: one per
// core the process started with (base/host_threads.hpp). Throws std::invalid_argument for rows
// or cols below 1 or a null `out`.
void make_surface(int rows, int cols, std::uint64_t seed, float* out, int threads = 0,
                  unsigned parts = kSurfaceAll);

// A surface whose parts each sit in known wavelet levels, for lwt2d filter's tests and demo:
// heights in micrometres on a grid of unit spacing, u, v in [-1, 1] along the larger side.
// - form: a tilted plane (slopes of 1-4 um per half field) plus a sphere cap of normalised
//   radius 2 that rises 2-5 um from the corners to the centre;
// - waviness: one plane wave of `wavelength` samples, amplitude 1 um, random direction and
//   phase (detail levels l with 2^l <= wavelength < 2^(l+1) hold most of it);
// - roughness: white noise, uniform, 0.3 um RMS, from splitmix64 of (seed, row, column): it
//   keeps 4^-k of its variance below detail level k.
// Deterministic for (rows, cols, seed, wavelength). Throws std::invalid_argument for rows or
// cols below 1, a null `out`, or a wavelength below 2 samples.
void make_layered_surface(int rows, int cols, std::uint64_t seed, double wavelength, float* out,
                          unsigned parts = kSurfaceAll);

}  // namespace io
