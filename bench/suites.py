#!/usr/bin/python3
"""The bench's named suites: each measurement the GPU machine makes, one name, one runner.

  bench/suites.py [--build DIR] [--out DIR] [--quick] [--list] SUITE[=ARGS] ...

A suite is one of the bench's programs with its arguments (compare.py, mechanism.py,
clients.py, cold.py, seed001.sh) or a few processes of our apps (kernels, bits, calibrate,
diag, mpi). ARGS, one shell-quoted string, go to that program after the suite's own, so they
override them (`mechanism=--budget 300 --only 'lwt-*'`); a suite of our own takes --size,
--timeout and the options its --list line names. --quick: each suite at sizes and counts for a
CPU machine of 2 cores (tests/bench.cmake runs every suite so); a suite that needs a CUDA
device or the MPI build says why and is skipped where they are not. Every process runs in a
process group of its own under a timeout, and ends with its group.

--build is a folder with bin/ (our programs, and StarPU's examples where
scripts/build_starpu_examples.sh put them) and lib/libfnndtps.so: build/, or .carry/ on the
GPU machine. Writes OUT/NAME/ (the suite's files), OUT/NAME.txt (what it printed, as it runs)
and OUT/suites.log (every process of our own suites). Exit 1 if a suite failed, 2 for bad
arguments."""

import argparse
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cold  # noqa: E402  (its process runner: own group, timeout, wall time, peak RSS)
import compare  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PY = sys.executable
# The GEMMs leave out eager and lws (one 16384 product under either takes over 40 s on the
# GPU machine) and our even (equal shares by design: 15 cores get 15/16 of the tiles).
GEMM_POLICIES = "fnn-dtps,fnn,dtps,boyer,dmda,dmdas,heteroprio"
SCALING_POLICIES = "fnn-dtps,fnn,dtps,boyer,dmdas,dmda,heteroprio"
# gpu50 on the LWT with a period shorter than one transform (~27 ms at 16384), so that every
# timed run sees the duty cycle, not its on or off phase by luck (notes/bench.md).
LWT_PERIOD = ["--period-ms", "20"]
QUICK_COMPARE = ["--quick", "--lwt-sizes", "512", "--levels", "2", "--gemm-sizes", "256", "--tile", "128", "--reps", "2",
                 "--warmup", "1", "--perturb", "none", "--no-lp", "--policies", "fnn-dtps,dmdas", "--timeout", "60"]


class Suite:
    def __init__(self, name, doc, run, args=(), quick=(), needs=""):
        self.name, self.doc, self.run = name, doc, run
        self.args, self.needs = list(args), needs
        self.quick = None if quick is None else list(quick)  # None: no CPU-machine form


def end_tree(root):
    """Kills `root`'s process group and every descendant of it with each one's group: the
    bench's programs run theirs in groups of their own (cold.run_process), which a kill of
    root's group would miss. By id, from /proc, never by name."""
    parent = {}
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            parent[int(d)] = int(fields[1])
        except (ValueError, OSError, IndexError):
            continue
    tree, grew = {root}, True
    while grew:
        more = {p for p, q in parent.items() if q in tree and p not in tree}
        tree |= more
        grew = bool(more)
    for pid in [root] + sorted(tree - {root}):
        try:
            if os.getpgid(pid) != os.getpgrp():  # never this runner's own group
                os.killpg(os.getpgid(pid), signal.SIGKILL)
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


class Context:
    """What a suite runs with: the build, its output folder, the mode, the log."""

    def __init__(self, a, suite):
        self.a, self.suite = a, suite
        self.bin = os.path.join(a.build, "bin")
        self.lib = os.path.join(a.build, "lib", "libfnndtps.so")
        self.out = os.path.join(a.out, suite.name)
        self.text = os.path.join(a.out, suite.name + ".txt")
        self.log = os.path.join(a.out, "suites.log")
        self.env = compare.clean_env(argparse.Namespace(malloc_tuning=False))
        self.failed = False

    def say(self, line):
        print(line, flush=True)
        with open(self.text, "a") as f:
            f.write(line + "\n")

    def left(self, timeout):
        """`timeout` cut to what --limit leaves of the whole run."""
        return min(timeout, self.a.limit - (time.monotonic() - self.a.t0))

    def stream(self, argv, timeout):
        """A bench program, its output shown and kept as it comes; killed with its group past
        `timeout` s (or --limit). Returns its exit status (None if killed)."""
        timeout = self.left(timeout)
        self.say(f"$ {' '.join(shlex.quote(x) for x in argv)}")
        p = subprocess.Popen(argv, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, errors="replace", start_new_session=True)
        killed = []

        def kill():
            killed.append(1)
            end_tree(p.pid)
        timer = threading.Timer(timeout, kill)
        timer.start()
        for line in p.stdout:
            self.say(line.rstrip("\n"))
        rc = p.wait()
        timer.cancel()
        end_tree(p.pid)  # what the program left behind ends with it
        if killed:
            self.say(f"{self.suite.name}: cut at its {timeout:.0f} s limit")
            return None
        return rc

    def proc(self, argv, extra=None, timeout=120):
        """One of our own suite's processes (cold.run_process): output in the log."""
        return cold.run_process(argv, dict(self.env, **(extra or {})), max(1, self.left(timeout)), self.log, extra or {},
                                f"suite {self.suite.name}")

    def program(self, name):
        return os.path.join(self.bin, name)


def lwt_units(rows, wanted=64):
    """`wanted` units, or as many as `rows` allow at 4 levels (32 rows a unit, seed 002 eq. 6.8)."""
    return str(max(1, min(wanted, rows // 32)))


# -- suites that are one of the bench's programs --------------------------------------------
def python_suite(script, timeout=570):
    def run(ctx, args):
        if script == "compare.py":
            base = ["--build", ctx.a.build, "--starpu-examples", ctx.bin, "--out", ctx.out]
        elif script == "cold.py":
            base = ["--build", ctx.a.build, "--out", ctx.out]
        else:
            base = ["--bin", ctx.bin, "--lib", ctx.lib, "--out", ctx.out, "--commit", ctx.a.commit]
        rc = ctx.stream([PY, os.path.join(HERE, script)] + base + args, timeout)
        return rc == 0
    return run


def gpu_counts():
    return ",".join(str(k) for k in (1, 2, 4, 8) if k <= cuda_devices())


def scaling(ctx, args):
    """compare.py at each GPU count the host has, the bound measured at every count, so
    %bound is the efficiency at that count."""
    return python_suite("compare.py")(ctx, ["--gpus", gpu_counts()] + args)


def gemm_tiles(ctx, args):
    """compare.py once a tile size (--tiles, ARGS' first option), each under OUT/gemm/tile-T."""
    tiles, rest = ("1024,2048", args)
    if args[:1] == ["--tiles"]:
        tiles, rest = args[1], args[2:]
    ok, out = True, ctx.out
    for t in compare.int_list(tiles):
        ctx.out = os.path.join(out, f"tile-{t}")
        ok &= python_suite("compare.py")(ctx, ["--tile", str(t)] + rest)
    ctx.out = out
    return ok


def clients(ctx, args):
    """clients.py, then the history models StarPU's policies calibrated for the stencil's
    codelets, as OUT/clients/stencil-models.tgz: what simulating the stencil elsewhere needs
    (bench/platforms/h200's README)."""
    ok = python_suite("clients.py")(ctx, args)
    sampling = os.path.join(os.environ.get("STARPU_HOME", os.path.expanduser("~")), ".starpu", "sampling")
    codelets = os.path.join(sampling, "codelets")
    found = [os.path.join("codelets", v, f) for v in (os.listdir(codelets) if os.path.isdir(codelets) else [])
             for f in os.listdir(os.path.join(codelets, v)) if f.startswith(("cl_update", "save_cl_"))]
    if found:
        subprocess.run(["tar", "-C", sampling, "-czf", os.path.join(ctx.out, "stencil-models.tgz")] + found)
    return ok


def seed001(ctx, args):
    rc = ctx.stream(["bash", os.path.join(HERE, "seed001.sh"), "--bin", ctx.bin, "--lib", ctx.lib,
                     "--out", ctx.out] + args, 560)
    csvf = os.path.join(ctx.out, "seed001.csv")
    if os.path.exists(csvf):
        ctx.stream([PY, os.path.join(HERE, "seed001_plot.py"), csvf, "--out", ctx.out, "--command",
                    f"bench/suites.py seed001={shlex.join(args)}"], 60)
    return rc == 0


# -- suites of our own ----------------------------------------------------------------------
def own_options(ctx, args, **defaults):
    ap = compare.OneLineParser(prog=f"suites.py {ctx.suite.name}")
    for k, v in defaults.items():
        ap.add_argument("--" + k.replace("_", "-"), type=type(v), default=v)
    return ap.parse_args(args)


def kernels(ctx, args):
    """The fused CUDA passes on device-resident data, one unit and 16."""
    o = own_options(ctx, args, size=16384, reps=10)
    ok = True
    for units in (1, 16):
        p = ctx.proc([ctx.program("bench_lwt_cuda"), "--size", str(o.size), "--levels", "4", "--units", str(units),
                      "--reps", str(o.reps)])
        ctx.say(p.out.rstrip() if p.rc == 0 else f"bench_lwt_cuda --units {units}: {cold.why(p)}")
        ok &= p.rc == 0
    return ok


def bits(ctx, args):
    """The LWT's output does not depend on where its units ran: a forward and the inverse of
    the reference's coefficients under each configuration, compared byte for byte with the
    reference's (the GPU alone; the CPUs alone under --quick)."""
    o = own_options(ctx, args, size=1024 if ctx.a.quick else 8192, timeout=60.0)
    configs = ([("cpu", {"STARPU_NCPU": "1"}), ("eager", {"STARPU_SCHED": "eager"}), ("fnn-dtps", {"STARPU_SCHED": "fnn-dtps"})]
               if ctx.a.quick else
               [("gpu", {"STARPU_NCPU": "0"}), ("cpu", {"STARPU_NCUDA": "0"}), ("eager", {"STARPU_SCHED": "eager"}),
                ("fnn-dtps", {"STARPU_SCHED": "fnn-dtps"})])
    d = ctx.out
    x = os.path.join(d, "x.npy")
    p = ctx.proc([ctx.program("lwt2d"), "generate", "--out", x, "--size", str(o.size)])
    if p.rc != 0:
        ctx.say(f"generate failed: {cold.why(p)}")
        return False
    ref = configs[0][0]
    ok = True
    for name, extra in configs:
        for what, src, dst in (("forward", x, f"c-{name}.npy"), ("inverse", os.path.join(d, f"c-{ref}.npy"), f"y-{name}.npy")):
            p = ctx.proc([ctx.program("lwt2d"), what, "--in", src, "--out", os.path.join(d, dst), "--levels", "4",
                          "--units", lwt_units(o.size)], extra, o.timeout)
            if p.rc != 0:
                ctx.say(f"{what} {name} failed: {cold.why(p)}")
                ok = False
    for name, _ in configs[1:]:
        for f, what in (("c", "forward"), ("y", "inverse")):
            a, b = os.path.join(d, f"{f}-{ref}.npy"), os.path.join(d, f"{f}-{name}.npy")
            same = os.path.exists(a) and os.path.exists(b) and open(a, "rb").read() == open(b, "rb").read()
            ctx.say(f"{what}, {name} against {ref}: {'identical' if same else 'DIFFERS (or missing)'}")
            ok &= same
    for f in os.listdir(d):
        os.remove(os.path.join(d, f))
    return ok


def calibrate(ctx, args):
    """The performance models simulation runs on (bench/platforms/README.md): every codelet on
    every kind of worker at every footprint the simulated bench uses (LWT units by
    bench/sim_units.py's rule, gemm tiles of 1024, 3d), each class alone and both together,
    dmdas with STARPU_CALIBRATE=1 into STARPU_HOME; packed as OUT/calibrate/sampling.tgz, to
    unpack into bench/platforms/<machine>. --seed DIR goes on from a sampling folder."""
    q = ctx.a.quick
    o = own_options(ctx, args, lwt_sizes="1024" if q else "8192,10240,11264,12288,16384,32768",
                    gemm_size=512 if q else 16384, gemm_cpu_size=256 if q else 4096, tile=128 if q else 1024,
                    gemm=1, procs=1 if q else 3, budget=60.0 if q else 240.0, seed="")
    home = os.path.join(ctx.out, "home")
    sampling = os.path.join(home, ".starpu", "sampling")
    shutil.rmtree(home, ignore_errors=True)
    if o.seed:
        shutil.copytree(o.seed, sampling)
    else:
        os.makedirs(sampling)
    cuda = not q
    t0 = time.monotonic()
    ran = failed = 0

    def run(extra, argv):
        nonlocal ran, failed
        if time.monotonic() - t0 > o.budget:
            ctx.say(f"   skipped (past the budget): {' '.join(argv)}")
            return
        # A timing over 4x a footprint's mean (a cold start) stays out of it; StarPU's default
        # of 1.5x flushed footprints whose co-run and lone timings differ.
        env = dict(extra, STARPU_HOME=home, STARPU_SILENT="0", STARPU_SCHED="dmdas", STARPU_CALIBRATE="1",
                   STARPU_HISTORY_MAX_ERROR="300", CUDA_MODULE_LOADING="EAGER")
        p = ctx.proc(argv, env, 120)
        ran += 1
        if p.rc != 0:
            failed += 1
            ctx.say(f"   failed: {' '.join(argv)}: {cold.why(p)}")
    classes = [{"STARPU_NCPU": "0"}, {"STARPU_NCUDA": "0"}, {}] if cuda else [{"STARPU_NCPU": "2"}]
    for _ in range(2 if o.gemm else 0):
        for extra in classes:
            size = o.gemm_cpu_size if extra.get("STARPU_NCUDA") == "0" else o.gemm_size
            run(extra, [ctx.program("gemm"), "--size", str(size), "--split", "3d", "--tile", str(o.tile), "--iter", "3"])
    ctx.say(f"   gemm: {time.monotonic() - t0:.0f} s")
    for size in compare.int_list(o.lwt_sizes) if o.lwt_sizes.strip() else []:
        units = subprocess.run([PY, os.path.join(HERE, "sim_units.py"), str(size)], capture_output=True, text=True).stdout.strip()
        units = lwt_units(size, int(units or 64))
        # Three processes a class: StarPU drops a footprint's first timing, and the image's
        # edge units run once a process in the inverse (simulation: STARPU_CALIBRATE_MINIMUM=2).
        for extra in classes[:2] + (classes[2:] if size == 16384 else []):
            for _ in range(o.procs):
                run(extra, [ctx.program("lwt2d"), "demo", "--size", str(size), "--levels", "4", "--units", units,
                            "--repeat", "3", "--warmup", "0"])
        ctx.say(f"   lwt {size} ({units} units): {time.monotonic() - t0:.0f} s")
    subprocess.run(["tar", "czf", os.path.join(ctx.out, "sampling.tgz"), "-C", os.path.join(home, ".starpu"), "sampling"])
    shutil.rmtree(home, ignore_errors=True)
    ctx.say(f"   processes: {ran}, failed: {failed}; OUT/calibrate/sampling.tgz")
    return failed == 0 and ran > 0


def diag(ctx, args):
    """What our policies decide: DTPS's per-batch split and each worker's units (the policy's
    verbose summary) on the LWT, and on gemm under fnn-dtps."""
    q = ctx.a.quick
    o = own_options(ctx, args, size=1024 if q else 16384, policies="fnn-dtps" if q else "fnn-dtps,fnn,dtps,boyer",
                    gemm_size=512 if q else 16384, tile=128 if q else 1024)
    ok = True
    verbose = {"FNNDTPS_VERBOSE": "1", "FNNDTPS_SUMMARY": "1"}
    runs = [(pol, [ctx.program("lwt2d"), "demo", "--size", str(o.size), "--levels", "4", "--repeat", "3",
                   "--warmup", "2"]) for pol in compare.name_list(o.policies)]
    runs.append(("fnn-dtps", [ctx.program("gemm"), "--size", str(o.gemm_size), "--tile", str(o.tile), "--iter", "4"]))
    for pol, argv in runs:
        p = ctx.proc(argv, dict(verbose, STARPU_SCHED=pol, FNNDTPS_MODEL_DIR=os.path.join(ctx.out, "models-" + pol)))
        ctx.say(f"== {pol}: {os.path.basename(argv[0])} {' '.join(argv[1:])}")
        ctx.say("\n".join(line for line in (p.out + p.err).splitlines() if not line.lstrip().startswith(("model", "dtps:"))))
        ok &= p.rc == 0 and "RESULT" in p.out
    return ok


def mpi(ctx, args):
    """StarPU-MPI on one node: lwt2d-mpi (LWT, 4 levels, 64 units where the size allows) and gemm-mpi (tile 1024) as
    one process and as 2 ranks splitting the node (rank 0: the GPU and the first half of the
    cores; rank 1 the rest), the 2 ranks' coefficients against the one process's, and
    gemm-mpi --check over 2 ranks. --mpi DIR: the MPI build (bin/, lib/ put first on the
    library path; .carry/mpi from FNNDTPS_PACK_MPI=1 scripts/gpu/pack.sh)."""
    q = ctx.a.quick
    o = own_options(ctx, args, mpi=ctx.a.mpi, lwt_size=512 if q else 16384, gemm_size=512 if q else 16384,
                    tile=128 if q else 1024, repeat=2 if q else 10, mpirun="mpirun", timeout=150.0)
    mbin = os.path.join(o.mpi, "bin")
    if not os.path.exists(os.path.join(mbin, "lwt2d-mpi")) or not shutil.which(o.mpirun):
        ctx.say(f"mpi: no {mbin}/lwt2d-mpi or no MPI launcher ({o.mpirun})")
        return False
    lib = os.path.join(o.mpi, "lib")
    extra = {"LD_LIBRARY_PATH": lib + ":" + ctx.env.get("LD_LIBRARY_PATH", ""), "OMPI_ALLOW_RUN_AS_ROOT": "1",
             "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
             "OMPI_MCA_rmaps_base_oversubscribe": "1"}
    ncores = os.cpu_count() or 2
    if q:
        one = ["-np", "1", "-x", "STARPU_NCPU=2"]
        two = [["-np", "1", "-x", "STARPU_NCPU=1"], ["-np", "1", "-x", "STARPU_NCPU=1"]]
    else:
        half = ncores // 2
        one = ["-np", "1", "--bind-to", "none"]
        two = [["-np", "1", "--bind-to", "none", "-x", f"STARPU_NCPU={half}", "-x", "STARPU_NCUDA=1",
                "-x", f"STARPU_WORKERS_CPUID=0-{half}"],
               ["-np", "1", "--bind-to", "none", "-x", f"STARPU_NCPU={ncores - half - 1}", "-x", "STARPU_NCUDA=0",
                "-x", f"STARPU_WORKERS_CPUID={half + 1}-{ncores - 1}"]]
    x, c1, c2 = (os.path.join(ctx.out, f) for f in ("x.npy", "c1.npy", "c2.npy"))
    ok = ctx.proc([ctx.program("lwt2d"), "generate", "--out", x, "--size", str(o.lwt_size)]).rc == 0

    def job(label, ranks, argv_of):
        nonlocal ok
        argv = [o.mpirun]
        for i, r in enumerate(ranks):
            argv += ([":"] if i else []) + r + argv_of(i)
        p = ctx.proc(argv, extra, o.timeout)
        ctx.say(f"## {label}")
        ctx.say("\n".join("   " + line for line in (p.out + p.err).splitlines()
                          if line.startswith(("RESULT", "rank", "dtps")) or "check" in line or "rror" in line))
        if p.rc != 0:
            ctx.say(f"   failed: {cold.why(p)}")
            ok = False
    lwt = ["forward", "--in", x, "--levels", "4", "--units", lwt_units(o.lwt_size), "--repeat", str(o.repeat)]
    job(f"lwt2d-mpi forward {o.lwt_size}^2, one process", [one], lambda i: [os.path.join(mbin, "lwt2d-mpi")] + lwt + ["--out", c1])
    job("the same, 2 ranks (DTPS shares)", two, lambda i: [os.path.join(mbin, "lwt2d-mpi")] + lwt + ["--out", c2])
    same = all(os.path.exists(f) for f in (c1, c2)) and open(c1, "rb").read() == open(c2, "rb").read()
    ctx.say(f"   2 ranks against one process: {'identical' if same else 'DIFFERS (or missing)'}")
    ok &= same
    g = ["--size", str(o.gemm_size), "--tile", str(o.tile), "--iter", "6"]
    job(f"gemm-mpi {o.gemm_size}, tile {o.tile}, one process", [one], lambda i: [os.path.join(mbin, "gemm-mpi")] + g)
    job("the same, 2 ranks", two, lambda i: [os.path.join(mbin, "gemm-mpi")] + g)
    job("gemm-mpi --check, 2 ranks, ragged blocks", two,
        lambda i: [os.path.join(mbin, "gemm-mpi"), "--size", "500" if q else "2000", "--tile", "128" if q else "512",
                   "--iter", "2", "--check"])
    for f in (x, c1, c2):
        cold.remove(f)
    return ok


SUITES = [Suite(n, d, r, a, qa, needs) for n, d, r, a, qa, needs in [
    ("compare-lwt", "LWT 8192^2 and 16384^2, stable and gpu50, every policy, with the bound", python_suite("compare.py"),
     ["--apps", "lwt2d", "--lwt-sizes", "8192,16384", "--levels", "4", "--perturb", "none,gpu50", "--reps", "5",
      "--warmup", "2", "--timeout", "150"] + LWT_PERIOD, ["--apps", "lwt2d"] + QUICK_COMPARE, ""),
    ("trace", "LWT 16384^2, stable and gpu50, fnn-dtps and dmdas: traces, Gantt charts, sheets, LP bound",
     python_suite("compare.py"), ["--apps", "lwt2d", "--lwt-sizes", "16384", "--levels", "4", "--perturb", "none,gpu50",
                                  "--reps", "5", "--warmup", "2", "--policies", "fnn-dtps,dmdas", "--trace", "--timeout", "60"]
     + LWT_PERIOD,
     ["--apps", "lwt2d", "--trace"] + QUICK_COMPARE, ""),
    ("compare-gemm", "our gemm 16384, tile 1024, stable, the GEMM policies", python_suite("compare.py"),
     ["--apps", "gemm", "--gemm-sizes", "16384", "--tile", "1024", "--perturb", "none", "--reps", "5", "--warmup", "1",
      "--class-reps", "2", "--policies", GEMM_POLICIES, "--timeout", "150"], ["--apps", "gemm"] + QUICK_COMPARE, ""),
    ("compare-gemm-gpu50", "our gemm 16384 under gpu50: fnn-dtps, fnn, boyer, dmdas", python_suite("compare.py"),
     ["--apps", "gemm", "--gemm-sizes", "16384", "--tile", "1024", "--perturb", "gpu50", "--reps", "5", "--warmup", "1",
      "--class-reps", "2", "--policies", "fnn-dtps,fnn,boyer,dmdas", "--timeout", "150"], None, "cuda"),
    ("compare-sgemm", "StarPU's sgemm 16384, tile 1024, one process a run", python_suite("compare.py"),
     ["--apps", "starpu-sgemm", "--sgemm-sizes", "16384", "--tile", "1024", "--sgemm-iter", "5", "--perturb", "none",
      "--reps", "3", "--warmup", "1", "--policies", GEMM_POLICIES, "--timeout", "150"],
     ["--apps", "starpu-sgemm"] + QUICK_COMPARE, ""),
    ("sgemm-gpu50", "StarPU's sgemm 16384 (2d, 16 blocks, 3 products) stable and under gpu50: dmdas, fnn-dtps",
     python_suite("compare.py"), ["--apps", "starpu-sgemm", "--sgemm-sizes", "16384", "--tile", "1024", "--sgemm-iter", "3",
                                  "--perturb", "none,gpu50", "--reps", "1", "--warmup", "1", "--policies", "dmdas,fnn-dtps",
                                  "--no-lp", "--timeout", "75"], None, "cuda"),
    ("gemm", "our gemm and StarPU's sgemm 16384, split 2d, tiles 1024 and 2048 (ARGS: --tiles LIST first)",
     gemm_tiles, ["--apps", "gemm,starpu-sgemm", "--gemm-sizes", "16384", "--sgemm-iter",
                                  "5", "--perturb", "none", "--reps", "5", "--warmup", "1", "--class-reps", "2",
                                  "--policies", GEMM_POLICIES, "--timeout", "150"],
     ["--tiles", "128", "--apps", "gemm,starpu-sgemm"] + QUICK_COMPARE, ""),
    ("scaling-lwt", "LWT 16384^2 and 32768^2 at 1, 2, 4, 8 GPUs (those the host has)", scaling,
     ["--apps", "lwt2d", "--lwt-sizes", "16384,32768", "--levels", "4", "--perturb", "none,gpu50", "--reps", "3",
      "--policies", SCALING_POLICIES, "--timeout", "150"] + LWT_PERIOD, None, "cuda"),
    ("scaling-gemm", "gemm 16384 at 1, 2, 4, 8 GPUs (32768: ARGS --gemm-sizes 32768, fewer --policies)", scaling,
     ["--apps", "gemm", "--gemm-sizes", "16384", "--tile", "1024", "--perturb", "none,gpu50", "--reps", "3", "--warmup", "1",
      "--class-reps", "2", "--policies", SCALING_POLICIES, "--timeout", "150"], None, "cuda"),
    ("mechanism", "every comparison of the policies' mechanism (bench/mechanism.py --help)", python_suite("mechanism.py"),
     [], ["--reps", "2", "--tile", "128", "--only", "lwt-co gemm-co sgemm2d lu-default ovh-bench-b1", "--lwt-size", "1024",
          "--lwt-units", "8", "--lwt-repeat", "2", "--lwt-warmup", "1", "--lwt-co-policies", "fnn-dtps dmdas",
          "--gemm-size", "512", "--gemm-policies", "dtps dmdas", "--sgemm-size", "512", "--sgemm-iter", "2",
          "--lu-default-args", "-size 512 -nblocks 4", "--ovh-tasks", "500", "--ovh-reps", "2",
          "--co-env", "STARPU_NCPU=2 STARPU_NCUDA=0", "--ovh-env", "STARPU_NCPU=2 STARPU_NCUDA=0"], ""),
    ("warm", "the warmed-up LWT and gemm 16384: the GPU alone, CPUs + GPU (mechanism's sections)",
     python_suite("mechanism.py"), ["--only", "lwt-gpu lwt-co gemm-co", "--budget", "300"], None, "cuda"),
    ("overhead", "per-task overhead: bench_overhead and StarPU's tasks_overhead, eager and ours",
     python_suite("mechanism.py"), ["--only", "ovh-*"],
     ["--only", "ovh-bench-b0 ovh-starpu-b1", "--ovh-tasks", "500", "--ovh-reps", "2", "--reps", "2",
      "--ovh-env", "STARPU_NCPU=2 STARPU_NCUDA=0"], ""),
    ("clients", "StarPU's own programs as clients (bench/clients.py --help)", clients, [],
     ["--policies", "fnn-dtps,lws", "--reps", "1", "--stencil-args", "-sizex 32 -sizey 32 -sizez 256 -nbz 8 -niter 4",
      "--env", "STARPU_NCPU=2"], ""),
    ("cold", "the apps as users run them: each command its own process (bench/cold.py --help)", python_suite("cold.py"),
     ["--sizes", "8192,16384", "--configs", "fnn-dtps,dmdas,gpu-alone", "--runs", "2", "--timeout", "60"],
     ["--quick", "--commands", "forward"], ""),
    ("filter", "lwt2d filter 16384^2, 8 levels, 3 bands, as users run it under fnn-dtps", python_suite("cold.py"),
     ["--sizes", "16384", "--commands", "filter", "--configs", "fnn-dtps", "--runs", "2", "--timeout", "90"],
     ["--quick", "--commands", "filter", "--configs", "fnn-dtps"], ""),
    ("seed001", "seed 001's three experiments over 1024..16384 (bench/seed001.sh)", seed001,
     ["--sizes", "1024,2048,4096,8192,16384", "--budget", "480"], ["--sizes", "256", "--reps", "1", "--iter", "2",
                                                                    "--policies", "dtps dmdas", "--budget", "60"], ""),
    ("kernels", "the fused CUDA passes on device-resident data (bench_lwt_cuda), 1 and 16 units", kernels, [], None,
     "cuda"),
    ("bits", "the LWT's output, byte for byte, wherever its units ran (forward and inverse, 8192^2)", bits, [], [], ""),
    ("calibrate", "StarPU's models for simulation: every codelet, worker kind and footprint the bench simulates",
     calibrate, [], [], ""),
    ("diag", "what our policies decide: DTPS's splits, each worker's units (verbose summaries)", diag, [], [], ""),
    ("mpi", "StarPU-MPI on one node: lwt2d-mpi and gemm-mpi, one process against 2 ranks", mpi, [], [], "mpi"),
]]
BY_NAME = {s.name: s for s in SUITES}


def cuda_devices():
    """How many CUDA devices this machine has (the build may have CUDA code without one)."""
    if shutil.which("nvidia-smi") is None:
        return 0
    return subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.count("GPU ")


def parse_args(argv):
    ap = compare.OneLineParser(prog="suites.py", description=__doc__.split("\n\n")[0],
                               formatter_class=argparse.RawDescriptionHelpFormatter,
                               epilog="\n\n".join(__doc__.split("\n\n")[2:]))
    ap.add_argument("--build", metavar="DIR", default="build", help="bin/ and lib/libfnndtps.so (default build)")
    ap.add_argument("--out", metavar="DIR", default="bench-suites")
    ap.add_argument("--quick", action="store_true", help="CPU-machine sizes and counts")
    ap.add_argument("--list", action="store_true", help="the suites, one line each")
    ap.add_argument("--mpi", metavar="DIR", default="", help="the MPI build's bin/ and lib/ (the mpi suite)")
    ap.add_argument("--commit", default="unknown", help="for the tables' first lines")
    ap.add_argument("--limit", metavar="S", type=float, default=1e9,
                    help="seconds for all the suites: a process still running then is killed, its suite's files kept")
    ap.add_argument("suites", nargs="*", metavar="SUITE[=ARGS]")
    a = ap.parse_args(argv)
    if not a.list and not a.suites:
        ap.error("name at least one suite (--list)")
    a.runs = []
    for item in a.suites:
        name, eq, extra = item.partition("=")
        if name not in BY_NAME:
            ap.error(f"unknown suite '{name}' (--list names them)")
        try:
            a.runs.append((BY_NAME[name], shlex.split(extra) if eq else []))
        except ValueError as e:
            ap.error(f"{name}: its ARGS: {e}")
    if a.limit <= 0:
        ap.error("--limit must be positive")
    a.t0 = time.monotonic()
    a.build, a.out = os.path.abspath(a.build), os.path.abspath(a.out)
    a.mpi = os.path.abspath(a.mpi) if a.mpi else ""
    if a.runs and not os.path.isdir(os.path.join(a.build, "bin")):
        ap.error(f"--build {a.build}: no bin/ there")
    return a


def main(argv):
    a = parse_args(argv)
    if a.list:
        for s in SUITES:
            print(f"{s.name:<19} {s.doc.split(chr(10))[0].strip()}{'  [needs ' + s.needs + ']' if s.needs else ''}")
        return 0
    os.makedirs(a.out, exist_ok=True)
    cuda = cuda_devices() > 0
    failed = []
    for s, extra in a.runs:
        ctx = Context(a, s)
        shutil.rmtree(ctx.out, ignore_errors=True)
        os.makedirs(ctx.out)
        open(ctx.text, "w").close()
        why = ("past --limit" if ctx.left(1) < 1 else "it needs a CUDA device" if s.needs == "cuda" and not cuda else
               "no --quick form: it measures a GPU machine" if a.quick and s.quick is None else
               "it needs the MPI build (--mpi DIR)" if s.needs == "mpi" and not a.mpi else "")
        if why:
            ctx.say(f"== {s.name}: skipped, {why}")
            continue
        t0 = time.monotonic()
        ctx.say(f"== {time.strftime('%T')} {s.name}: {s.doc.split(chr(10))[0].strip()}")
        try:
            ok = s.run(ctx, (s.quick if a.quick else s.args) + extra)
        except argparse.ArgumentTypeError as e:  # a bad list in a suite's own option
            ctx.say(f"{s.name}: {e}")
            ok = False
        ctx.say(f"== {time.strftime('%T')} {s.name} {'done' if ok else 'FAILED'} ({time.monotonic() - t0:.0f} s)")
        if not ok:
            failed.append(s.name)
    if failed:
        print(f"suites.py: failed: {' '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
