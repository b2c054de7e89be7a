#!/usr/bin/env python3
"""Simulated StarPU platforms derived from the GPU machine's calibrated sampling folder (DESIGN §8).

    python3 bench/platforms/make_platform.py --from bench/platforms/h200/sampling --name NAME --out DIR

writes DIR/sampling/bus/NAME.{affinity,bandwidth,config,latency,platform.xml,platform.v4.xml} and
DIR/sampling/codelets/45/<symbol>.NAME, the files StarPU 1.4.10 built with --enable-simgrid reads
under STARPU_PERF_MODEL_DIR=DIR/sampling STARPU_HOSTNAME=NAME (bench/platforms/README.md). NAME:
  h200                 the calibrated folder, copied (the host in the file names changes, and CUDA0
                       is described as below)
  h200x2 h200x4 h200x8 2/4/8 copies of the calibrated GPU, each on its own copy of its PCIe path,
                       peer copies between any two, 16 cores per GPU (the calibrated machine's ratio)
  seed2017             seed 000's node: GTX 750 Ti (CUDA0) + GTX 1080 (CUDA1) + 4 cores, CUDA models
                       scaled from the H200's by published bandwidth (lwt_*) or fp32 peak (*gemm*)

The formats are StarPU 1.4.10's, as its readers take them:
  bus/H.bandwidth, .latency  load_bus_{bandwidth,latency}_file_content (perfmodel_bus.c): one row
                             per raw node, NUMA nodes first then CUDA devices, tab-separated "%e",
                             MB/s and us; missing entries NaN. Read in simulation.
  bus/H.config               check_bus_config_file; in simulation only its presence matters
                             (_starpu_get_perf_model_bus finds the bus folder by it).
  bus/H.affinity             load_bus_affinity_file_content (not read in simulation).
  bus/H.platform{,.v4}.xml   write_bus_platform_file_content's layout; read by SimGrid
                             (_starpu_start_simgrid loads v4 for SimGrid >= 3.13). Hosts CPU<i> and
                             CUDA<i> are counted by name (_starpu_simgrid_get_nbhosts); CUDA<i> carry
                             "model", "memsize" and "memcpy_peer" (driver_cuda.c), and for our
                             policies' features "fnndtps_cc", "fnndtps_sms", "fnndtps_threads_per_sm"
                             and "fnndtps_clock_mhz" (StarPU ignores them).
  codelets/45/S.H            parse_model_file / parse_comb / scan_history_entry (perfmodel_history.c).
A CUDA worker looks its model up by (type, devid, ncores) (_starpu_perfmodel_arch_comb_get); the devid
is ignored only under STARPU_PERF_MODEL_HOMOGENEOUS_CUDA=1. Every derived file carries one CUDA comb
per device, so every worker finds its own under either setting (under =1 StarPU folds them into one).

Bad input (unknown NAME, a --from that is not a sampling folder, a missing or corrupt file, an --out
that would write into --from): one line on stderr, exit status 2, nothing written.
"""
import argparse
import math
import os
import re
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

# ---------------------------------------------------------------------------------------------
# Numbers, each with its source. Time ratios are H200 figure / card figure: a codelet bound by a
# resource runs that many times longer on the card (bench/platforms/README.md, "Assumptions").
# ---------------------------------------------------------------------------------------------
# NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200), H200 SXM column: GPU
# memory bandwidth 4.8 TB/s; FP32 67 TFLOPS (non-tensor; = 132 SMs x 128 lanes x 2 x 1.98 GHz).
# The calibrated device reports itself as "NVIDIA H200" (the NVL card is "NVIDIA H200 NVL", 60 TFLOPS).
H200_MEM_BW_GBS = 4800.0
H200_FP32_TFLOPS = 67.0
# NVIDIA GeForce GTX 1080 specifications (GP104): 10 Gbps GDDR5X x 256 bit = 320 GB/s; 2560 CUDA
# cores x 1733 MHz boost x 2 = 8.87 TFLOPS fp32; 8 GB.
GTX1080_MEM_BW_GBS = 320.0
GTX1080_FP32_TFLOPS = 8.87
GTX1080_MEMSIZE = 8 << 30
# NVIDIA GeForce GTX 750 Ti specifications (GM107): 5.4 Gbps GDDR5 x 128 bit = 86.4 GB/s; 640 CUDA
# cores x 1085 MHz boost x 2 = 1.39 TFLOPS fp32; 2 GB.
GTX750TI_MEM_BW_GBS = 86.4
GTX750TI_FP32_TFLOPS = 1.39
GTX750TI_MEMSIZE = 2 << 30
# PCIe 3.0 x16: 8 GT/s x 16 lanes x 128b/130b = 15.75 GB/s raw each way; ~12 GB/s is what pinned
# cudaMemcpy reaches on such links (assumed, both directions); ~10 us per copy call (assumed).
SEED2017_PCIE_BPS = 12e9
SEED2017_PCIE_LATENCY_US = 10.0
SEED2017_NCPU = 4  # seed 000's workstation: a 4-core CPU beside the two cards
# h200xN: cores per GPU as on the calibrated machine (16 cores, one GPU); StarPU keeps one core per
# CUDA worker for its driver thread, so 15 CPU workers per GPU by default, as measured there.
H200XN_GPUS = {"h200x2": 2, "h200x4": 4, "h200x8": 8}

# What each simulated GPU is, for the policies' FNN features (DESIGN §5: F from SMs x FP32 lanes per
# SM x 2 x clock, P from SMs x resident threads per SM, M from memsize), as properties of its
# CUDA<i> host: StarPU ignores them, SimGrid keeps them (sg_host_get_property_value).
# (compute capability, SMs, max resident threads per SM, boost clock MHz); sources: the H200 as
# the GPU machine reports it (132 SMs, nvidia-smi clocks.max.sm 1980 MHz); NVIDIA's GTX 1080
# (GP104: 20 SMs of 128 cores) and GTX 750 Ti (GM107: 5 SMs of 128 cores) specifications above.
H200_DEVICE = ("9.0", 132, 2048, 1980)
GTX1080_DEVICE = ("6.1", 20, 2048, 1733)
GTX750TI_DEVICE = ("5.0", 5, 2048, 1085)
DEVICE_PROPS = ("fnndtps_cc", "fnndtps_sms", "fnndtps_threads_per_sm", "fnndtps_clock_mhz")


def device_props(device):
    return list(zip(DEVICE_PROPS, (str(x) for x in device)))


# Codelet scaling for seed2017: first matching rule; the resource bounding the codelet.
BANDWIDTH, FP32 = "memory bandwidth", "fp32 peak"
SCALING_RULES = (
    (lambda s: s.startswith("lwt_"), BANDWIDTH),  # the LWT passes stream their strip (DESIGN §10)
    (lambda s: "gemm" in s, FP32),                # SGEMM tiles of 1024 are compute-bound
)


@dataclass
class Card:
    """One simulated GPU of seed2017."""
    model: str
    memsize: int
    mem_bw_gbs: float
    fp32_tflops: float
    device: tuple  # H200_DEVICE's fields

    def time_ratio(self, resource):
        if resource == BANDWIDTH:
            return H200_MEM_BW_GBS / self.mem_bw_gbs
        return H200_FP32_TFLOPS / self.fp32_tflops


SEED2017_CARDS = (
    Card("NVIDIA GeForce GTX 750 Ti", GTX750TI_MEMSIZE, GTX750TI_MEM_BW_GBS, GTX750TI_FP32_TFLOPS, GTX750TI_DEVICE),
    Card("NVIDIA GeForce GTX 1080", GTX1080_MEMSIZE, GTX1080_MEM_BW_GBS, GTX1080_FP32_TFLOPS, GTX1080_DEVICE),
)

NAMES = ("h200",) + tuple(H200XN_GPUS) + ("seed2017",)
BUS_EXTS = ("affinity", "bandwidth", "config", "latency", "platform.xml", "platform.v4.xml")
MODEL_VERSION = 45  # _STARPU_PERFMODEL_VERSION of StarPU 1.4.10: codelets/45/
RECALIBRATE = ("remake it on the GPU machine: bash scripts/gpu/run.sh calibrate, then unpack the "
               "sampling folder it brings back (bench/platforms/h200/README.md)")
SHARED_LINK = re.compile(r"^(Interconnect|Host|NUMA\d+)$")  # host side, shared by all GPUs
ARCH_NAMES = {0: "cpu", 1: "cuda", 2: "opencl", 3: "max_fpga", 5: "mpi_ms", 6: "tcpip_ms", 7: "hip"}
CUDA_WORKER = 1


class InputError(Exception):
    """Bad input: reported as one line, exit status 2."""


# ---------------------------------------------------------------------------------------------
# The source folder
# ---------------------------------------------------------------------------------------------
@dataclass
class Source:
    root: Path
    host: str
    models: dict  # symbol -> path of codelets/45/<symbol>.<host>

    def bus(self, ext):
        return self.root / "bus" / f"{self.host}.{ext}"

    def read(self, path):
        try:
            return path.read_text()
        except (OSError, UnicodeDecodeError) as e:
            raise InputError(f"cannot read {path}: {e}; {RECALIBRATE}")


def find_source(root):
    root = Path(root)
    configs = sorted((root / "bus").glob("*.config")) if (root / "bus").is_dir() else []
    if not root.is_dir() or not configs:
        raise InputError(f"--from {root} is not a StarPU sampling folder (no bus/<host>.config): pass "
                         f"the folder that holds bus/ and codelets/{MODEL_VERSION}/, e.g. "
                         f"bench/platforms/h200/sampling; {RECALIBRATE}")
    if len(configs) > 1:
        hosts = ", ".join(p.name[:-len(".config")] for p in configs)
        raise InputError(f"--from {root} holds several machines ({hosts}): keep one host's files there")
    host = configs[0].name[:-len(".config")]
    src = Source(root, host, {})
    for ext in BUS_EXTS:
        if not src.bus(ext).is_file():
            raise InputError(f"missing {src.bus(ext)}: {RECALIBRATE}")
    cdir = root / "codelets" / str(MODEL_VERSION)
    suffix = "." + host
    if cdir.is_dir():
        for p in sorted(cdir.iterdir()):
            if p.is_file() and p.name.endswith(suffix) and len(p.name) > len(suffix):
                src.models[p.name[:-len(suffix)]] = p
    if not src.models:
        raise InputError(f"no codelet models {cdir}/*{suffix}: {RECALIBRATE}")
    return src


# ---------------------------------------------------------------------------------------------
# Bus matrices (.bandwidth in MB/s, .latency in us), as load_bus_*_file_content reads them
# ---------------------------------------------------------------------------------------------
def read_matrix(src, ext):
    path = src.bus(ext)
    rows = []
    for n, line in enumerate(src.read(path).splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        row = line.rstrip("\t").split("\t")
        for tok in row:
            try:
                float(tok)
            except ValueError:
                raise InputError(f"corrupt {path}: line {n}: '{tok}' is not a number; {RECALIBRATE}")
        rows.append(row)
    if len(rows) < 2 or min(len(r) for r in rows[:2]) < 2 or any(
            math.isnan(float(rows[a][b])) for a, b in ((0, 1), (1, 0))):
        raise InputError(f"corrupt {path}: no NUMA 0 <-> CUDA 0 entries; {RECALIBRATE}")
    return rows


def format_matrix(cells, ncuda, width):
    """cells[(src, dst)] -> text; raw nodes: 0 = NUMA 0, 1 + k = CUDA k. StarPU pads rows to
    STARPU_MAXNODES with NaN; at least one pad is needed: its reader never stores a row's last field
    (the loop breaks on the newline before storing, then fills NaN from there)."""
    n = 1 + ncuda
    width = max(width, n + 1)
    out = ["# to NUMA 0\t" + "".join(f"to CUDA {k}\t" for k in range(ncuda))]
    for a in range(width):
        out.append("\t".join(cells[(a, b)] if a < n and b < n else "nan" for b in range(width)))
    return "\n".join(out) + "\n"


def fmt_e(x):
    return "%e" % x  # _starpu_write_double(f, "%e", ...)


# ---------------------------------------------------------------------------------------------
# SimGrid platform (write_bus_platform_file_content's layout, versions 3 and 4)
# ---------------------------------------------------------------------------------------------
@dataclass
class Link:
    id: str
    bw: float   # B/s
    lat: float  # s
    bw_text: str = None   # the source's digits, kept where the value is unchanged
    lat_text: str = None

    def attrs(self, version):
        bw = self.bw_text if self.bw_text is not None else "%f" % self.bw
        lat = self.lat_text if self.lat_text is not None else "%.9f" % self.lat
        unit_bw, unit_s = ("Bps", "s") if version == 4 else ("", "")
        return f'bandwidth="{bw}{unit_bw}" latency="{lat}{unit_s}"'


@dataclass
class Platform:
    config: list                      # [(prop id as in v4, value)]
    main_speed: str
    ram_speed: str
    cpu_speeds: list                  # per CPU host, digits
    cuda: list                        # per CUDA host: (speed digits, [(prop, value)])
    links: dict = field(default_factory=dict)   # id -> Link, in declaration order
    routes: list = field(default_factory=list)  # (src, dst, [link ids])


def _number(path, text, unit):
    m = re.fullmatch(r"([0-9.eE+-]+)" + unit, text or "")
    try:
        float(m.group(1))
    except (AttributeError, ValueError):
        raise InputError(f"corrupt {path}: '{text}' is not a number in {unit or 'no unit'}; {RECALIBRATE}")
    return m.group(1)


def read_platform(src):
    path = src.bus("platform.v4.xml")
    try:
        root = ET.fromstring(src.read(path))
    except ET.ParseError as e:
        raise InputError(f"corrupt {path}: {e}; {RECALIBRATE}")
    zone = root.find("AS")
    if zone is None:
        zone = root.find("zone")
    if root.tag != "platform" or zone is None:
        raise InputError(f"corrupt {path}: no <platform><AS> element; {RECALIBRATE}")
    config = [(p.get("id"), p.get("value")) for c in root.findall("config") for p in c.findall("prop")]
    plat = Platform(config, None, None, [], [])
    cpus, cudas = {}, {}
    for h in zone.findall("host"):
        hid, speed = h.get("id"), _number(path, h.get("speed"), "f")
        props = [(p.get("id"), p.get("value")) for p in h.findall("prop")]
        if hid == "MAIN":
            plat.main_speed = speed
        elif hid == "RAM":
            plat.ram_speed = speed
        elif re.fullmatch(r"CPU\d+", hid):
            cpus[int(hid[3:])] = speed
        elif re.fullmatch(r"CUDA\d+", hid):
            cudas[int(hid[4:])] = (speed, props)
        else:
            raise InputError(f"{path}: host {hid} is not supported here (CPU, one CUDA, MAIN, RAM only)")
    if plat.main_speed is None or plat.ram_speed is None or not cpus:
        raise InputError(f"corrupt {path}: MAIN, RAM or CPU hosts missing; {RECALIBRATE}")
    if sorted(cpus) != list(range(len(cpus))) or sorted(cudas) != [0]:
        raise InputError(f"{path}: expected CPU0..CPU<n-1> and exactly one GPU, CUDA0 "
                         f"(the calibrated single-GPU machine)")
    plat.cpu_speeds = [cpus[i] for i in range(len(cpus))]
    plat.cuda = [cudas[0]]
    for l in zone.findall("link"):
        bw, lat = _number(path, l.get("bandwidth"), "Bps"), _number(path, l.get("latency"), "s")
        plat.links[l.get("id")] = Link(l.get("id"), float(bw), float(lat), bw, lat)
    for r in zone.findall("route"):
        ids = [c.get("id") for c in r.findall("link_ctn")]
        missing = [i for i in ids if i not in plat.links]
        if missing:
            raise InputError(f"corrupt {path}: route {r.get('src')}->{r.get('dst')} uses undeclared "
                             f"link {missing[0]}; {RECALIBRATE}")
        plat.routes.append((r.get("src"), r.get("dst"), ids))
    return plat


def write_platform(plat, version):
    """The text StarPU's write_bus_platform_file_content would emit for this machine."""
    speed, flops = ("speed", "f") if version == 4 else ("power", "")
    dtd = ("http://simgrid.gforge.inria.fr/simgrid/simgrid.dtd" if version == 4
           else "http://simgrid.gforge.inria.fr/simgrid.dtd")
    out = ["<?xml version='1.0'?>", f"<!DOCTYPE platform SYSTEM '{dtd}'>",
           f' <platform version="{version}">', ' <config id="General">']
    for pid, value in plat.config:
        if version == 3 and pid.startswith("network/"):
            pid = "network/" + pid[len("network/"):].replace("-", "_")
        out.append(f'   <prop id="{pid}" value="{value}"></prop>')
    out += [" </config>", ' <AS  id="AS0"  routing="Full">',
            f'   <host id="MAIN" {speed}="{plat.main_speed}{flops}"/>']
    out += [f'   <host id="CPU{i}" {speed}="{s}{flops}"/>' for i, s in enumerate(plat.cpu_speeds)]
    for k, (s, props) in enumerate(plat.cuda):
        out.append(f'   <host id="CUDA{k}" {speed}="{s}{flops}">')
        out += [f'     <prop id="{p}" value="{v}"/>' for p, v in props]
        out.append("   </host>")
    out += ["", f'   <host id="RAM" {speed}="{plat.ram_speed}{flops}"/>']
    prev = None
    for l in plat.links.values():
        kind = ("shared" if SHARED_LINK.match(l.id) else "end" if re.fullmatch(r"RAM-CUDA\d+|CUDA\d+-RAM", l.id)
                else "peer" if re.fullmatch(r"CUDA\d+-CUDA\d+", l.id) else "pci")
        if prev is not None and kind != prev:
            out.append("")
        prev = kind
        out.append(f'   <link id="{l.id}" {l.attrs(version)}/>')
    out.append("")
    for s, d, ids in plat.routes:
        out.append(f'   <route src="{s}" dst="{d}" symmetrical="NO">')
        out += [f'    <link_ctn id="{i}"/>' for i in ids]
        out.append("   </route>")
    out += ["", " </AS>", " </platform>"]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------
# Codelet history models (parse_model_file's grammar; dump_model_file's layout)
# ---------------------------------------------------------------------------------------------
@dataclass
class Impl:
    reg: list      # sumlnx sumlnx2 sumlny sumlnxlny alpha beta n minx maxx
    nl: list       # a b c
    coeffs: list   # multiple regression coefficients (empty: not multiple-regression based)
    entries: list  # [footprint, size, flops, mean, dev, sum, sum2, n] as text


@dataclass
class Comb:
    devices: list  # [(type, devid, ncores)]
    impls: list


def parse_model(text, path):
    lines = [(n, l.split("#", 1)[0].split()) for n, l in enumerate(text.splitlines(), 1)]
    lines = [(n, toks) for n, toks in lines if toks]
    pos = 0

    def take(count=None, what="value"):
        nonlocal pos
        if pos >= len(lines):
            raise InputError(f"corrupt model {path}: ends where the {what} was expected; {RECALIBRATE}")
        n, toks = lines[pos]
        pos += 1
        if count is not None and len(toks) not in ((count,) if isinstance(count, int) else count):
            raise InputError(f"corrupt model {path}: line {n}: expected the {what}; {RECALIBRATE}")
        return n, toks

    def integer(what):
        n, toks = take(1, what)
        if not re.fullmatch(r"\d+", toks[0]):
            raise InputError(f"corrupt model {path}: line {n}: expected the {what}; {RECALIBRATE}")
        return int(toks[0])

    def numbers(n, toks, what):
        for t in toks:
            try:
                float(t)
            except ValueError:
                raise InputError(f"corrupt model {path}: line {n}: '{t}' in the {what}; {RECALIBRATE}")
        return toks

    version = integer("model version")
    if version != MODEL_VERSION:
        raise InputError(f"model {path} has version {version}, StarPU 1.4.10 reads {MODEL_VERSION}; "
                         f"{RECALIBRATE}")
    combs = []
    for _ in range(integer("number of combinations")):
        devices = [(integer("device type"), integer("device id"), integer("number of cores"))
                   for _ in range(integer("number of devices"))]
        impls = []
        for _ in range(integer("number of implementations")):
            nentries = integer("number of entries")
            reg = numbers(*take(9, "linear regression line"), "linear regression line")
            nl = numbers(*take(3, "non-linear regression line"), "non-linear regression line")
            n, toks = take(None, "multiple regression line")
            if not re.fullmatch(r"\d+", toks[0]) or len(toks) != 1 + int(toks[0]):
                raise InputError(f"corrupt model {path}: line {n}: expected the multiple regression "
                                 f"line; {RECALIBRATE}")
            coeffs = numbers(n, toks[1:], "multiple regression line")
            entries = []
            for _ in range(nentries):
                n, toks = take((7, 8), "history entry")
                if len(toks) == 7:  # the older layout without flops (scan_history_entry)
                    toks = toks[:2] + ["0.000000e+00"] + toks[2:]
                if not re.fullmatch(r"[0-9a-fA-F]{1,8}", toks[0]) or not toks[1].isdigit():
                    raise InputError(f"corrupt model {path}: line {n}: bad history entry; {RECALIBRATE}")
                numbers(n, toks[2:7], "history entry")
                if not toks[7].isdigit() or any(float(t) < 0 for t in toks[3:7]):
                    raise InputError(f"corrupt model {path}: line {n}: bad history entry; {RECALIBRATE}")
                entries.append(toks)
            impls.append(Impl(reg, nl, coeffs, entries))
        combs.append(Comb(devices, impls))
    if pos != len(lines):
        raise InputError(f"corrupt model {path}: line {lines[pos][0]}: data after the last "
                         f"combination; {RECALIBRATE}")
    return combs


def dump_model(combs):
    o = ["##################", "# Performance Model Version", str(MODEL_VERSION), "",
         "####################", "# COMBs", "# number of combinations", str(len(combs))]
    for c, comb in enumerate(combs):
        o += ["####################", f"# COMB_{c}", "# number of types devices", str(len(comb.devices))]
        for d, (dtype, devid, ncores) in enumerate(comb.devices):
            o += ["####################", f"# DEV_{d}",
                  "# device type (CPU - 0, CUDA - 1, OPENCL - 2, MPI_MS - 5, TCPIP_MS - 6)", str(dtype),
                  "####################", f"# DEV_{d}", "# device id ", str(devid),
                  "####################", f"# DEV_{d}", "# number of cores ", str(ncores)]
        o += ["##########", "# number of implementations", str(len(comb.impls))]
        arch = "_".join(f"{ARCH_NAMES.get(t, f'arch{t}')}{i}" for t, i, _ in comb.devices)
        for i, im in enumerate(comb.impls):
            r = im.reg
            o += ["#####", f"# Model for {arch}_impl{i} (Comb{c})", "# number of entries", str(len(im.entries)),
                  "# sumlnx\tsumlnx2\t\tsumlny\t\tsumlnxlny\talpha\t\tbeta\t\tn\tminx\t\tmaxx",
                  "\t".join(f"{t:<15}" for t in r[:6]) + f"\t{r[6]}\t{r[7]:<15}\t{r[8]:<15}",
                  "# a\t\tb\t\tc", "\t".join(f"{t:<15}" for t in im.nl)]
            if im.coeffs:
                o += ["# n\tintercept\t", "\t".join([str(len(im.coeffs))] + [f"{t:<15}" for t in im.coeffs])]
            else:
                o += ["# not multiple-regression-base", "0"]
            o.append("# hash\t\tsize\t\tflops\t\tmean (us or J)\tdev (us or J)\tsum\t\tsum2\t\tn")
            o += ["\t".join([e[0].lower().zfill(8)] + [f"{t:<15}" for t in e[1:7]] + [e[7]]) for e in im.entries]
            o.append("")
    return "\n".join(o) + "\n"


def _scaled(tok, factor):
    x = float(tok)
    return tok if math.isnan(x) else "%.15e" % (x * factor)


def scale_impl(im, s):
    """Durations times s: history means, deviations and sums (sum2 by s^2); regressions refitted
    exactly: y = alpha x^beta -> alpha s; y = a x^b + c -> a s, c s; ln y sums shift by ln s."""
    r = list(im.reg)
    n, ln_s = int(r[6]), math.log(s)
    r[2] = _scaled(str(float(r[2]) + n * ln_s), 1.0)
    r[3] = _scaled(str(float(r[3]) + float(r[0]) * ln_s), 1.0)
    r[4] = _scaled(r[4], s)
    nl = [_scaled(im.nl[0], s), im.nl[1], _scaled(im.nl[2], s)]
    entries = [e[:3] + [_scaled(e[3], s), _scaled(e[4], s), _scaled(e[5], s), _scaled(e[6], s * s)] + e[7:]
               for e in im.entries]
    return Impl(r, nl, [_scaled(c, s) for c in im.coeffs], entries)


def is_cuda_comb(comb, path):
    types = [t for t, _, _ in comb.devices]
    if CUDA_WORKER not in types:
        return False
    if len(comb.devices) != 1 or comb.devices[0][1] != 0:
        raise InputError(f"model {path}: a CUDA combination other than CUDA device 0 alone is not "
                         f"supported (the calibrated machine has one GPU)")
    return True


# ---------------------------------------------------------------------------------------------
# Derivation
# ---------------------------------------------------------------------------------------------
@dataclass
class Gpu:
    """A simulated GPU's host link, both in the platform (B/s, text) and in the matrices (MB/s, us)."""
    model: str
    memsize: str
    h2d: Link       # RAM-CUDAk as declared
    d2h: Link       # CUDAk-RAM
    m_h2d: str      # .bandwidth entries
    m_d2h: str
    l_h2d: str      # .latency entries
    l_d2h: str
    scale: dict = None  # resource -> time ratio (None: the calibrated device itself)
    device: tuple = H200_DEVICE


def _rename(lid, k):
    """GPU k's copy of a private PCI link of GPU 0: its own PCI domain (names keep their ' up',
    ' down', ' through' suffixes, which _starpu_simgrid_count_ngpus reads)."""
    if k == 0:
        return lid
    m = re.match(r"PCI:([0-9a-fA-F]{4}):(.*)$", lid)
    if m:
        return "PCI:%04x:%s" % ((int(m.group(1), 16) + k) & 0xFFFF, m.group(2))
    return f"CUDA{k}/{lid}"


def derive_bus(src, plat, bwm, gpus, ncpu, peer):
    """Bus files for len(gpus) GPUs built on the calibrated GPU 0's links and routes."""
    path = src.bus("platform.v4.xml")
    routes = {(s, d): ids for s, d, ids in plat.routes}
    down, up = routes.get(("RAM", "CUDA0")), routes.get(("CUDA0", "RAM"))
    if down is None or up is None or "RAM-CUDA0" not in down or "CUDA0-RAM" not in up:
        raise InputError(f"corrupt {path}: no RAM<->CUDA0 routes through RAM-CUDA0 / CUDA0-RAM; {RECALIBRATE}")
    extra = [f"{s}->{d}" for s, d, _ in plat.routes if (s, d) not in (("RAM", "CUDA0"), ("CUDA0", "RAM"))]
    if extra:
        raise InputError(f"{path}: route {extra[0]} is not supported here (RAM<->CUDA0 only)")
    used = set(down) | set(up)
    unused = [l for l in plat.links if l not in used and not SHARED_LINK.match(l)]
    if unused:
        raise InputError(f"{path}: link {unused[0]} is on no RAM<->CUDA0 route; not supported here")
    private = [l for l in plat.links if l in used and not SHARED_LINK.match(l)
               and l not in ("RAM-CUDA0", "CUDA0-RAM")]
    src_h2d, src_d2h = plat.links["RAM-CUDA0"].bw, plat.links["CUDA0-RAM"].bw
    n = len(gpus)

    def scaled(link, factor, new_id):
        if factor == 1.0:
            return Link(new_id, link.bw, link.lat, link.bw_text, link.lat_text)
        return Link(new_id, link.bw * factor, link.lat, None, link.lat_text)

    out = Platform(plat.config, plat.main_speed, plat.ram_speed,
                   [plat.cpu_speeds[i % len(plat.cpu_speeds)] for i in range(ncpu)], [])
    # Host side: carries what the GPUs' links carry, in the proportion the calibrated machine had
    # (StarPU declares it as the fastest GPU link: write_bus_platform_file_content).
    host_factor = sum(max(g.h2d.bw, g.d2h.bw) for g in gpus) / max(src_h2d, src_d2h)
    for lid, l in plat.links.items():
        if SHARED_LINK.match(lid):
            out.links[lid] = scaled(l, host_factor, lid)
    for k, g in enumerate(gpus):
        props = [(p, v) for p, v in plat.cuda[0][1] if p not in ("model", "memsize", "memcpy_peer") + DEVICE_PROPS]
        out.cuda.append((plat.cuda[0][0], [("model", g.model), ("memsize", g.memsize)] + props +
                         [("memcpy_peer", "1")] + device_props(g.device)))
        out.links[f"RAM-CUDA{k}"] = Link(f"RAM-CUDA{k}", g.h2d.bw, g.h2d.lat, g.h2d.bw_text, g.h2d.lat_text)
        out.links[f"CUDA{k}-RAM"] = Link(f"CUDA{k}-RAM", g.d2h.bw, g.d2h.lat, g.d2h.bw_text, g.d2h.lat_text)
    # Peer copies: a link of their own, then the destination's and the source's PCIe paths (so a
    # copy shares them with host transfers), the host side once. The first " through" link comes
    # before the first " up" one, as in StarPU's own routes, so _starpu_simgrid_count_ngpus finds
    # the destination's bridge, used by that GPU alone.
    for i, gi in enumerate(gpus):
        for j, gj in enumerate(gpus):
            if i != j:
                if peer == "direct":  # P2P DMA at the slower of the two links
                    bw = min(gi.d2h.bw, gj.h2d.bw)
                else:                 # staged through host memory by cudaMemcpyPeer
                    bw = 1.0 / (1.0 / gi.d2h.bw + 1.0 / gj.h2d.bw)
                lat = (float(gi.l_d2h) + float(gj.l_h2d)) * 1e-6  # StarPU's sum for unmeasured pairs
                out.links[f"CUDA{i}-CUDA{j}"] = Link(f"CUDA{i}-CUDA{j}", bw, lat)
    for k, g in enumerate(gpus):
        for lid in private:
            factor = (max(g.h2d.bw, g.d2h.bw) / max(src_h2d, src_d2h) if lid in down and lid in up
                      else g.h2d.bw / src_h2d if lid in down else g.d2h.bw / src_d2h)
            out.links[_rename(lid, k)] = scaled(plat.links[lid], factor, _rename(lid, k))
    if len(out.links) != len(plat.links) - 2 - len(private) + n * (2 + len(private)) + n * (n - 1):
        raise InputError(f"{path}: link names collide once copied per GPU; not supported here")

    def route(ids, k, end):
        return [end if lid in ("RAM-CUDA0", "CUDA0-RAM") else lid if SHARED_LINK.match(lid)
                else _rename(lid, k) for lid in ids]

    shared = [l for l in down + up if SHARED_LINK.match(l)]
    shared = list(dict.fromkeys(shared))
    for i in range(n):
        for j in range(n):
            if i != j:
                out.routes.append((f"CUDA{i}", f"CUDA{j}", [f"CUDA{i}-CUDA{j}"]
                                   + [_rename(l, j) for l in down if l in private] + shared
                                   + [_rename(l, i) for l in up if l in private]))
        out.routes.append((f"CUDA{i}", "RAM", route(up, i, f"CUDA{i}-RAM")))
        out.routes.append(("RAM", f"CUDA{i}", route(down, i, f"RAM-CUDA{i}")))

    width = len(bwm[0])
    bw_cells, lat_cells = {(0, 0): fmt_e(0.0)}, {(0, 0): fmt_e(0.0)}
    for k, g in enumerate(gpus):
        bw_cells[(0, k + 1)], bw_cells[(k + 1, 0)] = g.m_h2d, g.m_d2h
        lat_cells[(0, k + 1)], lat_cells[(k + 1, 0)] = g.l_h2d, g.l_d2h
    for i, gi in enumerate(gpus):
        for j, gj in enumerate(gpus):
            if i == j:
                bw_cells[(i + 1, j + 1)] = lat_cells[(i + 1, j + 1)] = fmt_e(0.0)
                continue
            a, b = float(gi.m_d2h), float(gj.m_h2d)
            bw_cells[(i + 1, j + 1)] = fmt_e(min(a, b) if peer == "direct" else 1.0 / (1.0 / a + 1.0 / b))
            lat_cells[(i + 1, j + 1)] = fmt_e(float(gi.l_d2h) + float(gj.l_h2d))

    config = []
    seen = set()
    for line in src.read(src.bus("config")).splitlines():
        m = re.match(r"\s*\d+(\s*#\s*Number of (CPUs|CUDA))", line)
        if m:
            seen.add(m.group(2))
            line = f"{ncpu if m.group(2) == 'CPUs' else n}{m.group(1)}" + line[m.end():]
        config.append(line)
    if seen != {"CPUs", "CUDA"}:
        raise InputError(f"corrupt {src.bus('config')}: no 'Number of CPUs' / 'Number of CUDA' lines; "
                         f"{RECALIBRATE}")
    affinity = "# GPU\tNUMA0\t\n" + "".join(f"{k}\t0\t\n" for k in range(n))
    return {
        "affinity": affinity,
        "bandwidth": format_matrix(bw_cells, n, width),
        "config": "\n".join(config) + "\n",
        "latency": format_matrix(lat_cells, n, width),
        "platform.xml": write_platform(out, 3),
        "platform.v4.xml": write_platform(out, 4),
    }


def describe_cuda0(data, path):
    """The calibrated platform file with H200_DEVICE's properties in its CUDA0 host (after its
    last property; any earlier description replaced)."""
    lines = [l for l in data.decode().split("\n") if not any(f'<prop id="{p}"' in l for p in DEVICE_PROPS)]
    try:
        start = next(i for i, l in enumerate(lines) if re.search(r'<host id="CUDA0"', l))
        end = next(i for i in range(start, len(lines)) if "</host>" in lines[i])
    except StopIteration:
        raise InputError(f"corrupt {path}: no CUDA0 host; {RECALIBRATE}") from None
    indent = re.match(r"\s*", lines[start + 1] if start + 1 < end else lines[start]).group(0) or "     "
    lines[end:end] = [f'{indent}<prop id="{p}" value="{v}"/>' for p, v in device_props(H200_DEVICE)]
    return "\n".join(lines).encode()


def build(src, name):
    """Returns {path relative to DIR/sampling: bytes} for platform NAME."""
    if name not in NAMES:
        raise InputError(f"unknown platform '{name}': choose one of {', '.join(NAMES)}")
    models = {sym: parse_model(src.read(p), p) for sym, p in src.models.items()}
    files = {}
    if name == "h200":  # a copy: the files as calibrated, under the host name h200, CUDA0 described
        for ext in BUS_EXTS:
            data = src.bus(ext).read_bytes()
            if ext.startswith("platform"):
                data = describe_cuda0(data, src.bus(ext))
            files[f"bus/{name}.{ext}"] = data
        for sym, p in src.models.items():
            files[f"codelets/{MODEL_VERSION}/{sym}.{name}"] = p.read_bytes()
        read_platform(src), read_matrix(src, "bandwidth"), read_matrix(src, "latency")  # validate
        return files

    plat = read_platform(src)
    bwm, latm = read_matrix(src, "bandwidth"), read_matrix(src, "latency")
    if len(bwm[0]) != len(latm[0]) or any(len(r) != len(bwm[0]) for r in bwm + latm):
        raise InputError(f"corrupt {src.bus('bandwidth')} or .latency: rows of unequal length; {RECALIBRATE}")
    model, memsize = (dict(plat.cuda[0][1]).get(p) for p in ("model", "memsize"))
    if model is None or memsize is None:
        raise InputError(f"corrupt {src.bus('platform.v4.xml')}: CUDA0 has no model or memsize; {RECALIBRATE}")
    if name in H200XN_GPUS:
        n = H200XN_GPUS[name]
        g0 = Gpu(model, memsize, plat.links.get("RAM-CUDA0"), plat.links.get("CUDA0-RAM"),
                 bwm[0][1], bwm[1][0], latm[0][1], latm[1][0])
        if g0.h2d is None or g0.d2h is None:
            raise InputError(f"corrupt {src.bus('platform.v4.xml')}: no RAM-CUDA0 / CUDA0-RAM links; {RECALIBRATE}")
        gpus, ncpu, peer = [g0] * n, n * len(plat.cpu_speeds), "direct"
    else:  # seed2017
        lat_s = SEED2017_PCIE_LATENCY_US * 1e-6
        gpus = [Gpu(c.model, str(c.memsize), Link("", SEED2017_PCIE_BPS, lat_s), Link("", SEED2017_PCIE_BPS, lat_s),
                    fmt_e(SEED2017_PCIE_BPS / 1e6), fmt_e(SEED2017_PCIE_BPS / 1e6),
                    fmt_e(SEED2017_PCIE_LATENCY_US), fmt_e(SEED2017_PCIE_LATENCY_US),
                    {r: c.time_ratio(r) for r in (BANDWIDTH, FP32)}, c.device) for c in SEED2017_CARDS]
        ncpu, peer = SEED2017_NCPU, "staged"
    for ext, text in derive_bus(src, plat, bwm, gpus, ncpu, peer).items():
        files[f"bus/{name}.{ext}"] = text.encode()

    unscaled = []
    for sym, combs in models.items():
        out = []
        for comb in combs:
            if not is_cuda_comb(comb, src.models[sym]):
                out.append(comb)
                continue
            resource = next((res for match, res in SCALING_RULES if match(sym)), None)
            for k, g in enumerate(gpus):
                (_, _, ncores), = comb.devices
                impls = comb.impls
                if g.scale is not None:
                    if resource is None:
                        unscaled.append(sym)
                        break
                    impls = [scale_impl(im, g.scale[resource]) for im in impls]
                out.append(Comb([(CUDA_WORKER, k, ncores)], impls))
        files[f"codelets/{MODEL_VERSION}/{sym}.{name}"] = dump_model(out).encode()
    if unscaled:
        raise InputError(f"no scaling rule for codelet(s) {', '.join(sorted(set(unscaled)))} on {name}: add "
                         f"one to SCALING_RULES in bench/platforms/make_platform.py, or drop their models "
                         f"from --from")
    return files


def write(files, src, out_dir, name):
    sampling = Path(out_dir) / "sampling"
    s_res, o_res = src.root.resolve(), sampling.resolve()
    if o_res == s_res or s_res in o_res.parents or o_res in s_res.parents:
        raise InputError(f"--out {out_dir} would write {sampling}, over or around --from {src.root}: "
                         f"choose another DIR")
    try:
        for sub in ("bus", f"codelets/{MODEL_VERSION}"):
            (sampling / sub).mkdir(parents=True, exist_ok=True)
        # This platform's files only: other hosts' files in DIR/sampling stay.
        stale = list((sampling / "bus").glob(f"{name}.*")) + \
            list((sampling / "codelets" / str(MODEL_VERSION)).glob(f"*.{name}"))
        for p in stale:
            if p.is_file() and p.relative_to(sampling).as_posix() not in files:
                p.unlink()
        for rel, data in files.items():
            target = sampling / rel
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".make_platform.")
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.chmod(tmp, 0o644)
            os.replace(tmp, target)
    except OSError as e:
        print(f"make_platform.py: cannot write {sampling}: {e}", file=sys.stderr)
        sys.exit(1)
    return sampling


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, status 2
        self.exit(2, f"make_platform.py: {message} (usage: make_platform.py --from SAMPLING --name "
                     f"{{{','.join(NAMES)}}} --out DIR)\n")


def main(argv=None):
    ap = _Parser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--from", dest="src", required=True, help="the calibrated sampling folder")
    ap.add_argument("--name", required=True, help=", ".join(NAMES))
    ap.add_argument("--out", required=True, help="writes DIR/sampling/{bus,codelets/45}")
    args = ap.parse_args(argv)
    try:
        if args.name not in NAMES:
            raise InputError(f"unknown platform '{args.name}': choose one of {', '.join(NAMES)}")
        src = find_source(args.src)
        files = build(src, args.name)
        sampling = write(files, src, args.out, args.name)
    except InputError as e:
        print(f"make_platform.py: {e}", file=sys.stderr)
        return 2
    nmodels = sum(1 for k in files if k.startswith("codelets/"))
    print(f"make_platform.py: {args.name} from {src.root} ({src.host}): {len(files) - nmodels} bus files, "
          f"{nmodels} codelet models in {sampling}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
