#!/usr/bin/env python3
"""Cross-check of the reference CDF 9/7 lifting against PyWavelets (DESIGN section 4.1).

Usage: pywt_check.py DIR

DIR holds pairs written by tests/test_pywt.cpp, float64 .npy:
  1d_<name>_x.npy  input, shape (1, n)      1d_<name>_c.npy  lwt::ref::forward_1d: [L | H], (1, n)
  2d_<name>_x.npy  input, shape (H, W)      2d_<name>_c.npy  lwt::ref::forward_2d, 1 level (Mallat)

PyWavelets 'bior4.4' with mode 'reflect' (whole-sample symmetric extension, as ours) uses the
CDF 9/7 filters with a different normalisation and sign, and pads its output: each dwt output
has floor((n + 8 - 1) / 2) coefficients, ours starting at index 2 (verified for n = 2..51 and the
2-D shapes of the test; the offset is the same on both axes). So, with L = ceil(n/2) low-pass and
H = floor(n/2) high-pass coefficients:
  1-D: cA[2:2+L] = sqrt(2) * ours_L     cD[2:2+H] = -ours_H / sqrt(2)
  2-D (pywt.dwt2 returns cA, (cH, cV, cD); our Mallat layout, h = ceil(rows/2), w = ceil(cols/2)):
       LL (top-left h x w)      = cA / 2
       HL (top-right, row high-pass, column low-pass)   = -cV
       LH (bottom-left, row low-pass, column high-pass) = -cH
       HH (bottom-right)        = 2 cD
  each pywt array cut at [2:2+rows of the band, 2:2+cols of the band].

Tolerance: 1e-9, relative to the largest expected coefficient of the case. Both sides compute in
double. PyWavelets convolves with its tabulated bior4.4 taps; the taps implied by the lifting
constants of ITU-T T.800 Table F.4 (which we use) differ from them by up to 6e-13, so an output,
a sum of at most 9 taps times the input, may differ by ~3e-12 of the input's scale (observed:
<= 4e-12 relative). 1e-9 keeps a margin of over 100 above that, while any real defect (a wrong
sign, scale, boundary rule, sample offset or constant digit up to the 9th) shows up as 1e-8..1.

Exit status: 0 all cases match, 1 a mismatch (the case and the error are printed), 2 bad usage,
missing files or no PyWavelets.
"""
import glob
import math
import os
import sys

TOL = 1e-9
OFF = 2


def die(msg, code=2):
    print("pywt_check: " + msg, file=sys.stderr)
    sys.exit(code)


try:
    import numpy as np
    import pywt
except ImportError as e:  # the gtest checks this first and skips; keep a clear line anyway
    die(f"{e}; install numpy and PyWavelets (Debian: apt-get install python3-pywt)")


def cut(a, rows, cols):
    if a.shape[0] < OFF + rows or a.shape[1] < OFF + cols:
        raise ValueError(f"pywt output {a.shape} too small for a {rows} x {cols} band at offset {OFF}")
    return a[OFF:OFF + rows, OFF:OFF + cols]


def expected_1d(x):
    n = x.size
    nl, nh = (n + 1) // 2, n // 2
    ca, cd = pywt.dwt(x, "bior4.4", mode="reflect")
    if ca.size < OFF + nl or cd.size < OFF + nh:
        raise ValueError(f"pywt output lengths {ca.size}, {cd.size} too short for n = {n}")
    low = ca[OFF:OFF + nl] / math.sqrt(2.0)
    high = -cd[OFF:OFF + nh] * math.sqrt(2.0)
    return np.concatenate([low, high])


def expected_2d(x):
    rows, cols = x.shape
    h, w = (rows + 1) // 2, (cols + 1) // 2
    ca, (ch, cv, cd) = pywt.dwt2(x, "bior4.4", mode="reflect")
    e = np.empty_like(x)
    e[:h, :w] = cut(ca, h, w) / 2.0            # LL
    e[:h, w:] = -cut(cv, h, cols - w)          # HL: high-pass along rows
    e[h:, :w] = -cut(ch, rows - h, w)          # LH: high-pass along columns
    e[h:, w:] = 2.0 * cut(cd, rows - h, cols - w)  # HH
    return e


def main(argv):
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        die("usage: pywt_check.py DIR (a directory of 1d_*/2d_* _x.npy/_c.npy pairs)")
    inputs = sorted(glob.glob(os.path.join(argv[1], "[12]d_*_x.npy")))
    if not inputs:
        die(f"no cases (1d_*_x.npy or 2d_*_x.npy) in {argv[1]}")
    worst = 0.0
    failed = []
    for xin in inputs:
        name = os.path.basename(xin)[:-len("_x.npy")]
        cfile = xin[:-len("_x.npy")] + "_c.npy"
        if not os.path.exists(cfile):
            die(f"{cfile} is missing (the output of case {name})")
        x = np.load(xin).astype(np.float64)
        c = np.load(cfile).astype(np.float64)
        if x.shape != c.shape:
            die(f"case {name}: input shape {x.shape} differs from output shape {c.shape}")
        try:
            e = expected_1d(x.ravel()).reshape(c.shape) if name.startswith("1d_") else expected_2d(x)
        except ValueError as err:
            die(f"case {name}: {err}")
        scale = max(float(np.max(np.abs(e))), 1e-300)
        diff = np.abs(c - e)
        rel = float(np.max(diff)) / scale
        worst = max(worst, rel)
        where = np.unravel_index(int(np.argmax(diff)), diff.shape)
        status = "ok" if rel <= TOL else "MISMATCH"
        print(f"{name:>14s} shape {str(x.shape):>10s}  max relative error {rel:.3e}  {status}")
        if rel > TOL:
            failed.append(f"{name} at index {tuple(int(i) for i in where)}: ours {c[where]!r}, "
                          f"pywt-derived {e[where]!r}, relative error {rel:.3e}")
    print(f"pywt_check: {len(inputs)} cases, max relative error {worst:.3e} (tolerance {TOL:g}), "
          f"PyWavelets {pywt.__version__}")
    if failed:
        for f in failed:
            print("pywt_check: MISMATCH " + f, file=sys.stderr)
        sys.exit(1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
