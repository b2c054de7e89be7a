#!/usr/bin/python3
"""The scheduler comparison (DESIGN §8): the apps under our five policies and StarPU's built-ins
(eager, lws, dmda, dmdar, dmdas, heteroprio), over sizes, in stable and perturbed conditions,
against the divisible-load bound measured in the same run. Prints a table, writes table.txt,
results.csv, compare.png and one log per run.

  bench/compare.py [--build DIR] [--apps lwt2d,gemm,starpu-sgemm] [--lwt-sizes 8192,16384]
                   [--gemm-sizes 16384] [--sgemm-sizes 16384] [--tile 1024] [--levels 4]
                   [--reps 5] [--warmup 2] [--policies P,...] [--perturb none,gpu50,cpu,emulated]
                   [--gpus 1,2,4,8] [--out DIR] [--quick] [--timeout S] ... (--help lists every option)
  bench/compare.py --from-csv OUT/results.csv --out DIR     (the table and the PNG again)
  bench/compare.py --simulate h200x4 [--apps lwt2d,gemm] ...  (the same on a SimGrid-simulated node)
  bench/compare.py --cold [bench/cold.py's options]  (the cold bench: each command its own process)
  bench/compare.py --trace ...  (also OUT/traces: each configuration's median run as a trace and a
                                 Gantt chart, and per app, size and condition a sheet: our best
                                 policy's chart above the best built-in's, on one time axis)

Conditions (--perturb):
  none       stable: nothing else runs.
  gpuNN      `perturb --gpu DEV`: a busy kernel on every SM, on NN% of every period (gpu = gpu50).
  cpuNN      `perturb --cpu-cores LIST`: busy threads on those cores, on NN% of every period (cpu = cpu50).
  emulated   FNNDTPS_SLOWDOWN on a CPU-only machine: worker i's tasks take factor_i times as
             long (--emu-factors). OUR policies apply it (their post_exec holds each task
             factor_i - 1 times its run time longer), to any program's tasks, StarPU's example
             programs included; StarPU's built-in policies do not see it, so under `emulated`
             they (and any policy not ours) are skipped: CSV rows marked skipped, one table
             line per app and size naming them and saying why.
             --emu-gpus LIST: those workers form dtps's and fnn-dtps's GPU class
             (FNNDTPS_EMULATED_GPUS), the code paths of a machine with GPUs.
The perturbation runs for the whole condition, bound measurements included.
GPU counts (--gpus 1,2,4,8, GPU machines): every condition once per count k, named none-2gpu,
gpu50-4gpu...: the co-run and the gpu-alone class get STARPU_NCUDA=k (StarPU's first k GPUs), so
T* is the bound at k GPUs and %bound the efficiency at k. The CPU workers stay those of the
cpu-alone class at every k. Without --gpus, every GPU StarPU finds, once.

The bound (DESIGN §8): T* = 1 / sum_k (w_k / T_k), T_k the median time of worker class k running
the whole job alone (dmdas; under `emulated`, `even`: the slowdown needs one of our policies,
and with one worker every policy places alike) under the same condition, w_k how many such
workers the co-run has.
  GPU machine: classes gpu-alone (STARPU_NCPU=0) and cpu-alone (STARPU_NCUDA=0, as many CPU
  workers as the co-run): T* = 1 / (1/T_gpu + 1/T_cpu).
  CPU-only machine: each worker is a class: one worker alone (STARPU_NCPU=1), pinned to its core
  under `cpu` conditions, with the worker's slowdown factor under `emulated` (measured, the
  default), or T_f = f T_1 from one unslowed worker (--bound computed); under `emulated` both
  run under `even`, without FNNDTPS_EMULATED_GPUS (it names the co-run's workers).

Simulation (--simulate PLATFORM: h200, h200x2, h200x4, h200x8, seed2017; bench/platforms/README.md):
the same table, CSV and PNG from StarPU's SimGrid build (--build defaults to build-sim). The
platform is derived from the calibrated models (--sim-models, default bench/platforms/h200/sampling)
by bench/platforms/make_platform.py into OUT/platform at the start; every process gets
STARPU_PERF_MODEL_DIR, STARPU_HOSTNAME, STARPU_PERF_MODEL_HOMOGENEOUS_CUDA (1 for h200*, 0 for
seed2017), STARPU_CALIBRATE_MINIMUM=2, STARPU_HOME=OUT/starpu-home and LD_LIBRARY_PATH with the
SimGrid StarPU's lib ($STARPU_SIMGRID_PREFIX, else ~/.cache/fnndtps/current-simgrid); OUT/simulate.env
lists them. The workers come from the platform's bus/NAME.config (StarPU's default: one CPU
worker per CPU host less one per GPU); lwt2d gets --units from bench/sim_units.py (the units the
models were calibrated at) unless --units is given. Only `none` is simulated (gpuNN, cpuNN and
emulated need real hardware: skipped with a note); StarPU's sgemm/dgemm examples are not built
for simulation (skipped with a note). Every time is simulated time, the same on every run of a
configuration: --reps 2 (lwt2d prints its median from 2 timed runs on) and --warmup 1 by default.
A run that needs a model the calibration never measured stops the bench (exit 2, one line).

StarPU's LP bound (the table's "bound LP" row, %LP): lwt2d and gemm run one more, untimed, run
with --bound (starpu_bound_compute: the task kinds spread over the workers at their history
models' durations, without dependencies or transfers; StarPU built with GLPK); the row gives the
median over the configurations' recordings, or why there is none (no GLPK, as in the simulation
build; no usable model). --no-lp leaves it out.

Learned models: every (app, condition, policy) gets its own FNNDTPS_MODEL_DIR under OUT/models,
emptied at the start (--keep-models keeps them): what our policies learn carries across the sizes
of one condition, never across conditions. StarPU's own performance models stay where StarPU keeps
them (STARPU_HOME), as for any StarPU program; the warm-up runs calibrate what is missing.

Workers: on a GPU machine, StarPU's defaults (--ncpu N to fix the CPU workers). On a CPU-only
machine, one CPU worker per emulated factor in every condition (default 1,1,2,4 from 4 cores,
1,3 on 2-3 cores: never more workers than cores, or the workers measured alone would be faster
than they can be together). Every process gets MALLOC_MMAP_THRESHOLD_=32 MiB (--no-malloc-tuning
to leave it): glibc's default doubles a one-worker lwt2d's time in page faults.
"""
import argparse
import copy
import csv
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

import gantt  # bench/gantt.py: --trace
import simulate  # bench/simulate.py: --simulate PLATFORM

OURS = ["fnn-dtps", "fnn", "dtps", "boyer", "even"]
BUILTINS = ["eager", "lws", "dmda", "dmdar", "dmdas", "heteroprio"]
CLASS_POLICY = "dmdas"  # what runs each worker class alone
# ... under `emulated`: only our policies apply FNNDTPS_SLOWDOWN, and with one worker every
# policy places alike; `even` has no model to learn or calibrate.
EMU_CLASS_POLICY = "even"
EMU_NOT_OURS = "emulation is applied by our policies only; StarPU's own policies do not see it"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def die(msg):
    """A bad option: one line, exit 2 (as argparse does)."""
    print(f"compare.py: {msg}", file=sys.stderr)
    sys.exit(2)


def number_list(convert, items, least, rule):
    """An argparse type: a comma-separated list of `items` converted by `convert`, each >= least."""
    def parse(text):
        try:
            values = [convert(x) for x in text.split(",") if x.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of {items}")
        if not values or min(values) < least:
            raise argparse.ArgumentTypeError(f"'{text}': {rule}")
        return values
    return parse


int_list = number_list(int, "integers", 1, "give positive integers")
float_list = number_list(float, "numbers", 1, "slowdown factors are >= 1")
core_list = number_list(int, "cores", 0, "cores are numbered from 0")
worker_list = number_list(int, "workers", 0, "workers are numbered from 0")
gpu_list = number_list(int, "GPU counts", 1, "GPU counts are at least 1")


def name_list(text):
    return [x.strip() for x in text.split(",") if x.strip()]


def fmt(x, spec=".2f"):
    return "-" if x is None else format(x, spec)


# ---------------------------------------------------------------------------------------------
# The competitors' programs, each behind one signature (class App).

@dataclass
class Measure:
    status: str = "ok"  # ok | failed | timeout | skipped
    median_ms: float = None
    min_ms: float = None
    max_ms: float = None
    times_ms: list = field(default_factory=list)
    cpu: int = None
    cuda: int = None
    throughput: float = None
    note: str = ""
    log: str = ""
    lp_ms: float = None  # StarPU's LP bound from the app's BOUND line
    lp_note: str = ""    # why there is none
    trace: str = ""      # --trace: the median run's trace


def lp_bound(text):
    """(lp_ms, note) from the last 'BOUND <tag> lp_ms=...' line: lp_ms=none (why) gives the why."""
    found = None
    for line in text.splitlines():
        if line.startswith("BOUND "):
            found = line
    if found is None:
        return None, ""
    m = re.search(r"\blp_ms=([0-9.]+)", found)
    if m:
        return float(m.group(1)), ""
    m = re.search(r"\blp_ms=none \(([^)]*)\)", found)
    return None, (m.group(1) if m else "no LP bound printed")


def result_fields(text, tag):
    """key=value pairs of the last line starting with `RESULT <tag>`."""
    found = None
    for line in text.splitlines():
        if line.startswith("RESULT " + tag):
            found = line
    if found is None:
        return None
    return dict(kv.split("=", 1) for kv in found.split()[2:] if "=" in kv)


def to_float(d, key):
    try:
        return float(d[key])
    except (KeyError, ValueError, TypeError):
        return None


def to_int(d, key):
    v = to_float(d, key)
    return None if v is None else int(v)


def times_field(d):
    raw = d.get("times_ms", "")
    try:
        return [float(x) for x in re.split(r"[,;]", raw) if x]
    except ValueError:
        return []


def result_measure(d):
    """A Measure from a RESULT line's fields (lwt2d's and gemm's share them)."""
    return Measure(median_ms=to_float(d, "median_ms"), min_ms=to_float(d, "min_ms"),
                   max_ms=to_float(d, "max_ms"), cpu=to_int(d, "cpu"), cuda=to_int(d, "cuda"),
                   times_ms=times_field(d))


class App:
    """One competitor: sizes() to run, setup(size) to name a panel, command(size) the argv of one
    process; parse(stdout, size) -> Measure for programs that time their own repetitions after
    their warm-up (in_process), parse_one(stdout, size) -> ms for those run once per repetition."""
    name = ""
    unit = "GFLOP/s"
    in_process = True           # warm-up and timed runs in one process
    registers_policies = True   # links our policies (else STARPU_SCHED_LIB loads them)
    binary = ""

    def __init__(self, args):
        self.args = args

    def available(self):
        return (os.access(self.binary, os.X_OK), f"{self.binary} not built")

    def help_text(self):
        if getattr(self, "_help", None) is None:
            try:
                p = subprocess.run([self.binary, "--help"], capture_output=True, text=True, timeout=30)
                self._help = p.stdout + p.stderr
            except (OSError, subprocess.TimeoutExpired):
                self._help = ""
        return self._help

    def lp_flag(self):
        """--bound where the app offers it and the LP row is wanted."""
        return ["--bound"] if self.in_process and self.args.lp and "--bound" in self.help_text() else []


class Lwt2d(App):
    """apps/lwt2d.cpp demo: RESULT forward ... median_ms= min_ms= max_ms= over --repeat runs after
    --warmup ones."""
    name = "lwt2d"
    unit = "GB/s"

    def __init__(self, args):
        super().__init__(args)
        self.binary = os.path.join(args.build, "bin", "lwt2d")

    def sizes(self):
        return self.args.lwt_sizes

    def setup(self, size):
        units = self.args.units or (simulate.units(size) if self.args.simulate else 0)
        return f"{size}x{size}, {self.args.levels} levels forward" + (f", {units} units" if units else "")

    def command(self, size):
        cmd = [self.binary, "demo", "--size", str(size), "--levels", str(self.args.levels),
               "--repeat", str(self.args.reps), "--warmup", str(self.args.warmup)]
        units = self.args.units or (simulate.units(size) if self.args.simulate else 0)
        if units:
            cmd += ["--units", str(units)]
        return cmd + self.lp_flag()

    def parse(self, out, size):
        d = result_fields(out, "forward")
        if d is None:
            return None
        m = result_measure(d)
        if m.median_ms:
            m.throughput = 2 * size * size * 4 / (m.median_ms * 1e6)  # GB/s, host to host
        return m


class Gemm(App):
    """Our tiled GEMM (apps/gemm.cpp): RESULT gemm ... median_ms=.. gflops=..; per-iteration lines
    give the times when they name a time in ms."""
    name = "gemm"

    def __init__(self, args):
        super().__init__(args)
        self.binary = os.path.join(args.build, "bin", "gemm")
        self._help = None

    def sizes(self):
        return self.args.gemm_sizes

    def setup(self, size):
        return (f"{size}, {'float' if self.args.precision == 's' else 'double'}, tile {self.args.tile}, "
                f"split {self.args.gemm_split}")

    def has_warmup_flag(self):
        return "--warmup" in self.help_text()

    def command(self, size):
        cmd = [self.binary, "--precision", self.args.precision, "--size", str(size), "--tile", str(self.args.tile)]
        if "--split" in self.help_text():  # builds before the splits were all 3d
            cmd += ["--split", self.args.gemm_split]
        cmd += self.lp_flag()
        if self.has_warmup_flag():
            return cmd + ["--warmup", str(self.args.warmup), "--iter", str(self.args.reps)]
        return cmd + ["--iter", str(self.args.warmup + self.args.reps)]

    def parse(self, out, size):
        d = result_fields(out, "gemm")
        if d is None:
            return None
        m = result_measure(d)
        if not m.times_ms:  # per-iteration lines: "iter 3 ... 12.3 ms"
            its = [float(x.group(1)) for x in
                   (re.match(r"^\s*iter(?:ation)?\s*\d+\b.*?([0-9]+(?:\.[0-9]+)?)\s*ms\b", line, re.I)
                    for line in out.splitlines()) if x]
            if not self.has_warmup_flag():
                its = its[self.args.warmup:] if len(its) > self.args.warmup else []
            m.times_ms = its
        if m.times_ms and len(m.times_ms) >= self.args.reps:
            m.times_ms = m.times_ms[-self.args.reps:]  # the warm-up iterations come first
            ts = sorted(m.times_ms)
            m.median_ms, m.min_ms, m.max_ms = ts[len(ts) // 2], ts[0], ts[-1]
        elif not self.has_warmup_flag():
            m.note = "median over all iterations, warm-up included (no per-iteration times found)"
        if m.min_ms is None:
            m.min_ms = m.max_ms = m.median_ms
        if m.median_ms:
            m.throughput = 2.0 * size ** 3 / (m.median_ms * 1e6)
        return m


class StarpuXgemm(App):
    """StarPU's examples/mult sgemm or dgemm (scripts/build_starpu_examples.sh), split as ours
    (--gemm-split: 2d, one task per C block over the whole k; 3d, -3d: one task per C_ij += A_ip
    B_pj): one process per run, each timing `-iter I` products
    (default 1) with A, B and C registered once; it prints the mean per product. The warm-up
    processes calibrate StarPU's models on disk."""
    in_process = False
    registers_policies = False

    def __init__(self, args, prec):
        super().__init__(args)
        self.name = f"starpu-{prec}gemm"
        self.binary = os.path.join(args.starpu_examples or os.path.join(args.build, "starpu-examples"), f"{prec}gemm")

    def sizes(self):
        return self.args.sgemm_sizes

    def setup(self, size):
        return f"{size}, tile {self.args.tile}, {self.args.gemm_split}, -iter {self.args.sgemm_iter}"

    def command(self, size):
        nblocks = max(1, -(-size // self.args.tile))
        split = ["-3d"] if self.args.gemm_split == "3d" else []  # as our gemm's --split
        return [self.binary, "-size", str(size), "-nblocks", str(nblocks)] + split + ["-iter", str(self.args.sgemm_iter)]

    def parse_one(self, out, size):
        for line in out.splitlines():
            f = line.split()
            if len(f) >= 5 and not line.startswith("#") and f[0] == str(size):
                try:
                    ms, gflops = float(f[3]), float(f[4])
                except ValueError:
                    continue
                # ms is printed rounded to 1 ms; GFLOP/s to 0.1: take the more precise one.
                return 2.0 * size ** 3 / (gflops * 1e6) if gflops > 0 and ms < 1000 else ms
        return None


# ---------------------------------------------------------------------------------------------
# Machine, conditions, worker classes.

@dataclass
class Machine:
    nproc: int
    cpu: int        # CPU workers StarPU takes by default (with the GPUs)
    cuda: int
    gpus: list
    how: str

    @property
    def has_gpu(self):
        return self.cuda > 0


def detect_machine(args):
    if args.simulate:  # the platform's counts, not this machine's
        hosts, cuda, gpus = simulate.machine_counts(args.sim_info)
        return Machine(hosts, args.ncpu or max(1, hosts - cuda), cuda, gpus,
                       f"the platform's bus/{args.simulate}.config (StarPU's default workers)")
    nproc = os.cpu_count() or 1
    gpus = []
    if shutil.which("nvidia-smi"):
        try:
            p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
            gpus = [x for x in p.stdout.splitlines() if x.startswith("GPU ")]
        except (OSError, subprocess.TimeoutExpired):
            pass
    lwt2d = os.path.join(args.build, "bin", "lwt2d")
    if os.access(lwt2d, os.X_OK):
        env = clean_env(args)
        env["FNNDTPS_SAVE"] = "0"  # and nothing to load from its model folder:
        env["FNNDTPS_MODEL_DIR"] = os.path.join(args.out, "models", "none")
        env["STARPU_SCHED"] = "eager"
        if args.ncpu:
            env["STARPU_NCPU"] = str(args.ncpu)
        try:
            p = subprocess.run([lwt2d, "demo", "--size", "64", "--levels", "1", "--repeat", "2"], env=env,
                               capture_output=True, text=True, timeout=args.timeout)
            d = result_fields(p.stdout, "forward")
            if d and to_int(d, "cpu") is not None:
                return Machine(nproc, to_int(d, "cpu"), to_int(d, "cuda"), gpus,
                               "lwt2d's workers with StarPU's defaults")
        except (OSError, subprocess.TimeoutExpired):
            pass
    cuda = len(gpus)
    return Machine(nproc, args.ncpu or max(1, nproc - cuda), cuda, gpus, "nvidia-smi and the core count")


@dataclass
class WorkerClass:
    name: str
    env: dict       # a value None removes the variable
    weight: float   # T* = 1 / sum(weight / T)
    how: str
    policy: str = CLASS_POLICY


@dataclass(eq=False)  # compared and hashed by identity
class Condition:
    name: str
    label: str
    env: dict
    perturb_args: list   # None: no perturb process
    detail: str
    classes: list = field(default_factory=list)
    bound_how: str = ""
    skip_note: str = ""
    not_ours_note: str = ""  # set: every policy but ours is skipped with this note


def cond_label(name):
    """A condition's label from its name (also for --from-csv): none -> stable,
    gpu50-2gpu -> gpu50, 2 GPUs."""
    base, k = re.fullmatch(r"(.*?)(?:-(\d+)gpu)?", name).groups()
    text = "stable" if base == "none" else base
    return text if k is None else f"{text}, {k} GPU" + ("s" if k != "1" else "")


def clean_env(args):
    env = dict(os.environ)
    for k in list(env):  # the bench owns the emulation settings
        if k.startswith("FNNDTPS_SLOWDOWN") or k == "FNNDTPS_EMULATED_GPUS":
            del env[k]
    env.update(STARPU_SILENT="1", OPENBLAS_NUM_THREADS="1")
    if args.malloc_tuning:
        # glibc serves the data units' temporary buffers (MBs each) by mmap and returns them at
        # every free: in a one-worker process that costs 4x the page faults and doubles lwt2d's
        # time (2048^2: 25 ms instead of 12), an allocator artefact that would make every class
        # measured alone look slow. A fixed threshold keeps them on the heap, in every process.
        env.setdefault("MALLOC_MMAP_THRESHOLD_", str(32 << 20))
    return env


def default_factors(nproc):
    # As many workers as cores: with more, the workers' own compute would share cores and the
    # bound from workers measured alone would be out of reach. 1,1,2,4 needs 2.75 cores' worth
    # of compute; on 2 or 3 cores, two workers 1,3 need 1.33.
    if nproc >= 4:
        return [1.0, 1.0, 2.0, 4.0]
    if nproc >= 2:
        return [1.0, 3.0]
    return [1.0]


def make_conditions(args, machine):
    conds = []
    perturb_bin = os.path.join(args.build, "bin", "perturb")
    allowed = sorted(os.sched_getaffinity(0))
    cores = args.perturb_cores or allowed[-max(1, len(allowed) // 4):]
    if set(cores) - set(allowed):
        die(f"--perturb-cores {','.join(map(str, cores))}: this process may use cores "
            f"{','.join(map(str, allowed))}")
    factors = args.emu_factors or default_factors(machine.nproc)
    nworkers = len(factors)
    if args.emu_gpus and "emulated" not in args.perturb:
        die("--emu-gpus applies to the emulated condition: add emulated to --perturb")
    if args.gpus and not machine.has_gpu:
        die("--gpus needs GPUs; this machine has none")
    if args.gpus and max(args.gpus) > machine.cuda:
        die(f"--gpus {','.join(map(str, args.gpus))}: this machine has {machine.cuda} GPU(s)")
    for name in args.perturb:
        m = re.fullmatch(r"(none|stable|emulated|gpu|cpu)(\d*)", name)
        if not m or (m.group(2) and m.group(1) not in ("gpu", "cpu")):
            die(f"unknown perturbation '{name}': use none, gpuNN, cpuNN or emulated")
        kind = m.group(1)
        duty = int(m.group(2) or 50)
        if not 0 < duty <= 100:
            die(f"'{name}': the duty cycle is a percentage in 1..100")
        cname = "none" if kind == "stable" else f"{kind}{duty}" if kind in ("gpu", "cpu") else name
        c = Condition(name=cname, label=cond_label(cname), env={}, perturb_args=None, detail="no perturbation")
        if kind in ("gpu", "cpu"):
            if not os.access(perturb_bin, os.X_OK):
                c.skip_note = f"{perturb_bin} not built"
            elif kind == "gpu" and not machine.has_gpu:
                c.skip_note = "no GPU on this machine"
            elif kind == "gpu":
                c.perturb_args = [perturb_bin, "--gpu", str(args.perturb_gpu)]
            else:
                c.perturb_args = [perturb_bin, "--cpu-cores", ",".join(map(str, cores))]
            if c.perturb_args:
                c.perturb_args += ["--duty", str(duty / 100), "--period-ms", f"{args.period_ms:g}"]
                c.detail = (f"busy kernel on GPU {args.perturb_gpu}" if kind == "gpu" else
                            f"busy threads on cores {','.join(map(str, cores))}") + \
                    f", on {duty}% of every {args.period_ms:g} ms (perturb)"
        elif kind == "emulated":
            if machine.has_gpu:
                c.skip_note = "emulation stands in for heterogeneity on CPU-only machines; use gpuNN or cpuNN here"
            spec = ",".join(f"{i}:{f:g}" for i, f in enumerate(factors))
            c.env = {"FNNDTPS_SLOWDOWN": spec}
            c.detail = f"emulated slowdown FNNDTPS_SLOWDOWN={spec} (applied by our policies; built-ins skipped)"
            c.not_ours_note = EMU_NOT_OURS
            if args.emu_gpus:
                if max(args.emu_gpus) >= nworkers:
                    die(f"--emu-gpus {','.join(map(str, args.emu_gpus))}: the workers are 0-{nworkers - 1}")
                c.env["FNNDTPS_EMULATED_GPUS"] = ",".join(map(str, args.emu_gpus))
                c.detail += f", GPU class FNNDTPS_EMULATED_GPUS={c.env['FNNDTPS_EMULATED_GPUS']}"
        if machine.has_gpu:
            ncpu = args.ncpu or machine.cpu
            if args.ncpu:
                c.env["STARPU_NCPU"] = str(args.ncpu)
            c.classes = [
                WorkerClass("gpu-alone", {"STARPU_NCPU": "0"}, 1, "the GPUs alone"),
                WorkerClass("cpu-alone", {"STARPU_NCUDA": "0", "STARPU_NCPU": str(ncpu)}, 1,
                            f"the {ncpu} CPU workers alone"),
            ]
            c.bound_how = "measured: T* = 1/(1/T_gpu-alone + 1/T_cpu-alone)"
        else:
            worker_cores = [i % machine.nproc for i in range(nworkers)]
            c.env["STARPU_NCPU"] = str(nworkers)
            c.env["STARPU_WORKERS_CPUID"] = " ".join(map(str, worker_cores))
            groups = {}
            for i in range(nworkers):
                f = factors[i] if kind == "emulated" else 1.0
                core = worker_cores[i] if kind == "cpu" else None
                groups[(core, f)] = groups.get((core, f), 0) + 1
            # Under emulation the classes run under our `even` (the slowdown is our policies'),
            # without the co-run's GPU class: one worker has no split between classes, and our
            # policies refuse an FNNDTPS_EMULATED_GPUS that names a worker it does not have.
            emu_class = {"FNNDTPS_EMULATED_GPUS": None}
            under = f" under {EMU_CLASS_POLICY} (our policies apply the slowdown)"
            if kind == "emulated" and args.bound == "computed":
                c.classes = [WorkerClass("1-worker", {"STARPU_NCPU": "1", "FNNDTPS_SLOWDOWN": None, **emu_class},
                                         sum(1 / f for f in factors), "one unslowed worker alone" + under,
                                         EMU_CLASS_POLICY)]
                c.bound_how = (f"computed: T* = T_1 / sum(1/f_i), f = {','.join(f'{f:g}' for f in factors)}, "
                               "T_1 one unslowed worker alone" + under)
            else:
                for (core, f), count in sorted(groups.items(), key=lambda kv: (kv[0][0] or 0, kv[0][1])):
                    env = {"STARPU_NCPU": "1", "STARPU_WORKERS_CPUID": str(core if core is not None else 0)}
                    name, how, policy = "1-worker", "one worker alone", CLASS_POLICY
                    if kind == "emulated":
                        env.update(FNNDTPS_SLOWDOWN=f"0:{f:g}", **emu_class)
                        name, how, policy = f"1-worker-x{f:g}", f"one worker alone slowed x{f:g}" + under, \
                            EMU_CLASS_POLICY
                    if core is not None:
                        name, how = f"1-worker-core{core}", f"one worker alone on core {core}"
                    c.classes.append(WorkerClass(name, env, count, how, policy))
                c.bound_how = ("measured: T* = 1/sum(n_k/T_k), T_k one worker alone"
                               + (under if kind == "emulated" else "") + ", n_k workers like it")
        if args.simulate and cname != "none":
            c.skip_note = "needs real hardware; a simulated run has only the stable condition (none)"
        conds.append(c)
    if args.gpus:
        fewest = min(args.gpus)
        if not args.simulate and any(c.name.startswith("gpu") for c in conds) and args.perturb_gpu >= fewest:
            die(f"--perturb-gpu {args.perturb_gpu}: with --gpus {fewest} the co-run uses only CUDA device"
                + (" 0" if fewest == 1 else f"s 0-{fewest - 1}") + "; the perturbed GPU must be one the co-run uses")
        conds = [at_gpu_count(c, k, args.ncpu or machine.cpu) for c in conds for k in args.gpus]
    return conds, factors, nworkers


def at_gpu_count(cond, k, ncpu):
    """--gpus: the condition with StarPU's first k GPUs, its bound measured with the same k."""
    c = copy.deepcopy(cond)
    c.name = f"{cond.name}-{k}gpu"
    c.label = cond_label(c.name)
    # STARPU_NCPU fixed too: StarPU's default gives a CPU worker more for every GPU left out,
    # and the co-run must have the cpu-alone class's workers for the bound to hold.
    c.env.update(STARPU_NCUDA=str(k), STARPU_NCPU=str(ncpu))
    for wc in c.classes:
        if wc.name == "gpu-alone":
            wc.env["STARPU_NCUDA"] = str(k)
            wc.how = f"the {k} GPU(s) alone"
    return c


# ---------------------------------------------------------------------------------------------
# Running.

class Perturber:
    """The condition's `perturb` process, running through all of the condition's jobs."""

    def __init__(self, argv):
        self.argv = argv
        self.proc = None
        self.line = ""

    def start(self):
        """None when running (or nothing to run), else why it did not start."""
        if not self.argv:
            return None
        try:
            self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        except OSError as e:
            return str(e)
        ready, _, _ = select.select([self.proc.stdout], [], [], 60)  # its line comes once the load is set up
        self.line = self.proc.stdout.readline().strip() if ready else ""
        if self.proc.poll() is not None or not self.line:
            self.stop()
            return (self.proc.stderr.read().strip() or f"{self.argv[0]} exited with {self.proc.returncode}")
        time.sleep(0.2)
        return None

    def dead(self):
        """Why a started perturbation is no longer running, or None."""
        if self.proc is None or self.proc.poll() is None:
            return None
        return f"perturb exited with {self.proc.returncode}: {self.proc.stderr.read().strip()[:200]}"

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def run_process(argv, env, timeout, logpath, extra_env):
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
        rc, out, err, timed_out = p.returncode, p.stdout, p.stderr, False
    except subprocess.TimeoutExpired as e:
        rc, timed_out = None, True
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
    except OSError as e:
        rc, out, err, timed_out = 127, "", str(e), False
    with open(logpath, "a") as f:
        f.write("$ " + " ".join(f"{k}='{v}'" for k, v in sorted(extra_env.items())) + " " + " ".join(argv) + "\n")
        f.write(f"# rc={rc} timed_out={timed_out} wall={time.monotonic() - t0:.2f}s\n")
        f.write("## stdout\n" + out + "\n## stderr\n" + err + "\n")
    return rc, out, err, timed_out


def last_line(text):
    lines = [x for x in text.splitlines() if x.strip()]
    return lines[-1].strip()[:200] if lines else ""


def measure(app, size, policy, cond, extra, args, logpath, trace=""):
    """One configuration: the app's timed runs after its warm-up, under `policy` and the
    condition's environment plus `extra`. With `trace` (a path ending in .json): the median
    run's trace there and its Gantt chart beside it (.png)."""
    env = clean_env(args)
    run_env = dict(cond.env)
    run_env.update(extra)
    run_env["STARPU_SCHED"] = policy
    # Under FNNDTPS_TRACE the library traces StarPU's built-ins too (scheduler/trace.hpp).
    if (policy in OURS or trace) and not app.registers_policies:
        run_env["STARPU_SCHED_LIB"] = os.path.join(args.build, "lib", "libfnndtps.so")
    if trace:
        run_env["FNNDTPS_TRACE"] = trace + ".all.json"
    for k, v in run_env.items():  # None: the variable removed
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    run_env = {k: v for k, v in run_env.items() if v is not None}
    open(logpath, "w").close()
    argv = app.command(size)
    if app.in_process:
        rc, out, err, timed_out = run_process(argv, env, args.timeout, logpath, run_env)
        if args.simulate:
            simulate.check_models(out + err, app, size, args)
        if timed_out:
            return Measure(status="timeout", note=f"no result within {args.timeout} s", log=logpath)
        m = app.parse(out, size) if rc == 0 else None
        if m is None or m.median_ms is None:
            return Measure(status="failed", note=f"exit {rc}: {last_line(err) or last_line(out)}", log=logpath)
        m.log = logpath
        m.lp_ms, m.lp_note = lp_bound(out)
        if trace:
            m.trace = cut_trace(trace + ".all.json", trace, "median")
        return m
    times = []
    for i in range(args.warmup + args.reps):  # one process per run; the warm-ups calibrate StarPU's models
        if trace:
            env["FNNDTPS_TRACE"] = f"{trace}.run{i}.json"
        rc, out, err, timed_out = run_process(argv, env, args.timeout, logpath, run_env)
        if timed_out:
            return Measure(status="timeout", note=f"run {i + 1} took more than {args.timeout} s", log=logpath)
        t = app.parse_one(out, size) if rc == 0 else None
        if t is None:
            return Measure(status="failed", note=f"run {i + 1}: exit {rc}: {last_line(err) or last_line(out)}",
                           log=logpath)
        if i >= args.warmup:
            times.append(t)
    ts = sorted(times)
    m = Measure(median_ms=ts[len(ts) // 2], min_ms=ts[0], max_ms=ts[-1], times_ms=times,
                throughput=2.0 * size ** 3 / (ts[len(ts) // 2] * 1e6), log=logpath)
    if trace:  # the process of the median time; the others' traces go
        median_run = args.warmup + times.index(m.median_ms)
        for i in range(args.warmup + args.reps):
            if i != median_run:
                try:
                    os.remove(f"{trace}.run{i}.json")
                except OSError:
                    pass
        m.trace = cut_trace(f"{trace}.run{median_run}.json", trace, "all")
    return m


def cut_trace(full, out, run):
    """The `run` window of trace `full` as `out` (.json) and its Gantt chart (.png); `full` goes.
    Returns `out`, or "" where the program wrote no trace."""
    if not os.path.exists(full):
        log(f"   no trace from the run: {full} missing")
        return ""
    tr = gantt.Trace(full)
    label, t0, t1 = tr.window(run if tr.runs or run == "all" else "all")
    tasks = tr.tasks if label == "all tasks" else tr.tasks_in(t0, t1)
    gantt.write_cut(tr, tasks, label, out)
    os.remove(full)
    gantt.plot([gantt.Trace(out)], "all", os.path.splitext(out)[0] + ".png")
    return out


def write_sheets(args, rows):
    """Per app, size and condition: our best policy's median run above the best built-in's."""
    done = []
    for key in dict.fromkeys((r.app, r.size, r.cond.name) for r in rows):
        group = [r for r in rows if (r.app, r.size, r.cond.name) == key and r.m.status == "ok" and r.m.trace]
        best = [min((r for r in group if r.kind == kind), key=lambda r: r.m.median_ms, default=None)
                for kind in ("ours", "builtin")]
        best = [r for r in best if r]
        if best:
            out = os.path.join(args.out, "traces", safe(f"{key[0]}_{key[1]}_{key[2]}_sheet.png"))
            gantt.plot([gantt.Trace(r.m.trace) for r in best], "all", out)
            done.append(out)
    return done


@dataclass
class Row:
    app: str
    size: int
    cond: Condition
    policy: str
    kind: str          # ours | builtin | class
    m: Measure
    weight: float = None
    setup: str = ""
    vs_best: float = None
    pct_bound: float = None
    pct_lp: float = None
    reps: int = None


def safe(name):
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def run_all(args, machine, apps, conds):
    jobs = []  # (cond, app, size, policy-or-class)
    for cond in conds:
        for app in apps:
            for size in app.sizes():
                for wc in cond.classes:
                    jobs.append((cond, app, size, wc))
                for p in args.policies:
                    jobs.append((cond, app, size, p))
    rows = []
    total = len(jobs)
    i = 0
    for cond in conds:
        block = [j for j in jobs if j[0] is cond]
        pert = Perturber(None if cond.skip_note else cond.perturb_args)
        failed = pert.start()
        if failed:
            cond.detail = f"perturb did not start: {failed}"
            log(f"   {cond.label}: {cond.detail}")
        elif pert.line:
            cond.detail = pert.line
            log(f"   {cond.label}: {pert.line}")
        try:
            for _, app, size, what in block:
                i += 1
                is_class = isinstance(what, WorkerClass)
                name = what.name if is_class else what
                kind = "class" if is_class else ("ours" if what in OURS else "builtin")
                prefix = f"[{i}/{total}] {app.name} {size} {name} {cond.label}"
                row = Row(app.name, size, cond, name, kind, None, what.weight if is_class else None, app.setup(size))
                rows.append(row)
                skip = cond.skip_note or (not is_class and what not in OURS and cond.not_ours_note) or ""
                if skip:
                    log(f"{prefix} skipped: {skip}")
                    row.m = Measure(status="skipped", note=skip)
                    continue
                failed = failed or pert.dead()
                if failed:  # never measure a perturbed row without its perturbation
                    log(f"{prefix} FAILED: perturbation: {failed}")
                    row.m = Measure(status="failed", note=f"perturbation: {failed}")
                    continue
                print(f"{prefix} ...", end="", file=sys.stderr, flush=True)
                models = os.path.join(args.out, "models", safe(cond.name), app.name,
                                      "class-" + name if is_class else name)
                os.makedirs(models, exist_ok=True)
                extra = {"FNNDTPS_MODEL_DIR": models}
                if is_class:
                    extra.update(what.env)
                logpath = os.path.join(args.out, "logs", safe(f"{app.name}_{size}_{cond.name}_{name}.log"))
                t0 = time.monotonic()
                if is_class and args.class_reps != args.reps:  # the classes alone: --class-reps runs
                    run_args = argparse.Namespace(**{**vars(args), "reps": args.class_reps})
                    run_app = copy.copy(app)
                    run_app.args = run_args
                else:
                    run_args, run_app = args, app
                row.reps = run_args.reps
                trace = os.path.join(args.out, "traces", safe(f"{app.name}_{size}_{cond.name}_{name}.json")) if args.trace else ""
                row.m = measure(run_app, size, what.policy if is_class else what, cond, extra, run_args, logpath, trace)
                if row.m.status == "ok":
                    print(f" {row.m.median_ms:.2f} ms{' simulated' if args.simulate else ''}"
                          f" (min {row.m.min_ms:.2f}, max {row.m.max_ms:.2f})"
                          f" [{time.monotonic() - t0:.1f} s]", file=sys.stderr, flush=True)
                else:
                    print(f" {row.m.status.upper()}: {row.m.note}", file=sys.stderr, flush=True)
                # The CSV so far after every run: a bench cut short (a device's time limit) keeps
                # what it measured.
                done = [r for r in rows if r.m is not None]
                write_csv(args, done, ratios(done))
        finally:
            pert.stop()
    return rows, ratios(rows)


def ratios(rows):
    """The bound and each row's ratios, per (app, size, condition)."""
    bounds = {}
    for key in {(r.app, r.size, r.cond.name) for r in rows}:
        group = [r for r in rows if (r.app, r.size, r.cond.name) == key]
        cls = [r for r in group if r.kind == "class"]
        bound = None
        if cls and all(r.m.status == "ok" for r in cls):
            bound = 1.0 / sum(r.weight / r.m.median_ms for r in cls)
        bounds[key] = bound
        builtin = [r.m.median_ms for r in group if r.kind == "builtin" and r.m.status == "ok"]
        best = min(builtin) if builtin else None
        lp, _ = lp_of(group)
        for r in group:
            if r.kind == "class" or r.m.status != "ok":
                continue
            r.vs_best = r.m.median_ms / best if best else None
            r.pct_bound = 100.0 * bound / r.m.median_ms if bound else None
            r.pct_lp = 100.0 * lp / r.m.median_ms if lp else None
    return bounds


def lp_of(group):
    """StarPU's LP bound for a group: the median of its policies' recordings, and what it says
    (or why there is none)."""
    runs = [r for r in group if r.kind != "class" and r.m.status == "ok"]
    lps = sorted(r.m.lp_ms for r in runs if r.m.lp_ms)
    if lps:
        return lps[len(lps) // 2], (f"StarPU's starpu_bound_compute (no dependencies), median of {len(lps)} "
                                    "configurations' recordings")
    notes = [r.m.lp_note for r in runs if r.m.lp_note]
    return None, ("none: " + notes[0]) if notes else ""


# ---------------------------------------------------------------------------------------------
# Output: table, CSV, plot.

def is_simulated(args, rows):
    """Simulated times: --simulate, or (--from-csv) rows whose condition says so."""
    return bool(getattr(args, "simulate", None)) or any("simulated" in r.cond.detail for r in rows)


def write_table(args, rows, bounds, header):
    lines = header[:]
    lines.append("ours: " + " ".join(OURS) + "; vs_best: median / best built-in's median (same app, size,"
                 " perturbation; - where none ran); %bound: 100 T* / median; %LP: 100 LP / median")
    lines.append("")
    width = max([10] + [len(r.cond.label) for r in rows])  # "gpu50, 4 GPUs" under --gpus
    fmt_row = "{:<13} {:>6} {:<%d} {:<16} {:>10} {:>10} {:>10} {:>8} {:>7} {:>6}" % width
    sim = is_simulated(args, rows)
    if sim:
        lines.append("every time below is simulated (SimGrid, ms of simulated time), not measured")
    lines.append(fmt_row.format("app", "size", "perturb", "policy", *(("sim_median", "sim_min", "sim_max") if sim else
                                ("median_ms", "min_ms", "max_ms")), "vs_best", "%bound", "%LP"))
    seen = []
    for r in rows:
        key = (r.app, r.size, r.cond.name)
        if key in seen:
            continue
        seen.append(key)
        group = [x for x in rows if (x.app, x.size, x.cond.name) == key]
        cls = [x for x in group if x.kind == "class"]
        b = bounds.get(key)
        parts = ", ".join(f"{x.policy} {fmt(x.m.median_ms)} ms x{x.weight:.3g}" if x.m.status == "ok"
                          else f"{x.policy} {x.m.status}" for x in cls)
        if all(x.m.status == "skipped" for x in group):
            lines.append(fmt_row.format(r.app, r.size, r.cond.label, "(skipped)", "", "", "", "", "", "") +
                         f"  {group[0].m.note}")
            continue
        lines.append(fmt_row.format(r.app, r.size, r.cond.label, "bound T* (sim)" if sim else "bound T*", fmt(b),
                                    "", "", "", "", "") + f"  from {parts}" + (" simulated" if sim else ""))
        lp, lp_how = lp_of(group)
        if lp_how:
            lines.append(fmt_row.format(r.app, r.size, r.cond.label, "bound LP", fmt(lp), "", "", "", "", "") +
                         f"  {lp_how}")
        skipped = {}  # note -> policies: one line each (the built-ins under emulation)
        for x in group:
            if x.kind == "class":
                continue
            name = x.policy + (" *" if x.kind == "ours" else "")
            if x.m.status == "skipped":
                skipped.setdefault(x.m.note, []).append(x.policy)
            elif x.m.status != "ok":
                lines.append(fmt_row.format(x.app, x.size, x.cond.label, name, x.m.status.upper(), "", "", "", "", "") +
                             f"  {x.m.note}")
            else:
                lines.append(fmt_row.format(x.app, x.size, x.cond.label, name, fmt(x.m.median_ms), fmt(x.m.min_ms),
                                            fmt(x.m.max_ms), fmt(x.vs_best), fmt(x.pct_bound, ".1f"), fmt(x.pct_lp, ".1f")))
        for note, names in skipped.items():
            lines.append(fmt_row.format(r.app, r.size, r.cond.label, "(skipped)", "", "", "", "", "", "") +
                         f"  {','.join(names)}: {note}")
        ok = [x for x in group if x.kind != "class" and x.m.status == "ok"]
        if ok:
            best = min(ok, key=lambda x: x.m.median_ms)
            lines.append(f"{'':<13} {'':>6} {'':<{width}} best co-run: {best.policy} {best.m.median_ms:.2f} ms"
                         + (" simulated" if sim else "")
                         + (f", {best.pct_bound:.1f}% of the bound" if best.pct_bound else ""))
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "table.txt"), "w") as f:
        f.write(text)
    return text


def write_csv(args, rows, bounds):
    """results.csv: one row per configuration (policies and the classes measured alone)."""
    path = os.path.join(args.out, "results.csv")
    cols = ["app", "size", "setup", "perturbation", "perturbation_detail", "policy", "kind", "status", "median_ms",
            "min_ms", "max_ms", "vs_best_builtin", "pct_bound", "bound_ms", "bound_method", "class_weight",
            "reps", "warmup", "cpu_workers", "cuda_workers", "throughput", "throughput_unit", "times_ms",
            "note", "log", "lp_ms", "pct_lp", "lp_note", "trace"]
    units = {"lwt2d": "GB/s"}
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            m = r.m
            w.writerow([r.app, r.size, r.setup, r.cond.name, r.cond.detail, r.policy, r.kind, m.status,
                        fmt(m.median_ms, ".3f") if m.median_ms else "", fmt(m.min_ms, ".3f") if m.min_ms else "",
                        fmt(m.max_ms, ".3f") if m.max_ms else "",
                        fmt(r.vs_best, ".3f") if r.vs_best else "", fmt(r.pct_bound, ".1f") if r.pct_bound else "",
                        fmt(bounds.get((r.app, r.size, r.cond.name)), ".3f") if bounds.get((r.app, r.size, r.cond.name)) else "",
                        r.cond.bound_how, "" if r.weight is None else f"{r.weight:g}",
                        r.reps or args.reps, args.warmup, "" if m.cpu is None else m.cpu, "" if m.cuda is None else m.cuda,
                        fmt(m.throughput, ".3f") if m.throughput else "", units.get(r.app, "GFLOP/s"),
                        ";".join(f"{t:.3f}" for t in m.times_ms), m.note, os.path.relpath(m.log, args.out) if m.log else "",
                        fmt(m.lp_ms, ".3f") if m.lp_ms else "", fmt(r.pct_lp, ".1f") if r.pct_lp else "", m.lp_note,
                        os.path.relpath(m.trace, args.out) if m.trace else ""])
    return path


def load_csv(path):
    """Rows back from a results.csv (--from-csv): the table and the plot again, without running."""
    rows, conds = [], {}
    with open(path, newline="") as f:
        for d in csv.DictReader(f):
            c = conds.get(d["perturbation"])
            if c is None:
                c = conds[d["perturbation"]] = Condition(
                    name=d["perturbation"], label=cond_label(d["perturbation"]),
                    env={}, perturb_args=None, detail=d["perturbation_detail"], bound_how=d["bound_method"])

            def num(key):
                return float(d[key]) if d.get(key) else None
            m = Measure(status=d["status"], median_ms=num("median_ms"), min_ms=num("min_ms"), max_ms=num("max_ms"),
                        times_ms=[float(t) for t in d["times_ms"].split(";") if t],
                        cpu=int(d["cpu_workers"]) if d["cpu_workers"] else None,
                        cuda=int(d["cuda_workers"]) if d["cuda_workers"] else None,
                        throughput=num("throughput"), note=d["note"], log=d["log"],
                        lp_ms=num("lp_ms"), lp_note=d.get("lp_note", ""))
            rows.append(Row(d["app"], int(d["size"]), c, d["policy"], d["kind"], m, num("class_weight"), d["setup"]))
    return rows, list(conds.values())


# Ten: --gpus 1,2,4,8 under two conditions draws eight.
COND_COLOURS = ["#4C72B0", "#DD8452", "#C44E52", "#8172B3", "#55A868",
                "#937860", "#DA8BC3", "#8C8C8C", "#CCB974", "#64B5CD"]


def plot(args, rows, bounds, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
        from matplotlib.lines import Line2D
    except ImportError as e:
        log(f"compare.py: no PNG ({e}); the table and the CSV are written")
        return None
    panels, setups = [], {}
    for r in rows:
        if r.m.status != "skipped" and (r.app, r.size) not in panels:
            panels.append((r.app, r.size))
            setups[(r.app, r.size)] = r.setup
    if not panels:
        return None
    names = list(dict.fromkeys(r.policy for r in rows if r.kind != "class"))
    policies = [p for p in names if p in OURS] + [p for p in names if p not in OURS]
    shown = list(dict.fromkeys(r.cond for r in rows if r.m.status != "skipped"))
    # About 0.3 inch per bar; two panels side by side while a panel stays narrow enough.
    panel_w = min(11.0, max(6.0, 0.3 * len(policies) * max(1, len(shown)) + 1.5))
    ncols = 2 if len(panels) > 1 and panel_w <= 8.5 else 1
    nrows = (len(panels) + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(panel_w * ncols, 4.0 * nrows + 1.3), squeeze=False)
    nc = max(1, len(shown))
    bw = 0.8 / nc
    for ax, (app, size) in zip(axes.flat, panels):
        n_ours = sum(1 for p in policies if p in OURS)
        if n_ours:
            ax.axvspan(-0.5, n_ours - 0.5, color="#E8F3E8", zorder=0)
        bound_text = []
        here = [x for x in rows if x.app == app and x.size == size]
        # The axis ends a little above the slowest median (or the bound): a lone slow outlier
        # keeps the panel readable, its error bar is cut and its maximum written at the top.
        top = max([x.m.median_ms for x in here if x.m.status == "ok" and x.kind != "class"] +
                  [bounds.get((app, size, c.name)) or 0 for c in shown] + [0]) * 1.35
        for ci, cond in enumerate(shown):
            colour = COND_COLOURS[ci % len(COND_COLOURS)]
            for pi, p in enumerate(policies):
                r = next((x for x in here if x.cond is cond and x.policy == p), None)
                x = pi - 0.4 + bw * (ci + 0.5)
                if r is None or r.m.status == "skipped":
                    continue
                if r.m.status != "ok":
                    ax.plot([x], [0], marker="x", color="red", markersize=8, zorder=4)
                    ax.annotate(r.m.status, (x, 0), xytext=(0, 6), textcoords="offset points", rotation=90,
                                ha="center", va="bottom", fontsize=7, color="red")
                    continue
                ours = p in OURS
                ax.bar(x, r.m.median_ms, bw * 0.92, color=colour, alpha=1.0 if ours else 0.55,
                       hatch=None if ours else "//", edgecolor="black" if ours else colour, linewidth=0.6, zorder=2)
                hi = min(r.m.max_ms, top * 0.9)
                ax.errorbar(x, r.m.median_ms, yerr=[[r.m.median_ms - r.m.min_ms], [hi - r.m.median_ms]],
                            fmt="none", ecolor="black", elinewidth=0.8, capsize=0 if hi < r.m.max_ms else 2, zorder=3)
                label = f"{r.pct_bound:.0f}%" if r.pct_bound else ""
                if hi < r.m.max_ms:  # written downwards beside the cut bar, inside the panel
                    ax.annotate(f"max {r.m.max_ms:.3g}" + (f" ({label})" if label else ""), (x, top), xytext=(2, -3),
                                textcoords="offset points", ha="left", va="top", fontsize=6.5, rotation=90,
                                color="#333333")
                elif label:
                    ax.annotate(label, (x, hi), xytext=(0, 2), textcoords="offset points",
                                ha="center", va="bottom", fontsize=6.5, rotation=90, color="#333333")
            b = bounds.get((app, size, cond.name))
            runs = [x for x in here if x.cond is cond and x.kind != "class"]
            if runs and all(x.m.status == "skipped" for x in runs):
                bound_text.append(f"{cond.label} skipped")
            if b:
                ax.axhline(b, color=colour, linestyle="--", linewidth=1.4, zorder=3)
                bound_text.append(f"{cond.label} {b:.3g} ms" + (" sim" if is_simulated(args, rows) else "") +
                                  (" (built-ins skipped)" if any(x.m.status == "skipped" and x.policy not in OURS
                                                                 for x in runs) else ""))
        top = top or 1.0
        ax.set_xticks(range(len(policies)))
        ax.set_xticklabels(policies, rotation=30, ha="right", fontsize=9)
        for lbl, p in zip(ax.get_xticklabels(), policies):
            if p in OURS:
                lbl.set_fontweight("bold")
                lbl.set_color("#1B5E20")
        ax.set_xlim(-0.5, len(policies) - 0.5)
        ax.set_ylim(0, top)
        ax.set_ylabel(("simulated " if is_simulated(args, rows) else "") + "time (ms), lower is better")
        # Four bounds a line; "; " between them when the labels have commas ("stable, 2 GPUs").
        sep = "; " if any("," in c.label for c in shown) else ", "
        bound_lines = [sep.join(bound_text[i:i + 4]) for i in range(0, len(bound_text), 4)]
        ax.set_title(f"{app} {setups[(app, size)]}" + ("\nbound T* (dashed): " + "\n".join(bound_lines) if bound_text else ""),
                     fontsize=10)
        ax.grid(axis="y", alpha=0.3, zorder=1)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    handles = [Patch(facecolor=COND_COLOURS[i % len(COND_COLOURS)], edgecolor="black", label=c.label)
               for i, c in enumerate(shown)]
    handles += [Patch(facecolor="#E8F3E8", edgecolor="none", label="ours: shaded, names in bold"),
                Patch(facecolor="white", edgecolor="grey", hatch="//", label="StarPU built-ins: hatched"),
                Line2D([0], [0], color="black", linestyle="--", label="divisible-load bound T* (per condition)"),
                Line2D([0], [0], color="black", marker="|", linestyle="none",
                       label="min-max of the timed runs (cut ones: max written)")]
    # Inches kept for the title (top) and the legend (bottom), whatever the number of panels.
    # A one-panel figure (6 inches) is narrower than a 3-column legend or a long title: two
    # columns there, and the PNG is cut around everything drawn (bbox_inches="tight", the
    # title and the legend named), so neither edge is lost whatever their width.
    fig_h = fig.get_figheight()
    ncol = 3 if fig.get_figwidth() >= 9 else 2
    rows_h = (len(handles) + ncol - 1) // ncol * 0.2 + 0.2
    sup = fig.suptitle(title, fontsize=10, y=1 - 0.08 / fig_h, va="top")
    leg = fig.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 0), ncol=ncol, fontsize=8,
                     frameon=False)
    fig.tight_layout(rect=(0, max(0.62, rows_h) / fig_h, 1, 1 - 0.05 / fig_h))
    path = os.path.join(args.out, "compare.png")
    fig.savefig(path, dpi=150, bbox_inches="tight", pad_inches=0.15, bbox_extra_artists=[sup, leg])
    plt.close(fig)
    return path


# ---------------------------------------------------------------------------------------------


class OneLineParser(argparse.ArgumentParser):
    """Bad options end with one line on stderr (and status 2), not the whole usage."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {message} (see --help)\n")

def parse_args(argv):
    ap = OneLineParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[2:]))
    ap.add_argument("--build", metavar="DIR", help="build folder with bin/ and lib/ (default: build; build-sim under --simulate)")
    ap.add_argument("--simulate", metavar="PLATFORM",
                    help="run on a SimGrid-simulated node: " + ", ".join(simulate.NAMES) + " (see Simulation below); "
                         "default --reps 2 --warmup 1 there (simulated times are deterministic)")
    ap.add_argument("--sim-models", metavar="DIR", help="--simulate: the calibrated StarPU sampling folder the "
                    "platform is derived from (default bench/platforms/h200/sampling)")
    ap.add_argument("--apps", metavar="LIST", type=name_list,
                    help="lwt2d, gemm, starpu-sgemm, starpu-dgemm (default: the first three, lwt2d,gemm under "
                         "--simulate; absent programs are skipped with a note)")
    ap.add_argument("--lwt-sizes", metavar="LIST", type=int_list, help="lwt2d surface sizes (default 8192,16384; quick 2048,4096)")
    ap.add_argument("--gemm-sizes", metavar="LIST", type=int_list, help="gemm matrix sizes (default 16384; quick 1024,2048)")
    ap.add_argument("--sgemm-sizes", metavar="LIST", type=int_list, help="sizes for StarPU's sgemm/dgemm (default: as --gemm-sizes)")
    ap.add_argument("--levels", metavar="L", type=int, help="lwt2d levels (default 4; quick 3)")
    ap.add_argument("--units", metavar="U", type=int, default=0, help="lwt2d data units (default: lwt2d's)")
    ap.add_argument("--tile", metavar="B", type=int, help="gemm and sgemm tile size (default 1024; quick 256)")
    ap.add_argument("--precision", choices=["s", "d"], default="s", help="gemm precision (default s)")
    ap.add_argument("--gemm-split", choices=["2d", "3d"],
                    help="gemm's --split (default 2d; 3d under --simulate, where the calibrated models are of 3d tiles)")
    ap.add_argument("--sgemm-iter", metavar="I", type=int, default=1, help="products per process of StarPU's example, timed together (default 1)")
    ap.add_argument("--reps", metavar="R", type=int, help="timed runs per configuration (default 5)")
    ap.add_argument("--warmup", metavar="W", type=int, help="calibration runs before them, in the same process (default 2)")
    ap.add_argument("--class-reps", metavar="R", type=int,
                    help="timed runs of each worker class alone, for the bound (default: --reps); fewer "
                         "saves the CPU class's long runs on a GPU machine")
    ap.add_argument("--policies", metavar="LIST", type=name_list, default=OURS + BUILTINS,
                    help="policies (default: " + ",".join(OURS + BUILTINS) + ")")
    ap.add_argument("--perturb", metavar="LIST", type=name_list,
                    help="conditions: none, gpuNN, cpuNN, emulated (default: none,gpu50 with a GPU, "
                         "none,emulated without)")
    ap.add_argument("--perturb-gpu", metavar="DEV", type=int, default=0, help="GPU for gpuNN (default 0)")
    ap.add_argument("--perturb-cores", metavar="LIST", type=core_list,
                    help="cores for cpuNN, e.g. 12,13,14,15 (default: the last quarter, at least one)")
    ap.add_argument("--gpus", metavar="LIST", type=gpu_list,
                    help="GPU counts, e.g. 1,2,4,8: every condition once per count k (STARPU_NCUDA=k), "
                         "its bound measured with k GPUs (default: every GPU, once)")
    ap.add_argument("--period-ms", metavar="MS", type=float, default=200, help="perturbation period (default 200 ms)")
    ap.add_argument("--emu-factors", metavar="LIST", type=float_list,
                    help="emulated slowdown per CPU worker (default 1,1,2,4 on 4+ cores, 1,3 on 2-3); "
                         "CPU-only machines run this many CPU workers in every condition")
    ap.add_argument("--emu-gpus", metavar="LIST", type=worker_list,
                    help="emulated condition: workers that dtps and fnn-dtps count as GPUs, e.g. 0 (default none)")
    ap.add_argument("--bound", choices=["measured", "computed"], default="measured",
                    help="emulated bound: each slowed worker alone (measured) or T_1 / sum(1/f) (computed)")
    ap.add_argument("--ncpu", metavar="N", type=int, help="CPU workers on GPU machines (default: StarPU's)")
    ap.add_argument("--starpu-examples", metavar="DIR", help="folder of StarPU's example programs (default BUILD/starpu-examples)")
    ap.add_argument("--timeout", metavar="S", type=float, help="seconds per process before it counts as failed "
                                                  "(default 600; quick 120)")
    ap.add_argument("--out", metavar="DIR", help="output folder (default BUILD/bench)")
    ap.add_argument("--no-malloc-tuning", dest="malloc_tuning", action="store_false",
                    help="leave glibc's mmap threshold alone (default: MALLOC_MMAP_THRESHOLD_=32 MiB in every run)")
    ap.add_argument("--keep-models", action="store_true", help="keep OUT/models from an earlier run")
    ap.add_argument("--trace", action="store_true",
                    help="OUT/traces: each configuration's median run as a trace (Perfetto) and a Gantt PNG, and "
                         "per app, size and condition a sheet of our best policy above the best built-in")
    ap.add_argument("--no-lp", dest="lp", action="store_false",
                    help="leave out StarPU's LP bound (one more untimed run per lwt2d and gemm configuration)")
    ap.add_argument("--from-csv", metavar="CSV", help="run nothing: the table and the PNG again from a results.csv")
    ap.add_argument("--quick", action="store_true", help="small sizes and few runs, for CPU-only machines")
    ap.add_argument("--cold", nargs=argparse.REMAINDER, metavar="...",
                    help="run the cold bench instead, every option after it its own (bench/cold.py --help)")
    args = ap.parse_args(argv)
    if args.cold is not None:
        if argv[0] != "--cold":  # compare's options would be silently dropped
            ap.error("--cold comes first; the options after it are bench/cold.py's")
        return args
    q = args.quick
    sim = bool(args.simulate)
    args.build = args.build or ("build-sim" if sim else "build")
    args.apps = args.apps or (list(simulate.SIM_APPS) if sim else ["lwt2d", "gemm", "starpu-sgemm"])
    args.lwt_sizes = args.lwt_sizes or ([2048, 4096] if q else [8192, 16384])
    args.gemm_sizes = args.gemm_sizes or ([1024, 2048] if q else [16384])
    args.sgemm_sizes = args.sgemm_sizes or args.gemm_sizes
    args.levels = args.levels or (3 if q else 4)
    args.tile = args.tile or (256 if q else 1024)
    args.gemm_split = args.gemm_split or ("3d" if sim else "2d")
    args.reps = args.reps or (2 if sim else 5)
    args.warmup = (1 if sim else 2) if args.warmup is None else args.warmup
    args.timeout = args.timeout or (120 if q else 600)
    args.class_reps = args.class_reps or args.reps
    if args.gpus:  # a count given twice would run twice under one name
        args.gpus = list(dict.fromkeys(args.gpus))
    if args.reps < 2 or args.class_reps < 2:
        ap.error("--reps and --class-reps must be at least 2 (lwt2d reports a median from 2 runs on)")
    if args.warmup < 0 or args.levels < 1 or args.tile < 1 or args.sgemm_iter < 1 or args.units < 0:
        ap.error("--warmup, --levels, --tile, --sgemm-iter and --units must be positive")
    unknown = [a for a in args.apps if a not in ("lwt2d", "gemm", "starpu-sgemm", "starpu-dgemm")]
    if unknown:
        ap.error(f"unknown app(s) {','.join(unknown)}: use lwt2d, gemm, starpu-sgemm, starpu-dgemm")
    return args


def replot(args):
    """--from-csv: the table and the PNG again from a results.csv (e.g. one from the GPU machine)."""
    rows, _ = load_csv(args.from_csv)
    bounds = ratios(rows)
    os.makedirs(args.out, exist_ok=True)
    header = [f"results from {args.from_csv}"]
    old_table = os.path.join(os.path.dirname(os.path.abspath(args.from_csv)), "table.txt")
    if os.path.exists(old_table):
        with open(old_table) as f:
            header = [x.rstrip("\n") for x in f.read().split("\n\n")[0].splitlines()
                      if not x.startswith("ours:")]
    with open(args.from_csv, newline="") as f:
        first = next(csv.DictReader(f), {})
    title = (header[0].replace("compare.py: ", "").split("; detected from")[0] +
             f"\nmedian of {first.get('reps', '?')} after {first.get('warmup', '?')} warm-up; "
             "error bars: min-max; labels: % of the bound")
    print(write_table(args, rows, bounds, header), end="")
    png = plot(args, rows, bounds, title)
    log(f"wrote {os.path.join(args.out, 'table.txt')}" + (f", {png}" if png else ""))
    return 0


def main(argv):
    args = parse_args(argv)
    if args.cold is not None:
        import cold  # bench/cold.py, beside this file
        return cold.main(args.cold)
    args.build = os.path.abspath(args.build)
    args.out = os.path.abspath(args.out or os.path.join(args.build, "bench"))
    if args.from_csv:
        return replot(args)
    t_start = time.monotonic()
    args.sim_info = None
    if args.simulate:
        env, args.sim_info = simulate.prepare(args)
        os.environ.update(env)  # every process: clean_env starts from os.environ
        dropped = [a for a in args.apps if a not in simulate.SIM_APPS]
        if dropped:
            log(f"compare.py: {','.join(dropped)} skipped: StarPU's example programs are not built for simulation")
            args.apps = [a for a in args.apps if a in simulate.SIM_APPS]
    machine = detect_machine(args)
    if args.perturb is None:
        args.perturb = ["none"] if args.simulate else ["none", "gpu50"] if machine.has_gpu else ["none", "emulated"]
    conds, factors, nworkers = make_conditions(args, machine)
    if args.simulate:
        for c in conds:
            if not c.skip_note:
                c.detail += f"; simulated on platform {args.simulate} (SimGrid)"
    all_apps = {"lwt2d": Lwt2d, "gemm": Gemm, "starpu-sgemm": lambda a: StarpuXgemm(a, "s"),
                "starpu-dgemm": lambda a: StarpuXgemm(a, "d")}
    apps = []
    for name in args.apps:
        app = all_apps[name](args)
        ok, why = app.available()
        if ok:
            apps.append(app)
        else:
            log(f"compare.py: {name} skipped: {why}")
    if not apps:
        die(f"none of the apps is built in {args.build} (see --build)")
    os.makedirs(os.path.join(args.out, "logs"), exist_ok=True)
    for f in os.listdir(os.path.join(args.out, "logs")):
        os.remove(os.path.join(args.out, "logs", f))
    if not args.keep_models:
        shutil.rmtree(os.path.join(args.out, "models"), ignore_errors=True)
    shutil.rmtree(os.path.join(args.out, "traces"), ignore_errors=True)
    if args.trace:
        os.makedirs(os.path.join(args.out, "traces"))
    if machine.has_gpu:
        cuda = ",".join(map(str, args.gpus)) if args.gpus else machine.cuda
        workers = f"{args.ncpu or machine.cpu} CPU + {cuda} CUDA workers"
        mtext = f"{machine.nproc} cores, {machine.cuda} GPU(s)" + (f" ({machine.gpus[0]})" if machine.gpus else "")
        if args.simulate:
            si = args.sim_info
            mtext = (f"simulated: platform {si['name']} ({machine.nproc} CPU hosts, "
                     f"{simulate.gpu_summary(machine.gpus) or f'{machine.cuda} GPU(s)'}; models: "
                     f"{os.path.relpath(si['models'])}, {si['provenance']})")
            # Simulated perturbations (codelets/simulated.hpp) act by worker number on every
            # run, the bound's classes included.
            perturbed = [f"{k}={os.environ[k]}" for k in ("FNNDTPS_SIM_NOISE", "FNNDTPS_SIM_SLOWDOWN", "FNNDTPS_SIM_SEED")
                         if os.environ.get(k)]
            if perturbed:
                mtext += "; simulated perturbation " + " ".join(perturbed) + " in every run, worker numbers as each run has them"
    else:
        workers = f"{nworkers} CPU workers (STARPU_NCPU={nworkers})"
        mtext = f"CPU-only, {machine.nproc} cores"
    header = [f"compare.py: {mtext}; {workers}; detected from {machine.how}",
              f"median of {args.reps} timed runs after {args.warmup} warm-up (calibration) run(s) per configuration"
              + (f"; {args.class_reps} timed runs for each class alone" if args.class_reps != args.reps else "")]
    for c in conds:
        header.append(f"  {c.label}: " + (f"SKIPPED ({c.skip_note})" if c.skip_note else c.detail) +
                      ("" if c.skip_note else f"; bound {c.bound_how}"))
    for line in header:
        log(line)
    rows, bounds = run_all(args, machine, apps, conds)
    for c in conds:  # the perturb line, once known
        header = [h if not h.startswith(f"  {c.label}: ") or c.skip_note else
                  f"  {c.label}: {c.detail}; bound {c.bound_how}" for h in header]
    table = write_table(args, rows, bounds, header)
    print(table, end="")
    csv_path = write_csv(args, rows, bounds)
    emu = "" if machine.has_gpu else (", emulated factors " + ",".join(f"{f:g}" for f in factors)
                                      if any(c.name == "emulated" for c in conds) else "")
    title = (f"{mtext}, {workers}{emu}\n{'simulated times, ' if args.simulate else ''}median of {args.reps} after {args.warmup} warm-up; "
             "error bars: min-max; labels: % of the bound")
    png = plot(args, rows, bounds, title)
    sheets = write_sheets(args, rows) if args.trace else []
    log(f"wrote {os.path.join(args.out, 'table.txt')}, {csv_path}" + (f", {png}" if png else "") +
        (f", {len(sheets)} Gantt sheet(s) and the traces in {os.path.join(args.out, 'traces')}" if args.trace else "") +
        f" in {time.monotonic() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
