#!/usr/bin/env python3
"""bench/platforms/make_platform.py: every platform generated from a copy of a calibrated sampling
folder, checked against StarPU 1.4.10's readers as ported here (the bus matrices by a line-for-line
port of load_bus_bandwidth_file_content, the models by their grammar) and against the published
figures the README states.

    python3 tests/test_make_platform.py [SAMPLING] [unittest options]

SAMPLING: the calibrated folder (bus/<host>.*, codelets/45/*.<host>); else $FNNDTPS_PLATFORM_SRC;
else bench/platforms/h200/sampling. Exit 77 (skipped) when it does not exist.
"""
import hashlib
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "bench" / "platforms" / "make_platform.py"
if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
    SRC = Path(sys.argv.pop(1))
else:
    SRC = Path(os.environ.get("FNNDTPS_PLATFORM_SRC") or ROOT / "bench" / "platforms" / "h200" / "sampling")

# The figures bench/platforms/README.md states (time ratio = H200 figure / card figure).
H200_BW, H200_FP32 = 4800.0, 67.0
CARDS = {0: ("NVIDIA GeForce GTX 750 Ti", 2 << 30, 86.4, 1.39), 1: ("NVIDIA GeForce GTX 1080", 8 << 30, 320.0, 8.87)}
# Compute capability, SMs, resident threads per SM, boost MHz (NVIDIA's specifications).
DEVICES = {"h200": ("9.0", "132", "2048", "1980"), 0: ("5.0", "5", "2048", "1085"), 1: ("6.1", "20", "2048", "1733")}
PCIE_MBS, PCIE_US = 12000.0, 10.0
NAMES = ("h200", "h200x2", "h200x4", "h200x8", "seed2017")
NGPU = {"h200": 1, "h200x2": 2, "h200x4": 4, "h200x8": 8, "seed2017": 2}
EXTS = ("affinity", "bandwidth", "config", "latency", "platform.xml", "platform.v4.xml")
SHARED = re.compile(r"^(Interconnect|Host|NUMA\d+)$")


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def tree_hash(folder):
    h = hashlib.sha256()
    for p in sorted(Path(folder).rglob("*")):
        h.update(str(p.relative_to(folder)).encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


def starpu_load_matrix(path, maxnodes):
    """load_bus_bandwidth_file_content (perfmodel_bus.c, StarPU 1.4.10), line for line; None where
    StarPU reports the file bogus."""
    data, pos, EOF = Path(path).read_text(), 0, None
    num = re.compile(r"[+-]?(nan|inf(inity)?|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)", re.I)

    def getc():
        nonlocal pos
        if pos >= len(data):
            return EOF
        pos += 1
        return data[pos - 1]

    def ungetc(c):
        nonlocal pos
        if c is not EOF:
            pos -= 1

    def drop_comments():  # _starpu_drop_comments
        nonlocal pos
        while True:
            c = getc()
            if c == "#":
                end = data.find("\n", pos)
                pos = len(data) if end < 0 else end + 1
            elif c != "\n":
                ungetc(c)
                return

    def read_double():  # fscanf("%le"): skips white space, then a number
        nonlocal pos
        while pos < len(data) and data[pos].isspace():
            pos += 1
        m = num.match(data, pos)
        if not m:
            return None
        pos = m.end()
        return float(m.group(0))

    mat = [[math.nan] * maxnodes for _ in range(maxnodes)]
    src = 0
    while src < maxnodes:
        drop_comments()
        dst, n = 0, None
        while dst < maxnodes:
            v = read_double()
            if v is None:
                return None
            n = getc()
            if n == "\n":
                break
            if n != "\t":
                return None
            mat[src][dst] = v
            n = getc()
            if n == "\n":
                break
            ungetc(n)
            n = "\t"
            dst += 1
        for d in range(dst, maxnodes):
            mat[src][d] = math.nan
        while n == "\t":
            n = getc()
            if n == "\n":
                break
            ungetc(n)
            v = read_double()
            if v is not None and not math.isnan(v):
                return None  # "Too many nodes ... for this configuration"
            n = getc()
        if n != "\n":
            return None
        n = getc()
        if n is EOF:
            break
        ungetc(n)
        src += 1
    return mat


def load_models(path):
    """{(type, devid): [entry tokens]} of one history model file (parse_model_file's grammar)."""
    toks = [l.split("#", 1)[0].split() for l in Path(path).read_text().splitlines()]
    toks = [t for t in toks if t]
    it = iter(toks)
    assert next(it) == ["45"]
    combs = {}
    for _ in range(int(next(it)[0])):
        devs = [(int(next(it)[0]), int(next(it)[0]), int(next(it)[0])) for _ in range(int(next(it)[0]))]
        assert len(devs) == 1, path
        entries = []
        for _ in range(int(next(it)[0])):
            nentries = int(next(it)[0])
            assert len(next(it)) == 9 and len(next(it)) == 3
            multi = next(it)
            assert len(multi) == 1 + int(multi[0])
            entries += [next(it) for _ in range(nentries)]
        key = devs[0][:2]
        assert key not in combs, f"{path}: two combinations for {key}"
        combs[key] = entries
    assert next(it, None) is None, f"{path}: trailing data"
    return combs


def platform(path):
    root = ET.parse(path).getroot()
    zone = root.find("AS")
    hosts = {h.get("id"): {p.get("id"): p.get("value") for p in h.findall("prop")} for h in zone.findall("host")}
    links = {l.get("id"): l.attrib for l in zone.findall("link")}
    routes = {(r.get("src"), r.get("dst")): [c.get("id") for c in r.findall("link_ctn")] for r in zone.findall("route")}
    return root, hosts, links, routes


class MakePlatform(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="test_make_platform."))
        try:
            cls.generate()
        except BaseException:
            shutil.rmtree(cls.tmp)
            raise

    @classmethod
    def generate(cls):
        cls.src_hash = tree_hash(SRC)
        cls.src = cls.tmp / "in" / "sampling"
        shutil.copytree(SRC, cls.src)
        cls.host = next((cls.src / "bus").glob("*.config")).name[:-len(".config")]
        cls.symbols = sorted(p.name[:-len(cls.host) - 1] for p in (cls.src / "codelets" / "45").glob(f"*.{cls.host}"))
        _, hosts, _, _ = platform(cls.src / "bus" / f"{cls.host}.platform.v4.xml")
        cls.src_ncpu = sum(1 for h in hosts if re.fullmatch(r"CPU\d+", h))
        cls.out = {}
        for name in NAMES:
            r = run("--from", cls.src, "--name", name, "--out", cls.tmp / name)
            assert r.returncode == 0, f"{name}: {r.stderr}"
            cls.out[name] = cls.tmp / name / "sampling"

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def sfile(self, rel):
        return self.src / rel.replace("HOST", self.host)

    def ofile(self, name, rel):
        return self.out[name] / rel.replace("HOST", name)

    def ncpu(self, name):
        return 4 if name == "seed2017" else NGPU[name] * self.src_ncpu

    def test_file_set(self):
        for name in NAMES:
            want = {f"bus/{name}.{e}" for e in EXTS} | {f"codelets/45/{s}.{name}" for s in self.symbols}
            got = {p.relative_to(self.out[name]).as_posix() for p in self.out[name].rglob("*") if p.is_file()}
            self.assertEqual(got, want, name)

    def test_h200_is_a_copy(self):  # the platform files with CUDA0's description added
        described = re.compile(rb'[ \t]*<prop id="fnndtps_[a-z_]+" value="[^"]*"/>\n')
        for e in EXTS:
            out, src = self.ofile("h200", f"bus/HOST.{e}").read_bytes(), self.sfile(f"bus/HOST.{e}").read_bytes()
            if e.startswith("platform"):
                self.assertEqual(len(described.findall(out)), 4, e)
                out = described.sub(b"", out)
            self.assertEqual(out, src, e)
        for s in self.symbols:
            self.assertEqual(self.ofile("h200", f"codelets/45/{s}.HOST").read_bytes(),
                             self.sfile(f"codelets/45/{s}.HOST").read_bytes())

    def test_platform_xml(self):
        _, _, slinks, sroutes = platform(self.sfile("bus/HOST.platform.v4.xml"))
        src_has_through = any(l.endswith(" through") for l in sroutes[("RAM", "CUDA0")])
        for name in NAMES:
            n = NGPU[name]
            with self.subTest(name=name):
                root, hosts, links, routes = platform(self.ofile(name, "bus/HOST.platform.v4.xml"))
                self.assertEqual(root.get("version"), "4")
                self.assertIn("MAIN", hosts)
                self.assertIn("RAM", hosts)
                self.assertEqual(sorted(h for h in hosts if h.startswith("CPU")), sorted(f"CPU{i}" for i in range(self.ncpu(name))))
                self.assertEqual(sorted(h for h in hosts if h.startswith("CUDA")), sorted(f"CUDA{k}" for k in range(n)))
                for ids in routes.values():
                    for i in ids:
                        self.assertIn(i, links)
                # one distinct host link pair per GPU, and GPU-private PCIe links on its routes
                private = []
                for k in range(n):
                    down, up = routes[("RAM", f"CUDA{k}")], routes[(f"CUDA{k}", "RAM")]
                    self.assertEqual(down[0], f"RAM-CUDA{k}")
                    self.assertEqual(up[0], f"CUDA{k}-RAM")
                    private.append({l for l in down + up if not SHARED.match(l)})
                for a in range(n):
                    for b in range(a + 1, n):
                        self.assertFalse(private[a] & private[b], f"CUDA{a} and CUDA{b} share {private[a] & private[b]}")
                for i in range(n):
                    for j in range(n):
                        if i == j:
                            continue
                        ids = routes[(f"CUDA{i}", f"CUDA{j}")]
                        self.assertEqual(ids[0], f"CUDA{i}-CUDA{j}")
                        self.assertEqual(len(ids), len(set(ids)))
                        if src_has_through:  # _starpu_simgrid_count_ngpus: 1 GPU behind the bridge
                            through = None
                            for l in ids:
                                if l.endswith(" through"):
                                    through = l
                                elif l.endswith(" up"):
                                    break
                            self.assertIsNotNone(through)
                            users = [k for k in range(n) if through in routes[(f"CUDA{k}", "RAM")]]
                            self.assertEqual(users, [j])
                for k in range(n):
                    props = hosts[f"CUDA{k}"]
                    device = DEVICES[k] if name == "seed2017" else DEVICES["h200"]
                    self.assertEqual(tuple(props.get(p) for p in ("fnndtps_cc", "fnndtps_sms", "fnndtps_threads_per_sm",
                                                                  "fnndtps_clock_mhz")), device)
                    if n > 1:
                        self.assertEqual(props.get("memcpy_peer"), "1")
                    if name == "seed2017":
                        self.assertEqual(props["model"], CARDS[k][0])
                        self.assertEqual(int(props["memsize"]), CARDS[k][1])
                        for l in (f"RAM-CUDA{k}", f"CUDA{k}-RAM"):
                            self.assertAlmostEqual(float(links[l]["bandwidth"][:-3]), PCIE_MBS * 1e6)
                            self.assertAlmostEqual(float(links[l]["latency"][:-1]), PCIE_US * 1e-6)
                    elif name != "h200":
                        self.assertEqual(links[f"RAM-CUDA{k}"]["bandwidth"], slinks["RAM-CUDA0"]["bandwidth"])
                        self.assertEqual(links[f"CUDA{k}-RAM"]["bandwidth"], slinks["CUDA0-RAM"]["bandwidth"])
                        self.assertEqual(links[f"RAM-CUDA{k}"]["latency"], slinks["RAM-CUDA0"]["latency"])
                # version 3: the same machine, without units
                root3, hosts3, links3, routes3 = platform(self.ofile(name, "bus/HOST.platform.xml"))
                self.assertEqual(root3.get("version"), "3")
                self.assertEqual(set(hosts3), set(hosts))
                self.assertEqual(set(links3), set(links))
                self.assertEqual(routes3, routes)
                for l in links3.values():
                    float(l["bandwidth"]), float(l["latency"])

    def test_matrices(self):
        src = {e: starpu_load_matrix(self.sfile(f"bus/HOST.{e}"), 16) for e in ("bandwidth", "latency")}
        for name in NAMES:
            n = NGPU[name]
            for maxnodes in (16, 32):
                with self.subTest(name=name, maxnodes=maxnodes):
                    bw = starpu_load_matrix(self.ofile(name, "bus/HOST.bandwidth"), maxnodes)
                    lat = starpu_load_matrix(self.ofile(name, "bus/HOST.latency"), maxnodes)
                    self.assertIsNotNone(bw)
                    self.assertIsNotNone(lat)
                    for a in range(maxnodes):
                        for b in range(maxnodes):
                            inside = a <= n and b <= n
                            self.assertEqual(math.isnan(bw[a][b]), not inside, (a, b))
                            self.assertEqual(math.isnan(lat[a][b]), not inside, (a, b))
                            if inside and a == b:
                                self.assertEqual((bw[a][b], lat[a][b]), (0.0, 0.0))
                    for k in range(1, n + 1):
                        if name == "seed2017":
                            self.assertEqual((bw[0][k], bw[k][0], lat[0][k], lat[k][0]), (PCIE_MBS, PCIE_MBS, PCIE_US, PCIE_US))
                        else:
                            self.assertEqual((bw[0][k], bw[k][0]), (src["bandwidth"][0][1], src["bandwidth"][1][0]))
                            self.assertEqual((lat[0][k], lat[k][0]), (src["latency"][0][1], src["latency"][1][0]))
                        for j in range(1, n + 1):
                            if j != k:  # peer copies: direct (the slower link) or staged via host
                                want = (min(bw[k][0], bw[0][j]) if name != "seed2017"
                                        else 1 / (1 / bw[k][0] + 1 / bw[0][j]))
                                self.assertAlmostEqual(bw[k][j] / want, 1, delta=1e-6)
                                self.assertAlmostEqual(lat[k][j] / (lat[k][0] + lat[0][j]), 1, delta=1e-6)

    def test_config_and_affinity(self):
        for name in NAMES:
            cfg = self.ofile(name, "bus/HOST.config").read_text()
            self.assertRegex(cfg, rf"(?m)^{self.ncpu(name)} # Number of CPUs$")
            self.assertRegex(cfg, rf"(?m)^{NGPU[name]} # Number of CUDA (nodes|devices)$")
            rows = [l.split() for l in self.ofile(name, "bus/HOST.affinity").read_text().splitlines() if not l.startswith("#")]
            self.assertEqual([r[0] for r in rows], [str(k) for k in range(NGPU[name])])

    def test_h200xN_models(self):
        for name in ("h200x2", "h200x4", "h200x8"):
            for s in self.symbols:
                src = load_models(self.sfile(f"codelets/45/{s}.HOST"))
                got = load_models(self.ofile(name, f"codelets/45/{s}.HOST"))
                self.assertEqual(got.get((0, 0)), src.get((0, 0)))
                want_keys = {k for k in src if k[0] != 1} | ({(1, d) for d in range(NGPU[name])} if (1, 0) in src else set())
                self.assertEqual(set(got), want_keys)
                for d in range(NGPU[name]):
                    self.assertEqual(got.get((1, d)), src.get((1, 0)), (name, s, d))

    def test_seed2017_scaled_models(self):
        scaled = 0
        for s in self.symbols:
            src = load_models(self.sfile(f"codelets/45/{s}.HOST"))
            got = load_models(self.ofile("seed2017", f"codelets/45/{s}.HOST"))
            self.assertEqual(got.get((0, 0)), src.get((0, 0)))
            if (1, 0) not in src:
                continue
            for d, (_, _, bw, fp32) in CARDS.items():
                ratio = H200_BW / bw if s.startswith("lwt_") else H200_FP32 / fp32
                self.assertTrue("gemm" in s or s.startswith("lwt_"), s)
                want, have = src[(1, 0)], got[(1, d)]
                self.assertEqual([e[:3] + e[7:] for e in have], [e[:3] + e[7:] for e in want])
                for e_src, e_got in zip(want, have):
                    for col, power in ((3, 1), (4, 1), (5, 1), (6, 2)):  # mean, dev, sum, sum2
                        want_v = float(e_src[col]) * ratio ** power
                        self.assertLessEqual(abs(float(e_got[col]) - want_v), 1e-9 * abs(want_v), (s, d, e_src[0], col))
                    scaled += 1
        self.assertGreater(scaled, 0)

    def test_bad_input(self):
        def bad(args, needle):
            r = run(*args)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIn(needle, r.stderr)

        out = self.tmp / "bad-out"
        bad(["--from", self.src, "--name", "h200x3", "--out", out], "h200x3")
        empty = self.tmp / "empty"
        empty.mkdir()
        bad(["--from", empty, "--name", "h200x2", "--out", out], "not a StarPU sampling folder")
        bad(["--from", self.tmp / "nonexistent", "--name", "h200x2", "--out", out], "not a StarPU sampling folder")
        bad(["--name", "h200x2", "--out", out], "--from")
        for missing in ("bus/HOST.latency", "bus/HOST.platform.v4.xml"):
            broken = self.tmp / ("missing-" + missing.replace("/", "_")) / "sampling"
            shutil.copytree(self.src, broken)
            (broken / missing.replace("HOST", self.host)).unlink()
            bad(["--from", broken, "--name", "h200x2", "--out", out], Path(missing.replace("HOST", self.host)).name)
        corrupt = self.tmp / "corrupt" / "sampling"
        shutil.copytree(self.src, corrupt)
        model = corrupt / "codelets" / "45" / f"{self.symbols[0]}.{self.host}"
        text = model.read_text().splitlines(keepends=True)
        text[-2] = "garbage\n"
        model.write_text("".join(text))
        bad(["--from", corrupt, "--name", "seed2017", "--out", out], model.name)
        # never over the input: DIR/sampling == --from
        before = tree_hash(self.src)
        bad(["--from", self.src, "--name", "h200x2", "--out", self.src.parent], "--from")
        bad(["--from", self.src, "--name", "h200", "--out", self.src], "--from")
        self.assertEqual(tree_hash(self.src), before)
        self.assertFalse(out.exists())

    def test_rerun_replaces_only_its_host(self):
        shared = self.tmp / "shared"
        for name in ("h200x2", "seed2017"):
            self.assertEqual(run("--from", self.src, "--name", name, "--out", shared).returncode, 0)
        stale = shared / "sampling" / "codelets" / "45" / "gone.h200x2"
        stale.write_text("stale")
        self.assertEqual(run("--from", self.src, "--name", "h200x2", "--out", shared).returncode, 0)
        self.assertFalse(stale.exists())
        self.assertTrue((shared / "sampling" / "bus" / "seed2017.platform.v4.xml").is_file())
        for p in self.out["h200x2"].rglob("*"):  # the same bytes as the first run's
            if p.is_file():
                self.assertEqual((shared / "sampling" / p.relative_to(self.out["h200x2"])).read_bytes(), p.read_bytes())

    def test_source_untouched(self):  # the copy every run read from
        self.assertEqual(tree_hash(self.src), self.src_hash)


if __name__ == "__main__":
    if not (SRC / "bus").is_dir():
        print(f"test_make_platform: no sampling folder at {SRC}: pass one, or set FNNDTPS_PLATFORM_SRC "
              f"(bench/platforms/README.md)", file=sys.stderr)
        sys.exit(77)
    unittest.main()
