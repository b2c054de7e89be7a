#!/usr/bin/python3
"""StarPU's own programs as clients of the policies: programs we did not write, loaded with our
policies through STARPU_SCHED_LIB, beside StarPU's built-ins, one process per run.

  bench/clients.py --bin DIR --lib LIBFNNDTPS [--programs stencil,pih,pih-data]
                   [--policies fnn-dtps,fnn,dtps,boyer,lws,dmdas,eager] [--reps 3] [--budget 240]
                   [--timeout 60] [--stencil-args ARGS] [--env 'VAR=V ...'] [--out DIR] [--models DIR]
                   [--trace]

Programs (DIR holds them: scripts/build_starpu_examples.sh DIR builds them from StarPU's source):
  stencil   examples/stencil with --stencil-args (default: 64 blocks of 128^3, 64 iterations):
            a 3D stencil over z-blocks with halo exchange between them; value: its "Computation
            took" ms (lower is better)
  pih       tests/microbenchs/parallel_independent_heterogeneous_tasks: independent sleeping
            tasks, 10x faster on a GPU; value: the % of the expected speed-up it prints
  pih-data  ..._data: the same, each task with a 1.6 MB vector of its own (RW)

One warm-up process per program and policy (dmdas calibrates the stencil's history models in
STARPU_HOME), then --reps rounds of one process per program and policy, interleaved. Ours learn
in a FNNDTPS_MODEL_DIR per program and policy (under --models, default OUT/models, emptied at
the start), kept across its processes. Every process runs in a process group of its own under --timeout (killed with its
group at it); none starts past --budget seconds of the run, and each one's timeout is cut to
end within it. --env: settings for every process (e.g. STARPU_NCPU=4); StarPU's defaults
otherwise.

A policy may carry settings of its own, joined by '+' as bench/cold.py's configurations
(fnn-dtps+FNNDTPS_IDLE_NAP_US=1000: a variant, its own row and model folder).

--trace: every process records its schedule (FNNDTPS_TRACE; StarPU's policies too, loaded through
STARPU_SCHED_LIB then) into OUT/traces/PROGRAM-POLICY-RUN.json, for bench/gantt.py; tracing
changes what it measures a little (README, "Seeing what a policy did").

Writes OUT/clients.csv (program,policy,run,value,unit,status: ok, warmup, failed, timeout or
skipped), OUT/clients.txt (per program and policy: median, min, max over the rounds; ratio to
the best built-in's median; pih*: points over lws's) and OUT/clients.log (every command and its
output); prints the table. Exit 1 where a timed run failed or timed out, 2 for bad options."""
import argparse
import csv
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cold  # noqa: E402  (its process runner: own group, timeout, wall time)
import compare  # noqa: E402

PROGRAMS = {"stencil": "stencil", "pih": "parallel_independent_heterogeneous_tasks",
            "pih-data": "parallel_independent_heterogeneous_tasks_data"}
OURS = compare.OURS
DEFAULT_POLICIES = ["fnn-dtps", "fnn", "dtps", "boyer", "lws", "dmdas", "eager"]
DEFAULT_STENCIL = "-sizex 128 -sizey 128 -sizez 8192 -nbz 64 -niter 64"
CSV_FIELDS = ["program", "policy", "run", "value", "unit", "status"]
VALUE = {"stencil": re.compile(r"^Computation took: ([0-9.]+) ms", re.M),
         "pih": re.compile(r"^percentage of expected speed up =? *([0-9.]+)%", re.M)}


def value_of(program, out):
    """The program's own figure from its output: the last one printed, None if none."""
    found = VALUE["stencil" if program == "stencil" else "pih"].findall(out)
    return float(found[-1]) if found else None


def status_of(program, run, proc, value):
    if proc.timed_out:
        return "timeout"
    # pih* exit 1 when the speed-up is off by more than 10%: a measurement all the same.
    if value is None or (proc.rc != 0 and not (proc.rc == 1 and program.startswith("pih"))):
        return "failed"
    return "warmup" if run.startswith("w") else "ok"


class Clients:
    def __init__(self, args):
        self.args = args
        self.rows = []
        self.t0 = time.monotonic()
        self.logpath = os.path.join(args.out, "clients.log")
        self.base = compare.clean_env(argparse.Namespace(malloc_tuning=False))
        self.base.update(dict(kv.split("=", 1) for kv in args.env.split()))

    def one(self, program, policy, run):
        """One process, one CSV row (skipped past the budget)."""
        a = self.args
        left = a.budget - (time.monotonic() - self.t0) - 5
        t = min(a.timeout, left)
        unit = "ms" if program == "stencil" else "%"
        if left < min(a.timeout, 10):  # too little left to give it its timeout, or 10 s
            with open(self.logpath, "a") as f:
                f.write(f"### skipped (past the budget): {program} {policy} {run}\n")
            return self.add(program, policy, run, None, unit, "skipped")
        base = policy.split("+")[0]
        extra = dict(cold.config_env(policy), FNNDTPS_MODEL_DIR=os.path.join(a.models, f"{program}-{policy}"))
        if base in OURS or a.trace:
            extra["STARPU_SCHED_LIB"] = a.lib
        if a.trace:
            os.makedirs(os.path.join(a.out, "traces"), exist_ok=True)
            extra["FNNDTPS_TRACE"] = os.path.join(a.out, "traces", f"{program}-{policy}-{run}.json")
        argv = [os.path.join(a.bin, PROGRAMS[program])] + (a.stencil_args.split() if program == "stencil" else [])
        env = dict(self.base, **extra)
        shown = dict(dict(kv.split("=", 1) for kv in a.env.split()), **extra)
        proc = cold.run_process(argv, env, t, self.logpath, shown, f"{time.strftime('%T')} {program} {policy} run {run}")
        v = value_of(program, proc.out) if proc.rc is not None else None
        st = status_of(program, run, proc, v)
        self.add(program, policy, run, v if st in ("ok", "warmup") else None, unit, st)
        why = "" if st != "failed" else f" ({cold.why(proc)})"
        compare.log(f"   {program} {policy} run {run}: {compare.fmt(v) if st in ('ok', 'warmup') else st}"
                    f"{' ' + unit if st in ('ok', 'warmup') else ''}{why}")

    def add(self, program, policy, run, value, unit, status):
        self.rows.append(dict(program=program, policy=policy, run=run, value=value, unit=unit, status=status))
        with open(os.path.join(self.args.out, "clients.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=CSV_FIELDS, lineterminator="\n")
            w.writeheader()
            for r in self.rows:
                w.writerow({k: ("" if r[k] is None else f"{r[k]:.3f}" if isinstance(r[k], float) else r[k])
                            for k in CSV_FIELDS})

    def run(self):
        a = self.args
        open(self.logpath, "w").close()
        for p in a.policies:
            for c in a.programs:
                self.one(c, p, "w1")
        for r in range(1, a.reps + 1):
            for c in a.programs:
                for p in a.policies:
                    self.one(c, p, str(r))

    def table(self, commit):
        a = self.args
        env = a.env or "StarPU's default workers"
        lines = [f"clients: commit {commit}; {env}; {time.monotonic() - self.t0:.0f} s of the run (budget {a.budget:.0f} s)",
                 f"stencil {a.stencil_args}: ms of the computation (ratio below 1: faster than the best built-in)",
                 "pih, pih-data: parallel_independent_heterogeneous_tasks{,_data}, % of the expected speed-up",
                 "  (ratio above 1: closer to it than the best built-in; vs lws: points above lws's)",
                 "median, min, max over n processes (warm-ups left out)", ""]
        width = max([9] + [len(r["policy"]) for r in self.rows])
        form = "{:<9} {:<%d} {:>2} {:>9} {:>9} {:>9} {:>4} {:>6} {:>8}  {}" % width
        lines.append(form.format("program", "policy", "n", "median", "min", "max", "unit", "ratio", "vs lws", "note"))
        for prog in dict.fromkeys(r["program"] for r in self.rows):
            here = [r for r in self.rows if r["program"] == prog]
            higher = here[0]["unit"] == "%"
            stats = {}
            for pol in dict.fromkeys(r["policy"] for r in here):
                runs = [r for r in here if r["policy"] == pol]
                vals = [r["value"] for r in runs if r["status"] == "ok"]
                bad = [r["status"] for r in runs if r["status"] not in ("ok", "warmup")]
                note = ", ".join(f"{bad.count(s)} {s}" for s in dict.fromkeys(bad))
                stats[pol] = (statistics.median(vals) if vals else None, vals, note)
            builtin = [m for p, (m, _, _) in stats.items() if p.split("+")[0] not in OURS and m is not None]
            best = (max if higher else min)(builtin) if builtin else None
            lws = stats.get("lws", (None,))[0]
            for pol, (med, vals, note) in stats.items():
                ratio = "-" if med is None or not best else f"{med / best:.3f}"
                dl = f"{med - lws:+.2f}" if higher and med is not None and lws is not None else "-"
                lines.append(form.format(prog, pol, len(vals), compare.fmt(med), compare.fmt(min(vals) if vals else None),
                                         compare.fmt(max(vals) if vals else None), here[0]["unit"], ratio, dl, note))
        return "\n".join(lines) + "\n"


def parse_args(argv):
    ap = compare.OneLineParser(prog="clients.py", description=__doc__.split("\n\n")[0],
                               formatter_class=argparse.RawDescriptionHelpFormatter,
                               epilog="\n\n".join(__doc__.split("\n\n")[2:]))
    ap.add_argument("--bin", metavar="DIR", required=True, help="folder with StarPU's programs")
    ap.add_argument("--lib", metavar="LIB", required=True, help="libfnndtps.so, for STARPU_SCHED_LIB")
    ap.add_argument("--programs", metavar="LIST", type=compare.name_list, default=list(PROGRAMS),
                    help="of " + ",".join(PROGRAMS) + " (default all)")
    ap.add_argument("--policies", metavar="LIST", type=compare.name_list, default=DEFAULT_POLICIES,
                    help="ours and StarPU's built-ins (default " + ",".join(DEFAULT_POLICIES) + ")")
    ap.add_argument("--reps", metavar="N", type=int, default=3, help="timed rounds (default 3)")
    ap.add_argument("--budget", metavar="S", type=float, default=240, help="seconds; no process starts past it (default 240)")
    ap.add_argument("--timeout", metavar="S", type=float, default=60, help="seconds per process (default 60)")
    ap.add_argument("--stencil-args", metavar="ARGS", default=DEFAULT_STENCIL, help=f"default '{DEFAULT_STENCIL}'")
    ap.add_argument("--env", metavar="'VAR=V ...'", default="", help="settings for every process")
    ap.add_argument("--out", metavar="DIR", default="clients-out", help="output folder (default clients-out)")
    ap.add_argument("--models", metavar="DIR", help="our policies' model folders (default OUT/models)")
    ap.add_argument("--trace", action="store_true", help="record each process's schedule (OUT/traces/)")
    ap.add_argument("--commit", default="", help="the commit to name in the table (default: git's)")
    args = ap.parse_args(argv)
    bad = [p for p in args.programs if p not in PROGRAMS]
    if bad or not args.programs:
        ap.error(f"unknown program(s) '{','.join(bad)}': use {','.join(PROGRAMS)}")
    known = OURS + compare.BUILTINS
    bad = [p for p in args.policies if p.split("+")[0] not in known]
    if bad or not args.policies:
        ap.error(f"unknown policy '{','.join(bad)}': use {','.join(known)}, each with any +VAR=VALUE")
    for p in args.policies:
        for kv in p.split("+")[1:]:
            var, eq, _ = kv.partition("=")
            if not eq or not cold.ENV_NAME.match(var) or var in ("STARPU_SCHED", "STARPU_SCHED_LIB", "FNNDTPS_MODEL_DIR"):
                ap.error(f"policy '{p}': '{kv}' is not VAR=VALUE of a variable the bench does not set")
    if args.reps < 1 or args.budget <= 0 or args.timeout <= 0:
        ap.error("--reps, --budget and --timeout must be positive")
    for kv in args.env.split():
        if not re.match(r"[A-Z_][A-Z0-9_]*=", kv):
            ap.error(f"--env: '{kv}' is not VAR=VALUE")
    for p in args.programs:
        if not os.access(os.path.join(args.bin, PROGRAMS[p]), os.X_OK):
            ap.error(f"{os.path.join(args.bin, PROGRAMS[p])} not built (scripts/build_starpu_examples.sh {args.bin})")
    if any(p.split("+")[0] in OURS for p in args.policies) and not os.access(args.lib, os.R_OK):
        ap.error(f"--lib {args.lib}: not readable")
    args.out = os.path.abspath(args.out)
    args.models = os.path.abspath(args.models or os.path.join(args.out, "models"))
    return args


def main(argv):
    args = parse_args(argv)
    shutil.rmtree(args.models, ignore_errors=True)
    os.makedirs(args.models)
    commit = args.commit
    if not commit:
        try:
            commit = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse", "--short",
                                     "HEAD"], capture_output=True, text=True, timeout=10).stdout.strip() or "unknown"
        except (OSError, subprocess.TimeoutExpired):
            commit = "unknown"
    c = Clients(args)
    c.run()
    text = c.table(commit)
    with open(os.path.join(args.out, "clients.txt"), "w") as f:
        f.write(text)
    print(text, end="")
    bad = [r for r in c.rows if r["status"] in ("failed", "timeout")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
