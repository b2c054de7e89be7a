#!/usr/bin/python3
"""The mechanism suite: every comparison of the policies' mechanism in one run, section by
section, each against a reference configuration (notes/bench.md, "The mechanism part").

  bench/mechanism.py --bin DIR --lib LIBFNNDTPS [--only 'PATTERN ...'] [--budget 400] [--reps 3]
                     [--out DIR] [--models DIR] [sizes, workers and policies: --help]

Sections (--only: shell patterns of their names, e.g. 'calibration lu-*'):
  calibration   dmdas on CPUs + GPU, lwt2d and gemm at the sizes below, not timed
  lwt-gpu       LWT S^2, 4 levels, the GPU alone (--gpu-env): our five, dmdar, dmdas, eager (ref dmdar)
  lwt-co        the same LWT on CPUs + GPU (--co-env): ours vs dmdas, dmdar, eager (ref dmdas)
  lwt-co-cold   the same, each process from empty performance models (a user's first run)
  gemm-gpu      our gemm, the GPU alone: fnn-dtps, dmdar, dmdas, eager (ref dmdar)
  gemm-co       our gemm on CPUs + GPU: fnn-dtps fnn boyer dtps vs dmdas, dmdar (ref dmdas)
  sgemm2d       StarPU's sgemm -xy S -z S -nblocks S/tile (one task per C tile over all of z),
                CPUs + GPU, ours through STARPU_SCHED_LIB: fnn-dtps vs dmdas
  lu-default    StarPU's lu_example_float at --lu-default-args (its default size without)
  lu-S          ... -size S -nblocks S/tile: fnn-dtps vs dmdas
  ovh-bench-bB  per-task overhead, --ovh-env: our bench_overhead, B = 0, 1 buffers, eager and ours
  ovh-starpu-bB StarPU's tasks_overhead -i N -b B: 'Per task' (submit + execution), eager and ours
lwt2d and gemm time their repetitions in one process (--lwt-repeat after --lwt-warmup;
iterations 1.. after the first): one process per policy (--lwt-procs, --gemm-procs), its
median. StarPU's programs time one run a process: --reps processes per policy, interleaved,
after warm-up processes (dmda* calibrate their history models in STARPU_HOME; ours learn in a
FNNDTPS_MODEL_DIR of their own per section and policy under --models, kept across its
processes). A policy is a name, or LABEL:POLICY,VAR=V,... (a variant:
fnn-dtps-norb:fnn-dtps,FNNDTPS_REBALANCE=0). Every process has a timeout and runs in a process
group of its own; none starts past --budget seconds of the run.

Writes OUT/mechanism.csv (section,config,run,value,min,max,unit,cpu,cuda,status,note),
OUT/mechanism.txt (per section and configuration: n, median, min, max, ratio to the
reference's median; rewritten after every section, so a run cut short keeps what it measured)
and OUT/mechanism.log (every command and its output). Exit 1 where a timed run failed or timed
out, 2 for bad options."""
import argparse
import csv
import fnmatch
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cold  # noqa: E402  (its process runner)
import compare  # noqa: E402

OURS = compare.OURS
CSV_FIELDS = ["section", "config", "run", "value", "min", "max", "unit", "cpu", "cuda", "status", "note"]


def env_of(text):
    return dict(kv.split("=", 1) for kv in text.split())


def policy_token(token):
    """(label, env) of a policy token: NAME, or LABEL:POLICY,VAR=V,..."""
    label, _, rest = token.partition(":")
    rest = rest or label
    name, *extra = rest.split(",")
    return label, dict({"STARPU_SCHED": name, "FNNDTPS_SUMMARY": "1"}, **env_of(" ".join(extra)))


def pick_ms(ms, gflops, flop):
    """The printed ms (to 1 ms) or the time from the GFlop/s (to 0.1), whichever is the more precise."""
    if gflops > 0 and (ms <= 0 or 0.05 / gflops < 0.5 / ms):
        return flop / (gflops * 1e6)
    return ms


def sgemm_ms(out):
    v = None
    for line in out.splitlines():
        f = line.split()
        if not line.startswith("#") and len(f) >= 5:
            try:
                x, y, z, ms, gf = (float(t) for t in f[:5])
            except ValueError:
                continue
            if ms + gf > 0:
                v = pick_ms(ms, gf, 2 * x * y * z)
    return v


def lu_ms(out):
    v, header = None, False
    for line in out.splitlines():
        if line.startswith("# size"):
            header = True
            continue
        f = line.split()
        if header and len(f) >= 3:
            try:
                n, ms, gf = (float(t) for t in f[:3])
            except ValueError:
                continue
            if ms + gf > 0:
                v, header = pick_ms(ms, gf, 2 * n ** 3 / 3), False
    return v


class Suite:
    def __init__(self, args):
        self.args = args
        self.rows = []
        self.sections = []  # (name, reference, description)
        self.t0 = time.monotonic()
        self.log = os.path.join(args.out, "mechanism.log")
        self.base = compare.clean_env(argparse.Namespace(malloc_tuning=False))
        self.base["STARPU_CALIBRATE_MINIMUM"] = str(args.calibrate_minimum)

    def wanted(self, name):
        return not self.args.only or any(fnmatch.fnmatchcase(name, p) for p in self.args.only.split())

    def section(self, name, ref, desc):
        if not self.wanted(name):
            return False
        self.sections.append((name, ref, desc))
        compare.log(f"-- {time.strftime('%T')} mechanism {name}: {desc}")
        return True

    def run(self, timeout, extra, argv):
        """One process: (proc, skipped)."""
        left = self.args.budget - (time.monotonic() - self.t0)
        if left < 10:
            with open(self.log, "a") as f:
                f.write(f"### skipped (past the budget): {' '.join(argv)}\n")
            return None
        return cold.run_process(argv, dict(self.base, **extra), min(timeout, left), self.log, extra, time.strftime("%T"))

    def record(self, sec, cfg, run, proc, value, mn=None, mx=None, unit="ms", cpu=None, cuda=None):
        status, note = "ok", ""
        if proc is None:
            status, note = "skipped", "past the budget"
        elif run.startswith("w"):
            status, note = "warmup", f"rc {proc.rc}"
        elif proc.timed_out:
            status, note = "timeout", "killed by timeout"
        elif proc.rc != 0 or value is None:
            status, note = "failed", cold.why(proc).replace(",", "")[:120]
        if status not in ("ok", "warmup"):
            value = mn = mx = cpu = cuda = None
        self.rows.append(dict(section=sec, config=cfg, run=run, value=value, min=mn, max=mx, unit=unit, cpu=cpu,
                              cuda=cuda, status=status, note=note))
        compare.log(f"   {sec} {cfg} run {run}: {compare.fmt(value, '.3f') if value is not None else status} "
                    f"{unit if value is not None else ''} {f'({note})' if note else ''}")

    def result(self, sec, cfg, run, proc, tag, med, lo, hi, unit):
        d = compare.result_fields(proc.out, tag) if proc and proc.rc == 0 else None
        d = d or {}
        cpu = d.get("cpu") or d.get("workers")
        self.record(sec, cfg, run, proc, compare.to_float(d, med), compare.to_float(d, lo), compare.to_float(d, hi), unit,
                    cpu, d.get("cuda"))

    # -- the programs ------------------------------------------------------------------------
    def lwt(self, sec, token, env, run="1", home=None):
        a = self.args
        label, penv = policy_token(token)
        extra = dict(env_of(env), **penv, FNNDTPS_MODEL_DIR=os.path.join(a.models, f"{sec}-{label}"))
        if home:
            extra["STARPU_HOME"] = home
        p = self.run(60, extra, [os.path.join(a.bin, "lwt2d"), "demo", "--size", str(a.lwt_size), "--levels", "4",
                                 "--units", str(a.lwt_units), "--repeat", str(a.lwt_repeat), "--warmup", str(a.lwt_warmup)])
        self.result(sec, label, run, p, "forward", "median_ms", "min_ms", "max_ms", "ms")

    def gemm(self, sec, token, env, run="1"):
        a = self.args
        label, penv = policy_token(token)
        extra = dict(env_of(env), **penv, FNNDTPS_MODEL_DIR=os.path.join(a.models, f"{sec}-{label}"))
        p = self.run(90, extra, [os.path.join(a.bin, "gemm"), "--size", str(a.gemm_size), "--split", a.gemm_split,
                                 "--tile", str(a.tile), "--iter", str(a.gemm_iter)])
        self.result(sec, label, run, p, "gemm", "median_ms", "min_ms", "max_ms", "ms")

    def example(self, sec, policy, run, kind, args):
        a = self.args
        extra = dict(env_of(a.co_env), STARPU_SCHED=policy, FNNDTPS_MODEL_DIR=os.path.join(a.models, f"{sec}-{policy}"))
        if policy in OURS:
            extra["STARPU_SCHED_LIB"] = a.lib
        p = self.run(120, extra, [os.path.join(a.bin, kind)] + args)
        v = None if p is None or p.rc != 0 else sgemm_ms(p.out) if kind == "sgemm" else lu_ms(p.out)
        self.record(sec, policy, run, p, v)

    def examples(self, sec, kind, args):
        a = self.args
        pols = ["dmdas"] + a.ex_policies
        for pol in pols:
            for r in range(1, (a.ex_cal if pol.startswith("dmda") else a.ex_warmup) + 1):
                self.example(sec, pol, f"w{r}", kind, args)
        for r in range(1, a.reps + 1):
            for pol in pols:
                self.example(sec, pol, str(r), kind, args)

    def overhead(self, sec, policy, run, argv, ours_tag):
        a = self.args
        extra = dict(env_of(a.ovh_env), FNNDTPS_SAVE="0", STARPU_SCHED=policy)
        if policy != "eager":
            extra["STARPU_SCHED_LIB"] = a.lib
        p = self.run(60, extra, argv)
        if ours_tag:
            self.result(sec, policy, run, p, "overhead", "us_per_task", "min_us", "max_us", "us")
        else:
            m = re.findall(r"^Per task: ([0-9.]+) usecs", p.out + "\n" + p.err if p else "", re.M)  # on stderr
            self.record(sec, policy, run, p, float(m[-1]) if m and p.rc == 0 else None, unit="us")

    # -- the sections ------------------------------------------------------------------------
    def all(self):
        a = self.args
        open(self.log, "w").close()
        ours = ["fnn-dtps", "fnn", "dtps", "boyer", "even"]
        if self.section("calibration", "-", "dmdas on CPUs + GPU, lwt2d and gemm, not timed"):
            extra = dict(env_of(a.co_env), STARPU_SCHED="dmdas", FNNDTPS_MODEL_DIR=os.path.join(a.models, "cal"))
            p = self.run(90, extra, [os.path.join(a.bin, "lwt2d"), "demo", "--size", str(a.lwt_size), "--levels", "4",
                                     "--units", str(a.lwt_units), "--repeat", "2", "--warmup", "1"])
            self.result("calibration", "lwt2d-dmdas", "1", p, "forward", "median_ms", "min_ms", "max_ms", "ms")
            p = self.run(90, extra, [os.path.join(a.bin, "gemm"), "--size", str(a.gemm_size), "--split", a.gemm_split,
                                     "--tile", str(a.tile), "--iter", "2"])
            self.result("calibration", "gemm-dmdas", "1", p, "gemm", "median_ms", "min_ms", "max_ms", "ms")
            self.write()
        procs = f"median of {a.lwt_repeat} after {a.lwt_warmup} in each of {a.lwt_procs} process(es)"
        lwt = f"LWT {a.lwt_size}^2, 4 levels, {a.lwt_units} units"
        if self.section("lwt-gpu", "dmdar", f"{lwt}, the GPU alone ({a.gpu_env}), {procs}"):
            for r in range(1, a.lwt_procs + 1):
                for p in a.lwt_gpu_policies or ours + ["dmdar", "dmdas", "eager"]:
                    self.lwt("lwt-gpu", p, a.gpu_env, str(r))
            self.write()
        co = a.co_env or "StarPU's default workers"
        if self.section("lwt-co", "dmdas", f"the same LWT on CPUs + GPU ({co}), {procs}"):
            for r in range(1, a.lwt_procs + 1):
                for p in a.lwt_co_policies or ["fnn-dtps", "fnn", "boyer", "dtps", "even", "dmdas", "dmdar", "eager"]:
                    self.lwt("lwt-co", p, a.co_env, str(r))
            self.write()
        if self.section("lwt-co-cold", "dmdas", "the same LWT on CPUs + GPU, each process from empty performance models"):
            bus = os.path.join(os.environ.get("STARPU_HOME", os.path.expanduser("~")), ".starpu", "sampling", "bus")
            for p in a.lwt_cold_policies or ["fnn-dtps", "fnn", "boyer", "dmdas"]:
                home = os.path.join(a.models, f"cold-home-{policy_token(p)[0]}")
                shutil.rmtree(home, ignore_errors=True)
                os.makedirs(os.path.join(home, ".starpu", "sampling"))
                if os.path.isdir(bus):
                    shutil.copytree(bus, os.path.join(home, ".starpu", "sampling", "bus"))
                self.lwt("lwt-co-cold", p, a.co_env, home=home)
            self.write()
        gemm = f"our gemm {a.gemm_size}^3 float, split {a.gemm_split}, tile {a.tile}"
        iters = f"median of iterations 1-{a.gemm_iter - 1}"
        if self.section("gemm-gpu", "dmdar", f"{gemm}, the GPU alone ({a.gpu_env}), {iters}"):
            for p in a.gemm_gpu_policies or ["fnn-dtps", "dmdar", "dmdas", "eager"]:
                self.gemm("gemm-gpu", p, a.gpu_env)
            self.write()
        if self.section("gemm-co", "dmdas", f"{gemm}, CPUs + GPU, {iters} (0 calibrates) in each of {a.gemm_procs} process(es)"):
            for r in range(1, a.gemm_procs + 1):
                for p in a.gemm_policies or ["fnn-dtps", "fnn", "boyer", "dtps", "dmdas", "dmdar"]:
                    self.gemm("gemm-co", p, a.co_env, str(r))
            self.write()
        nb = max(1, a.sgemm_size // a.tile)
        if self.section("sgemm2d", "dmdas", f"StarPU's sgemm -xy {a.sgemm_size} -z {a.sgemm_size} -nblocks {nb} "
                                            f"-iter {a.sgemm_iter} (2D), CPUs + GPU, ms per product"):
            self.examples("sgemm2d", "sgemm", ["-xy", str(a.sgemm_size), "-z", str(a.sgemm_size), "-nblocks", str(nb),
                                               "-iter", str(a.sgemm_iter)])
            self.write()
        if self.section("lu-default", "dmdas", f"StarPU's lu_example_float {a.lu_default_args or 'at its default size'}, CPUs + GPU"):
            self.examples("lu-default", "lu_example_float", a.lu_default_args.split())
            self.write()
        nb = max(1, a.lu_size // a.tile)
        if self.section(f"lu-{a.lu_size}", "dmdas", f"StarPU's lu_example_float -size {a.lu_size} -nblocks {nb}, CPUs + GPU"):
            self.examples(f"lu-{a.lu_size}", "lu_example_float", ["-size", str(a.lu_size), "-nblocks", str(nb)])
            self.write()
        for b in (0, 1):
            name = f"ovh-bench-b{b}"
            if self.section(name, "eager", f"our bench_overhead {a.ovh_tasks} tasks x {a.ovh_reps} reps, {b} buffer(s) "
                                           f"a task, {a.ovh_env}; median over {a.reps} processes of each one's median"):
                for r in range(1, a.reps + 1):
                    for p in ["eager"] + ours:
                        self.overhead(name, p, str(r), [os.path.join(a.bin, "bench_overhead"), str(a.ovh_tasks),
                                                        str(a.ovh_reps), str(b)], True)
                self.write()
        for b in (0, 1):
            name = f"ovh-starpu-b{b}"
            if self.section(name, "eager", f"StarPU's tasks_overhead -i {a.ovh_tasks} -b {b} (one chain of tasks), "
                                           f"{a.ovh_env}, 'Per task' (submit + execution)"):
                for r in range(1, a.reps + 1):
                    for p in ["eager"] + ours:
                        self.overhead(name, p, str(r), [os.path.join(a.bin, "tasks_overhead"), "-i", str(a.ovh_tasks),
                                                        "-b", str(b)], False)
                self.write()
        self.write()

    # -- the outputs -------------------------------------------------------------------------
    def write(self):
        a = self.args
        with open(os.path.join(a.out, "mechanism.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=CSV_FIELDS, lineterminator="\n")
            w.writeheader()
            for r in self.rows:
                w.writerow({k: ("" if r[k] is None else f"{r[k]:.3f}" if isinstance(r[k], float) else r[k])
                            for k in CSV_FIELDS})
        lines = [f"mechanism: commit {a.commit}; {a.gpu_name or 'no GPU'}; {time.monotonic() - self.t0:.0f} s of the run "
                 f"(budget {a.budget:.0f} s)",
                 f"STARPU_CALIBRATE_MINIMUM={a.calibrate_minimum}; value: ms (lwt2d: a forward transform, host to host; "
                 "gemm, sgemm: a product; LU: the factorization), us per task for ovh-*",
                 "one-process rows (lwt2d, gemm, bench_overhead): n = 1, median/min/max of the timed repetitions in it;",
                 "  others: median/min/max over n processes. ratio = median / the reference's median (below 1: faster)", ""]
        form = "{:<12} {:<10} {:>3} {:>11} {:>11} {:>11} {:>5} {:>6} {:>8}  {}"
        lines.append(form.format("section", "config", "n", "median", "min", "max", "unit", "wrk", "ratio", "note"))
        for name, ref, desc in self.sections:
            lines.append(f"-- {name}: {desc}; reference {ref}")
            here = [r for r in self.rows if r["section"] == name]
            meds = {}
            for cfg in dict.fromkeys(r["config"] for r in here):
                runs = [r for r in here if r["config"] == cfg]
                ok = [r for r in runs if r["status"] == "ok"]
                vals = [r["value"] for r in ok]
                if len(ok) == 1 and ok[0]["min"] is not None:
                    mn, mx = ok[0]["min"], ok[0]["max"]
                else:
                    mn, mx = (min(vals), max(vals)) if vals else (None, None)
                meds[cfg] = (statistics.median(vals) if vals else None, mn, mx, len(ok), runs)
            refmed = meds.get(ref, (None,))[0]
            for cfg, (med, mn, mx, n, runs) in meds.items():
                bad = [f"{r['status']} {r['note']}".strip() for r in runs if r["status"] not in ("ok", "warmup")]
                wrk = next((f"{r['cpu']}+{r['cuda']}" if r["cuda"] else str(r["cpu"]) for r in runs if r["cpu"]), "")
                unit = runs[0]["unit"]
                spec = ".3f" if unit == "us" else ".2f"
                ratio = "-" if med is None or not refmed else f"{med / refmed:.2f}"
                lines.append(form.format(name, cfg + ("*" if cfg == ref else ""), n, compare.fmt(med, spec),
                                         compare.fmt(mn, spec), compare.fmt(mx, spec), unit, wrk, ratio,
                                         "; ".join(dict.fromkeys(bad))[:100]))
        text = "\n".join(lines) + "\n"
        with open(os.path.join(a.out, "mechanism.txt"), "w") as f:
            f.write(text)
        return text


def parse_args(argv):
    ap = compare.OneLineParser(prog="mechanism.py", description=__doc__.split("\n\n")[0],
                               formatter_class=argparse.RawDescriptionHelpFormatter,
                               epilog="\n\n".join(__doc__.split("\n\n")[2:]))
    ap.add_argument("--bin", metavar="DIR", required=True, help="folder with lwt2d, gemm, bench_overhead and StarPU's programs")
    ap.add_argument("--lib", metavar="LIB", required=True, help="libfnndtps.so, for STARPU_SCHED_LIB")
    ap.add_argument("--only", metavar="'PATTERN ...'", default="", help="the sections to run (default all)")
    ap.add_argument("--budget", metavar="S", type=float, default=400, help="seconds; no process starts past it (default 400)")
    ap.add_argument("--reps", metavar="N", type=int, default=3, help="processes per policy of StarPU's programs (default 3)")
    ap.add_argument("--out", metavar="DIR", default="mechanism-out")
    ap.add_argument("--models", metavar="DIR", help="our policies' model folders (default OUT/models; emptied)")
    ap.add_argument("--commit", default="unknown")
    ap.add_argument("--gpu-name", default="", help="for the table's first line (default: nvidia-smi's first GPU)")
    ints = dict(tile=1024, lwt_size=16384, lwt_units=64, lwt_repeat=5, lwt_warmup=2, lwt_procs=1, gemm_size=16384,
                gemm_iter=6, gemm_procs=1, sgemm_size=16384, sgemm_iter=3, lu_size=16384, ovh_tasks=10000, ovh_reps=5,
                ex_cal=2, ex_warmup=1, calibrate_minimum=2)
    for k, v in ints.items():
        ap.add_argument("--" + k.replace("_", "-"), type=int, default=v, metavar="N", help=f"default {v}")
    texts = dict(gemm_split="2d", lu_default_args="", gpu_env="STARPU_NCPU=0 STARPU_NCUDA=1", co_env="",
                 ovh_env="STARPU_NCPU=16 STARPU_NCUDA=0")
    for k, v in texts.items():
        ap.add_argument("--" + k.replace("_", "-"), default=v, metavar="TEXT", help=f"default '{v}'")
    for k in ("lwt_gpu_policies", "lwt_co_policies", "lwt_cold_policies", "gemm_policies", "gemm_gpu_policies"):
        ap.add_argument("--" + k.replace("_", "-"), type=lambda t: t.split(), default=None, metavar="'TOKEN ...'")
    ap.add_argument("--ex-policies", type=lambda t: t.split(), default=["fnn-dtps"], metavar="'POLICY ...'",
                    help="StarPU's sgemm and LU beside dmdas (default fnn-dtps)")
    args = ap.parse_args(argv)
    for k in ints:
        if getattr(args, k) < (0 if k in ("ex_cal", "ex_warmup") else 1):
            ap.error(f"--{k.replace('_', '-')} must be {'at least 0' if k.startswith('ex_') else 'positive'}")
    if args.budget <= 0:
        ap.error("--budget must be positive")
    if args.gemm_split not in ("2d", "3d"):
        ap.error("--gemm-split: 2d or 3d")
    for name in ("gpu_env", "co_env", "ovh_env"):
        for kv in getattr(args, name).split():
            if not re.match(r"[A-Z_][A-Z0-9_]*=", kv):
                ap.error(f"--{name.replace('_', '-')}: '{kv}' is not VAR=VALUE")
    if not args.gpu_name and shutil.which("nvidia-smi"):
        q = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True)
        args.gpu_name = q.stdout.splitlines()[0].strip() if q.returncode == 0 and q.stdout.strip() else ""
    args.out = os.path.abspath(args.out)
    args.models = os.path.abspath(args.models or os.path.join(args.out, "models"))
    return args


def main(argv):
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    shutil.rmtree(args.models, ignore_errors=True)
    os.makedirs(args.models)
    s = Suite(args)
    s.all()
    text = s.write()
    print(text, end="")
    bad = [r for r in s.rows if r["status"] in ("failed", "timeout")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
