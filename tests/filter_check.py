#!/usr/bin/env python3
"""Independent checks of lwt2d filter's outputs with numpy (tests/cli_filter.sh runs them).

  separation DIR    DIR/{all,form,waviness,roughness}.npy are the layered surface and its known
                    parts, DIR/out/ the filter's bands, DIR/out.txt its stdout: each band matches
                    its part, the bands sum to the input, the printed Sa..Sku equal numpy's.
  x3p BAND.x3p BAND.npy INPUT.x3p
                    an X3P written by lwt2d (read here with zipfile and ElementTree) holds the
                    band's heights and the input's axes.
  png DIR N         DIR's band PNGs and mosaic.png (N x N surface, N <= 1024) decode, are N wide
                    (band maps: N plus the colour bar) and N high (plus margins), and show many shades.
  make-int PATH [I|L|F]
                    writes a hand-made X3P: int16 (I), int32 (L) or float32 (F) heights with an
                    increment and offset, and four invalid points (valid-points bits; NaN for F).
  check-int PATH DIR the filter's bands of that file: NaN exactly at the invalid points, elsewhere
                    they sum to offset + increment * value.
  make-bad DIR      corrupt zip, main.xml without SizeX, data file shorter than the axes say, a
                    data file that fails its MD5 (damaged.x3p) and one that passes it (checked.x3p),
                    a damaged entry without an MD5 (crc.x3p), heights beyond float32 (huge.x3p).
Exit status 0 when every check holds; each check prints one line.
"""
import hashlib
import sys
import zipfile
import xml.etree.ElementTree as ET

import numpy as np

failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    failures += 0 if ok else 1


def params(z):
    """ISO 25178-2 Sa, Sq, Sp, Sv, Sz, Ssk, Sku of the finite heights, mean removed (float64)."""
    z = z[np.isfinite(z)].astype(np.float64)
    d = z - z.mean()
    sq = np.sqrt(np.mean(d ** 2))
    sp, sv = d.max(), abs(d.min())
    return [np.mean(np.abs(d)), sq, sp, sv, sp + sv, np.mean(d ** 3) / sq ** 3, np.mean(d ** 4) / sq ** 4]


def printed_params(text):
    rows = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 8 and f[0] in ("input", "form", "waviness", "roughness"):
            try:
                rows[f[0]] = [float(x) for x in f[1:8]]
            except ValueError:
                pass
    return rows


def rel_rms(band, part):
    b, p = band - band.mean(), part - part.mean()
    return np.sqrt(np.mean((b - p) ** 2) / np.mean(p ** 2))


def separation(d):
    out = open(f"{d}/out.txt").read()
    x = np.load(f"{d}/all.npy").astype(np.float64)
    bands = {b: np.load(f"{d}/out/{b}.npy") for b in ("form", "waviness", "roughness")}
    # Tolerances (relative RMS, 1024^2 layered surface, roughness=1-3, waviness=4-6, form=rest):
    # white roughness keeps 4^-3 of its variance below level 3, a floor of 0.125, plus the
    # wave's tail in level 3 (~0.08); the wave loses that tail and takes the roughness left in
    # levels 4-6 (~0.04 um of 0.71); the form gives the other bands the end effects of its slope
    # under symmetric extension (~0.05 um of 2). Swapped or unfiltered bands err by 1 or more.
    limits = {"roughness": 0.20, "waviness": 0.15, "form": 0.05}
    for b, lim in limits.items():
        e = rel_rms(bands[b].astype(np.float64), np.load(f"{d}/{b}.npy").astype(np.float64))
        check(e < lim, f"{b} band matches its known part: relative RMS error {e:.4f} < {lim}")
    # Sum: each band is a float32 inverse transform of float32 coefficients; ~20 lifting steps of
    # rounding on values up to max|x| keep the sum within 1e-5 of max|x| (seen: ~2e-6).
    s = sum(b.astype(np.float64) for b in bands.values())
    e = np.abs(s - x).max() / np.abs(x).max()
    check(e < 1e-5, f"the bands sum to the input: max error {e:.2e} of max |input| < 1e-5")
    # Printed with 6 significant digits: relative rounding <= 5e-6.
    got = printed_params(out)
    names = ["Sa", "Sq", "Sp", "Sv", "Sz", "Ssk", "Sku"]
    for b, z in [("input", x)] + list(bands.items()):
        if b not in got:
            check(False, f"{b}: no parameter line printed")
            continue
        ref = params(z)
        bad = [f"{n} {g} vs {r:.7g}" for n, g, r in zip(names, got[b], ref) if abs(g - r) > 1e-5 * abs(r) + 1e-9]
        check(not bad, f"{b}: printed Sa..Sku equal numpy's {['%.6g' % r for r in ref]}" + (f": {bad}" if bad else ""))


def read_x3p(path):
    z = zipfile.ZipFile(path)
    root = ET.fromstring(z.read("main.xml"))
    r1, r3 = root.find("Record1"), root.find("Record3")
    ax = r1.find("Axes")
    nx = int(r3.find("MatrixDimension/SizeX").text)
    ny = int(r3.find("MatrixDimension/SizeY").text)
    dtype = {"I": "<i2", "L": "<i4", "F": "<f4", "D": "<f8"}[ax.find("CZ/DataType").text]
    data = np.frombuffer(z.read(r3.find("DataLink/PointDataLink").text), dtype).reshape(ny, nx)
    return data, float(ax.find("CX/Increment").text), float(ax.find("CY/Increment").text)


def x3p(band_x3p, band_npy, input_x3p):
    h, dx, dy = read_x3p(band_x3p)
    b = np.load(band_npy)
    _, idx, idy = read_x3p(input_x3p)
    same = h.shape == b.shape and np.array_equal(h.astype(np.float32), b, equal_nan=True)
    check(same, f"{band_x3p}: heights equal the band's .npy ({h.shape}, {h.dtype})")
    check((dx, dy) == (idx, idy), f"{band_x3p}: increments {dx:g}, {dy:g} equal the input's")
    z = zipfile.ZipFile(band_x3p)
    root = ET.fromstring(z.read("main.xml"))
    data_md5 = hashlib.md5(z.read(root.find("Record3/DataLink/PointDataLink").text)).hexdigest()
    xml_md5 = hashlib.md5(z.read("main.xml")).hexdigest()
    check(root.find("Record3/DataLink/MD5ChecksumPointData").text.lower() == data_md5
          and z.read(root.find("Record4/ChecksumFile").text).decode().split()[0].lower() == xml_md5,
          f"{band_x3p}: MD5 checksums of the data file and main.xml hold")


def png(d, n):
    from PIL import Image  # Debian's python3-pil, with python3-matplotlib
    n = int(n)
    for name in ("form", "waviness", "roughness", "mosaic"):
        im = Image.open(f"{d}/{name}.png")
        im.load()
        w, h = im.size
        shades = len(set(im.convert("RGB").getdata()))
        if name == "mosaic":
            ok = (w, h) == (n, n)
        else:
            ok = w > n and h >= n
        check(ok and shades > 50, f"{name}.png decodes: {w} x {h}, {shades} colours ({im.mode})")


MAIN_XML = """<?xml version="1.0" encoding="UTF-8"?>
<p:ISO5436_2 xmlns:p="http://www.opengps.eu/2008/ISO5436_2">
 <Record1><Revision>ISO5436 - 2000</Revision><FeatureType>SUR</FeatureType>
  <Axes>
   <CX><AxisType>I</AxisType><DataType>D</DataType><Increment>2e-06</Increment><Offset>0</Offset></CX>
   <CY><AxisType>I</AxisType><DataType>D</DataType><Increment>3e-06</Increment><Offset>0</Offset></CY>
   <CZ><AxisType>A</AxisType><DataType>{dtype}</DataType><Increment>1e-08</Increment><Offset>5e-07</Offset></CZ>
  </Axes></Record1>
 <Record2><Creator>filter_check.py</Creator></Record2>
 <Record3><MatrixDimension>{size}<SizeZ>1</SizeZ></MatrixDimension>
  <DataLink><PointDataLink>bindata/data.bin</PointDataLink>{md5}{valid}</DataLink></Record3>
</p:ISO5436_2>
"""
INT_SHAPE = (40, 48)  # rows (Y) x columns (X)
INVALID = [(0, 0), (3, 7), (17, 30), (39, 47)]


def int_heights():
    r, c = np.mgrid[0:INT_SHAPE[0], 0:INT_SHAPE[1]]
    return (300 * np.sin(r / 5.0) + 200 * np.cos(c / 3.0) + 7 * ((r * c) % 5)).astype("<i2")


def write_zip(path, xml, data, valid=None):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("main.xml", xml)
        z.writestr("bindata/data.bin", data)
        if valid is not None:
            z.writestr("bindata/valid.bin", valid)


def make_int(path, dtype="I"):
    """int16 (I) or int32 (L) heights with a valid-points file, or float32 (F) with NaN."""
    valid = np.ones(INT_SHAPE, bool)
    for rc in INVALID:
        valid[rc] = False
    size = f"<SizeX>{INT_SHAPE[1]}</SizeX><SizeY>{INT_SHAPE[0]}</SizeY>"
    if dtype == "F":
        h = int_heights().astype("<f4")
        h[~valid] = np.nan
        write_zip(path, MAIN_XML.format(dtype="F", size=size, md5="", valid=""), h.tobytes())
        return
    bits = np.packbits(valid.ravel(), bitorder="little").tobytes()  # LSB first, 1 = valid
    h = int_heights().astype({"I": "<i2", "L": "<i4"}[dtype])
    write_zip(path, MAIN_XML.format(dtype=dtype, size=size, md5="",
                                    valid="<ValidPointsLink>bindata/valid.bin</ValidPointsLink>"),
              h.tobytes(), bits)


def check_int(path, d):
    bands = [np.load(f"{d}/{b}.npy").astype(np.float64) for b in ("form", "waviness", "roughness")]
    s = sum(bands)
    nan = np.isnan(s)
    expect = np.zeros(INT_SHAPE, bool)
    for rc in INVALID:
        expect[rc] = True
    check(np.array_equal(nan, expect), f"{path}: NaN exactly at the {len(INVALID)} invalid points")
    ref = 5e-7 + 1e-8 * int_heights().astype(np.float64)
    e = np.abs(s - ref)[~expect].max() / np.abs(ref).max()
    # float32 heights and transforms: within 1e-5 of the largest height (see separation).
    check(e < 1e-5, f"{path}: valid heights are offset + increment * value (max error {e:.2e})")


def make_bad(d):
    make_int(f"{d}/good.x3p")
    raw = bytearray(open(f"{d}/good.x3p", "rb").read())
    raw[len(raw) // 3: len(raw) // 3 + 64] = b"\0" * 64
    open(f"{d}/corrupt.x3p", "wb").write(bytes(raw[: len(raw) - 30]))
    h = int_heights().tobytes()
    size = f"<SizeX>{INT_SHAPE[1]}</SizeX><SizeY>{INT_SHAPE[0]}</SizeY>"
    write_zip(f"{d}/nosize.x3p", MAIN_XML.format(dtype="I", size=f"<SizeY>{INT_SHAPE[0]}</SizeY>", md5="", valid=""), h)
    write_zip(f"{d}/short.x3p", MAIN_XML.format(dtype="I", size=size, md5="", valid=""), h[:-100])
    damaged = bytearray(h)
    damaged[100] ^= 1
    md5 = f"<MD5ChecksumPointData>{hashlib.md5(h).hexdigest()}</MD5ChecksumPointData>"
    write_zip(f"{d}/damaged.x3p", MAIN_XML.format(dtype="I", size=size, md5=md5, valid=""), bytes(damaged))
    upper = f"<MD5ChecksumPointData>{hashlib.md5(h).hexdigest().upper()}</MD5ChecksumPointData>"
    write_zip(f"{d}/checked.x3p", MAIN_XML.format(dtype="I", size=size, md5=upper, valid=""), h)  # hex in either case
    write_zip(f"{d}/badxml.x3p", "<p:ISO5436_2><Record1>", h)
    # No MD5 in main.xml: the zip entry's own CRC-32 must catch a damaged byte. Stored, not
    # deflated, so that the byte flips in place and only the CRC can tell.
    with zipfile.ZipFile(f"{d}/crc.x3p", "w", zipfile.ZIP_STORED) as z:
        z.writestr("main.xml", MAIN_XML.format(dtype="I", size=size, md5="", valid=""))
        z.writestr("bindata/data.bin", h)
    raw = bytearray(open(f"{d}/crc.x3p", "rb").read())
    raw[raw.index(h[:64]) + 100] ^= 1
    open(f"{d}/crc.x3p", "wb").write(bytes(raw))
    # Finite float64 heights beyond float32's range (offset + increment * value, here 1e-8 * 1e300).
    huge = np.zeros(INT_SHAPE, "<f8")
    huge[5, 6] = 1e300
    write_zip(f"{d}/huge.x3p", MAIN_XML.format(dtype="D", size=size, md5="", valid=""), huge.tobytes())


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"separation": separation, "x3p": x3p, "png": png, "make-int": make_int, "check-int": check_int,
     "make-bad": make_bad}[cmd](*args)
    sys.exit(1 if failures else 0)
