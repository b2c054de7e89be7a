#!/usr/bin/python3
"""The cold bench: lwt2d's commands as users run them, each its own process with no history (no
StarPU codelet models, no saved policy state), so the times include what a first and a second
process pay: StarPU's calibration, the policy's seeding, the process's start and its files.

  bench/cold.py [--build DIR] [--sizes 8192,16384] [--levels 4] [--filter-levels 8]
                [--bands roughness=1-3,waviness=4-6,form=rest] [--commands forward,inverse,filter]
                [--configs fnn-dtps,fnn,dtps,boyer,dmdas,dmdar,gpu-alone] [--runs 2] [--rounds 1]
                [--filter-input npy|x3p] [--out DIR] [--timeout S] [--quick] [--trace] [--preload LIB]
  bench/compare.py --cold ...     (the same)

--quick: sizes 512,1024, --levels 3, --filter-levels 4 (fewer where the smallest size needs it),
--timeout 120. Without --bands the bands scale with --filter-levels (8: the default above; 4:
roughness=1-1,waviness=2-3,form=rest).

Configurations (--configs): our policies and StarPU's built-ins by name (STARPU_SCHED), and
gpu-alone: dmdas with STARPU_NCPU=0; any of them with VAR=VALUE settings joined by '+'
(dmdas+STARPU_DISABLE_PINNING=1) is a variant of its own; skipped (one note line, 'skipped' CSV rows) where StarPU
finds no GPU.

Inputs, not timed: one surface per size (lwt2d generate), and for inverse its coefficients
(lwt2d forward under dmdas, in a throwaway STARPU_HOME and model folder). filter reads the same
surface, as .npy or (--filter-input x3p) as the X3P file an instrument would write. The inputs
and outputs are removed at the end (GiBs at the full sizes).

State: StarPU calibrates its bus once, in OUT/bus-home, in one tiny lwt2d run before anything is
timed. Every (command, size, configuration) then gets a fresh STARPU_HOME (OUT/homes/NAME) with a
copy of those bus files and no codelet models, and a fresh FNNDTPS_MODEL_DIR (OUT/models/NAME);
its --runs processes share the two, so run 2 is a second process after run 1. With --rounds K
that sequence is repeated K times, each round in folders of its own (NAME-roundR), the rounds
interleaved over the configurations; each cell is then a run's median over the rounds (one GPU
process varies by 20% from the next: a single sample separates little). Every process gets
STARPU_SILENT=1; other StarPU variables of the environment (STARPU_NCPU...) apply to every
configuration.

The floor: before a (command, size)'s configurations in each round, lwt2d-floor (bench/floor.cpp)
reads the same input with forward's calls, starts and stops StarPU (eager, the configuration's
workers: one floor for StarPU's default workers, one for gpu-alone's), and writes the array as
many times as the command writes outputs (filter: once per band; from the .npy surface also
with --filter-input x3p). It is what a command's whole time cannot go below on this machine;
the table gives it, and each process's wall time over it. Without lwt2d-floor in the build
(an older --build), no floor.

Per process: the transform's time as the app prints it (forward, inverse: their `forward  N ms`
line; filter: RESULT filter_ms, its forward and band inverses), the process's wall time from
start to exit (what a user waits) and its peak RSS (wait4). Output: a table on stdout (per
command and size, each configuration's run 1 / run 2, and fnn-dtps's runs 1 and 2 over
gpu-alone's and dmdas's run 1), OUT/cold.txt, OUT/cold.csv (one row per process) and
OUT/logs/NAME-runK.log (the CSV's `round` column: 1 without --rounds). A failed or timed-out
process is a row marked so and the bench goes on; it exits 1 at the end if any did. Bad options: one line on stderr, exit 2.
"""
import argparse
import csv
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import types
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (the bench's helpers)
from compare import fmt, int_list, last_line, log, name_list, result_fields, to_float, to_int  # noqa: E402

COMMANDS = ["forward", "inverse", "filter"]
CONFIGS = ["fnn-dtps", "fnn", "dtps", "boyer", "dmdas", "dmdar", "gpu-alone"]
KNOWN = compare.OURS + compare.BUILTINS + ["gpu-alone"]
DEFAULT_BANDS = "roughness=1-3,waviness=4-6,form=rest"
CSV_FIELDS = ["command", "size", "config", "round", "run", "transform_ms", "process_ms", "peak_rss_kb", "status"]
# Set by the bench for each process: inherited, they would share state between processes or
# fix the policy for every configuration.
OWNED = ("STARPU_HOME", "STARPU_PERF_MODEL_DIR", "STARPU_SCHED", "STARPU_SCHED_LIB",
         "FNNDTPS_MODEL_DIR", "FNNDTPS_SAVE")
RATIO_TO = ("gpu-alone", "dmdas")  # fnn-dtps's runs over their run 1


def die(msg):
    print(f"cold.py: {msg}", file=sys.stderr)
    sys.exit(2)


ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*$")


def config_env(name):
    """A configuration's environment: its base (a policy, or gpu-alone), then any VAR=VAL
    joined by '+' (fnn-dtps+STARPU_DISABLE_PINNING=1: a variant, named so in the table)."""
    base, *extra = name.split("+")
    env = {"STARPU_SCHED": "dmdas", "STARPU_NCPU": "0"} if base == "gpu-alone" else {"STARPU_SCHED": base}
    for kv in extra:
        var, _, val = kv.partition("=")
        env[var] = val
    return env


def config_error(name):
    """Why a --configs entry is not one, or None."""
    base, *extra = name.split("+")
    if base not in KNOWN:
        return f"unknown config '{base}': use {','.join(KNOWN)}"
    for kv in extra:
        var, eq, _ = kv.partition("=")
        if not eq or not ENV_NAME.match(var) or var in OWNED:
            return f"config '{name}': '{kv}' is not VAR=VALUE of a variable the bench does not set"
    return None


def max_levels(size):
    """The most levels lwt2d takes for a size x size surface: every level keeps 2 rows
    (codelets/plan.cpp; low_count is ceil(n / 2))."""
    levels, n = 1, size
    while (n + 1) // 2 >= 2:
        n = (n + 1) // 2
        levels += 1
    return levels


def scaled_bands(levels):
    """DEFAULT_BANDS at 8 levels, the same proportions at fewer or more (always a valid spec)."""
    r, w = max(1, 3 * levels // 8), max(1, 6 * levels // 8)
    spec = f"roughness=1-{r}"
    if w > r:
        spec += f",waviness={r + 1}-{w}"
    return spec + ",form=rest"


# ---------------------------------------------------------------------------------------------
# One process.

@dataclass
class Proc:
    rc: int          # None: killed at its timeout
    out: str
    err: str
    wall_ms: float   # from its start to its exit
    rss_kb: int      # peak resident set
    timed_out: bool


def run_process(argv, env, timeout, logpath, shown_env, note=""):
    """argv to its exit (killed after `timeout` s), its wall time and peak RSS; appends its
    command, status and output to logpath."""
    with tempfile.TemporaryFile("w+", errors="replace") as out_f, \
            tempfile.TemporaryFile("w+", errors="replace") as err_f:
        t0 = time.monotonic()
        try:
            p = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=out_f, stderr=err_f,
                                 start_new_session=True)
        except OSError as e:
            proc = Proc(127, "", str(e), None, None, False)
        else:
            lock, state = threading.Lock(), {"exited": False, "killed": False}

            def kill():
                with lock:
                    if not state["exited"]:  # not reaped yet: the group is still this child's
                        state["killed"] = True
                        try:
                            os.killpg(p.pid, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
            timer = threading.Timer(timeout, kill)
            timer.start()
            # Waits without reaping, so the timer never signals a recycled pid.
            os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
            wall_ms = (time.monotonic() - t0) * 1e3
            with lock:
                state["exited"] = True
            timer.cancel()
            _, status, usage = os.wait4(p.pid, 0)  # this child's rusage alone; ru_maxrss in KiB
            p.returncode = os.waitstatus_to_exitcode(status)
            out_f.seek(0)
            err_f.seek(0)
            timed_out = state["killed"]
            proc = Proc(None if timed_out else p.returncode, out_f.read(), err_f.read(), wall_ms,
                        usage.ru_maxrss, timed_out)
    with open(logpath, "a") as f:
        f.write("$ " + " ".join(f"{k}='{v}'" for k, v in sorted(shown_env.items())) + " " + " ".join(argv) + "\n")
        if note:
            f.write(f"# {note}\n")
        f.write(f"# rc={proc.rc} timed_out={proc.timed_out} wall_ms={fmt(proc.wall_ms)} "
                f"peak_rss_kb={proc.rss_kb if proc.rss_kb is not None else '-'}\n")
        f.write("## stdout\n" + proc.out + "\n## stderr\n" + proc.err + "\n")
    return proc


def why(proc):
    if proc.timed_out:
        return "killed at its timeout"
    return f"exit {proc.rc}: {last_line(proc.err) or last_line(proc.out)}"


def transform_ms(command, out):
    """The transform's time as the app prints it (apps/lwt2d.cpp: report() and RESULT filter)."""
    if command == "filter":
        d = result_fields(out, "filter")
        return to_float(d, "filter_ms") if d else None
    m = re.search(rf"^{command}\s+([0-9.]+) ms", out, re.M)
    return float(m.group(1)) if m else None


def remove(path):
    if os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.exists(path):
        os.remove(path)


def count_files(folder):
    n = 0
    for _, _, files in os.walk(folder):
        n += len(files)
    return n


# ---------------------------------------------------------------------------------------------
# The bench.

class Bench:
    def __init__(self, args):
        self.args = args
        self.lwt2d = os.path.join(args.build, "bin", "lwt2d")
        self.floor = os.path.join(args.build, "bin", "lwt2d-floor")
        self.floors = []  # the floor keys of the configurations, in order
        self.out = args.out
        self.logs = os.path.join(self.out, "logs")
        self.work = os.path.join(self.out, "work")
        self.inputs = os.path.join(self.out, "inputs")
        self.bus = os.path.join(self.out, "bus-home", ".starpu", "sampling", "bus")
        self.base = compare.clean_env(types.SimpleNamespace(malloc_tuning=False))  # lwt2d tunes malloc itself
        for k in OWNED:
            self.base.pop(k, None)
        self.rows = []
        self.workers = ""
        self.cuda = 0

    def env(self, extra):
        env = dict(self.base)
        env.update(extra)
        return env

    def fresh_home(self, home):
        """A STARPU_HOME with the calibrated bus and nothing else."""
        shutil.rmtree(home, ignore_errors=True)
        dest = os.path.join(home, ".starpu", "sampling", "bus")
        if os.path.isdir(self.bus):
            shutil.copytree(self.bus, dest)
        else:
            os.makedirs(dest)

    def prep_timeout(self):
        # Untimed set-up runs: a GPU machine's bus calibration takes seconds whatever --timeout.
        return max(self.args.timeout, 300)

    def calibrate_bus(self):
        """One tiny run in OUT/bus-home: StarPU measures its bus there. Also tells the workers."""
        home = os.path.join(self.out, "bus-home")
        extra = {"STARPU_HOME": home, "STARPU_SCHED": "eager", "FNNDTPS_SAVE": "0",
                 "FNNDTPS_MODEL_DIR": os.path.join(home, "models")}
        argv = [self.lwt2d, "demo", "--size", "64", "--levels", "1", "--repeat", "2"]
        log("cold.py: calibrating StarPU's bus in " + home)
        p = run_process(argv, self.env(extra), self.prep_timeout(), os.path.join(self.logs, "bus.log"), extra)
        d = result_fields(p.out, "forward") if p.rc == 0 else None
        if not d or to_int(d, "cpu") is None:
            log(f"cold.py: the bus calibration run failed ({why(p)}); see {os.path.join(self.logs, 'bus.log')}")
            sys.exit(1)
        self.cuda = to_int(d, "cuda") or 0
        self.workers = f"{to_int(d, 'cpu')} CPU + {self.cuda} CUDA workers"
        if not count_files(self.bus):
            log(f"cold.py: note: StarPU wrote no bus files in {self.bus}; each process calibrates its own")

    def prepare(self, size):
        """The size's inputs; {command: why its input could not be made}."""
        a = self.args
        os.makedirs(self.inputs, exist_ok=True)
        logpath = os.path.join(self.logs, f"prep-{size}.log")
        surface = os.path.join(self.inputs, f"surface-{size}.npy")
        outs = [surface] + ([surface[:-4] + ".x3p"] if a.filter_input == "x3p" and "filter" in a.commands else [])
        for path in outs:
            p = run_process([self.lwt2d, "generate", "--out", path, "--size", f"{size}x{size}"],
                            self.env({}), self.prep_timeout(), logpath, {})
            if p.rc != 0:
                return dict.fromkeys(a.commands, f"generate {size}: {why(p)}")
        if "inverse" in a.commands:
            home = os.path.join(self.out, "prep-home")
            if not os.path.isdir(home):
                self.fresh_home(home)
            extra = {"STARPU_HOME": home, "STARPU_SCHED": "dmdas", "FNNDTPS_SAVE": "0",
                     "FNNDTPS_MODEL_DIR": os.path.join(self.out, "prep-models")}
            argv = [self.lwt2d, "forward", "--in", surface, "--out", self.coeffs(size), "--levels", str(a.levels)]
            p = run_process(argv, self.env(extra), self.prep_timeout(), logpath, extra)
            if p.rc != 0:
                return {"inverse": f"coefficients {size}: {why(p)}"}
        return {}

    def floor_key(self, cfg):
        """The floor a configuration's processes are judged against: its environment but the
        policy (floor, floor+STARPU_NCPU=0)."""
        env = {k: v for k, v in config_env(cfg).items() if k != "STARPU_SCHED"}
        return "floor" + "".join(f"+{k}={v}" for k, v in sorted(env.items()))

    def run_floor(self, cmd, size, key, rnd):
        """lwt2d-floor for (cmd, size) with `key`'s workers: a CSV row of config `key`."""
        a = self.args
        name = f"{cmd}-{size}-{key}" + (f"-round{rnd}" if a.rounds > 1 else "")
        home = os.path.join(self.out, "homes", name)
        self.fresh_home(home)
        extra = dict(STARPU_SCHED="eager", STARPU_HOME=home, FNNDTPS_MODEL_DIR=os.path.join(self.out, "models", name))
        for kv in key.split("+")[1:]:
            var, _, val = kv.partition("=")
            extra[var] = val
        src = os.path.join(self.inputs, f"surface-{size}.npy") if cmd != "inverse" else self.coeffs(size)
        dest = os.path.join(self.work, "floor")
        remove(dest)
        os.makedirs(dest)
        outs = [os.path.join(dest, f"out{i}.npy") for i in range(a.bands.count("=") if cmd == "filter" else 1)]
        argv = [self.floor] + ["--in", src] + [x for o in outs for x in ("--out", o)]
        logpath = os.path.join(self.logs, f"{name}.log")
        open(logpath, "w").close()
        p = run_process(argv, self.env(extra), a.timeout, logpath, extra)
        ok = p.rc == 0 and result_fields(p.out, "floor")
        if not ok:
            log(f"cold.py: {name} failed: {why(p)} (log: {logpath})")
        self.add(cmd, size, key, rnd, 1, "ok" if ok else "timeout" if p.timed_out else "failed", None, p.wall_ms, p.rss_kb)
        remove(dest)

    def coeffs(self, size):
        return os.path.join(self.inputs, f"coeffs-{size}-L{self.args.levels}.npy")

    def command(self, cmd, size):
        """argv of one timed process, and the output it writes (removed after each run)."""
        a = self.args
        surface = os.path.join(self.inputs, f"surface-{size}.npy")
        if cmd == "filter":
            dest = os.path.join(self.work, "filter")
            src = surface[:-4] + ".x3p" if a.filter_input == "x3p" else surface
            return [self.lwt2d, "filter", "--in", src, "--levels", str(a.filter_levels), "--bands", a.bands,
                    "--out-dir", dest], dest
        dest = os.path.join(self.work, f"{cmd}.npy")
        src = surface if cmd == "forward" else self.coeffs(size)
        return [self.lwt2d, cmd, "--in", src, "--out", dest, "--levels", str(a.levels)], dest

    def add(self, cmd, size, cfg, rnd, run, status, t_ms=None, p_ms=None, rss=None):
        self.rows.append(dict(command=cmd, size=size, config=cfg, round=rnd, run=run, transform_ms=t_ms,
                              process_ms=p_ms, peak_rss_kb=rss, status=status))
        self.write_csv()  # after every process: a long bench cut short keeps what it measured

    def write_csv(self):
        path = os.path.join(self.out, "cold.csv")
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=CSV_FIELDS, lineterminator="\n")
            w.writeheader()
            for r in self.rows:
                w.writerow({k: ("" if r[k] is None else fmt(r[k], ".3f") if isinstance(r[k], float) else r[k])
                            for k in CSV_FIELDS})
        return path

    def run(self):
        a = self.args
        for sub in ("logs", "work", "homes", "models", "bus-home", "prep-home", "prep-models", "inputs"):
            shutil.rmtree(os.path.join(self.out, sub), ignore_errors=True)
        os.makedirs(self.logs)
        os.makedirs(self.work)
        self.calibrate_bus()
        if any(c.split("+")[0] == "gpu-alone" for c in a.configs) and self.cuda == 0:
            log("cold.py: gpu-alone skipped: StarPU found no GPU")
        skip = {"gpu-alone"} if self.cuda == 0 else set()
        broken = {}
        for size in a.sizes:
            log(f"cold.py: inputs for {size} x {size} (not timed)")
            for cmd, reason in self.prepare(size).items():
                broken[(cmd, size)] = reason
            for reason in sorted(set(broken.get((cmd, size)) for cmd in a.commands) - {None}):
                log(f"cold.py: {reason}; the runs that need it count as failed "
                    f"(log: {os.path.join(self.logs, f'prep-{size}.log')})")
        jobs = [(cmd, size, cfg) for cmd in a.commands for size in a.sizes for cfg in a.configs]
        skipped = lambda cfg: cfg.split("+")[0] in skip  # noqa: E731
        total = a.rounds * sum(a.runs for cmd, size, cfg in jobs if not skipped(cfg) and (cmd, size) not in broken)
        if os.access(self.floor, os.X_OK):
            self.floors = list(dict.fromkeys(self.floor_key(c) for c in a.configs if not skipped(c)))
        else:
            log(f"cold.py: note: {self.floor} not built: no floor")
        floored = set()
        k = 0
        # Rounds interleaved: round 1 of every configuration, then round 2, so that a drift of
        # the machine over the bench spreads over all of them.
        for rnd, (cmd, size, cfg) in ((r, j) for r in range(1, a.rounds + 1) for j in jobs):
            if skipped(cfg) or (cmd, size) in broken:
                for run in range(1, a.runs + 1):
                    self.add(cmd, size, cfg, rnd, run, "skipped" if skipped(cfg) else "failed")
                continue
            key = self.floor_key(cfg)
            if self.floors and (rnd, cmd, size, key) not in floored:
                floored.add((rnd, cmd, size, key))
                log(f"[floor] {cmd} {size} {key}" + (f" round {rnd}" if a.rounds > 1 else ""))
                self.run_floor(cmd, size, key, rnd)
            name = f"{cmd}-{size}-{cfg}" + (f"-round{rnd}" if a.rounds > 1 else "")
            home = os.path.join(self.out, "homes", name)
            models = os.path.join(self.out, "models", name)
            self.fresh_home(home)
            os.makedirs(models)
            extra = dict(config_env(cfg), STARPU_HOME=home, FNNDTPS_MODEL_DIR=models)
            for run in range(1, a.runs + 1):
                k += 1
                log(f"[{k}/{total}] {cmd} {size} {cfg}" + (f" round {rnd}" if a.rounds > 1 else "") + f" run {run}")
                argv, dest = self.command(cmd, size)
                remove(dest)
                # What this process starts from: run 1 nothing but the bus, run 2 run 1's state.
                before = (f"before: FNNDTPS_MODEL_DIR {count_files(models)} files, STARPU_HOME codelet models "
                          f"{count_files(os.path.join(home, '.starpu', 'sampling', 'codelets'))} files, "
                          f"bus {count_files(os.path.join(home, '.starpu', 'sampling', 'bus'))} files")
                logpath = os.path.join(self.logs, f"{name}-run{run}.log")
                open(logpath, "w").close()
                env = dict(extra)
                if a.trace:
                    argv += ["--trace", logpath[:-4] + ".json"]
                if a.preload:
                    env.update(LD_PRELOAD=os.path.abspath(a.preload), CUDA_CALLS_OUT=logpath[:-4] + ".calls")
                p = run_process(argv, self.env(env), a.timeout, logpath, env, before)
                t = transform_ms(cmd, p.out) if p.rc == 0 else None
                status = "timeout" if p.timed_out else "ok" if t is not None else "failed"
                if status != "ok":
                    log(f"cold.py: {name} run {run} {status}: {why(p)} (log: {logpath})")
                self.add(cmd, size, cfg, rnd, run, status, t, p.wall_ms, p.rss_kb)
                remove(dest)  # GiBs at the full sizes
        for sub in (self.work, self.inputs):  # GiBs at the full sizes; generated again by any run
            shutil.rmtree(sub, ignore_errors=True)

    # -----------------------------------------------------------------------------------------
    # The table.

    def cell(self, cmd, size, cfg, get, spec):
        """Each run's value, or with --rounds its median over the rounds that ended ok ("k/N ok"
        beside it where some did not)."""
        rows = [r for r in self.rows if (r["command"], r["size"], r["config"]) == (cmd, size, cfg)]
        if rows and all(r["status"] == "skipped" for r in rows):
            return "skipped"
        parts = []
        for run in range(1, self.args.runs + 1):
            mine = [r for r in rows if r["run"] == run]
            v, ok = self.value(cmd, size, cfg, run, get), sum(r["status"] == "ok" for r in mine)
            if v is None:
                parts.append(mine[0]["status"] if mine else "-")
            else:
                parts.append(fmt(v, spec) + ("" if ok == len(mine) else f" ({ok}/{len(mine)} ok)"))
        return " / ".join(parts)

    def value(self, cmd, size, cfg, run, get):
        """Run `run`'s value (its median over the rounds), None where none ended ok."""
        ok = [get(r) for r in self.rows
              if (r["command"], r["size"], r["config"], r["run"]) == (cmd, size, cfg, run) and r["status"] == "ok"]
        ok = [v for v in ok if v is not None]
        return statistics.median(ok) if ok else None

    def floor_ms(self, cmd, size, key):
        """The floor's wall ms, its median over the rounds; None where none ended ok."""
        return self.value(cmd, size, key, 1, lambda r: r["process_ms"])

    def floor_block(self):
        a = self.args
        head = ["command", "size"] + self.floors
        grid = [head] + [[cmd, str(size)] + [fmt(self.floor_ms(cmd, size, key), ".0f") if self.floor_ms(cmd, size, key)
                                             else "-" for key in self.floors]
                         for cmd in a.commands for size in a.sizes]
        return self.grid_text("floor wall ms (lwt2d-floor: read the input, start and stop StarPU, write the "
                              "command's outputs; +VAR: those workers):", grid)

    def over_floor(self, r):
        f = self.floor_ms(r["command"], r["size"], self.floor_key(r["config"]))
        return r["process_ms"] / f if f and r["process_ms"] else None

    def grid_text(self, title, grid):
        widths = [max(len(row[i]) for row in grid) for i in range(len(grid[0]))]
        text = [title]
        for row in grid:
            text.append("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))))
        return "\n".join(text) + "\n"

    def block(self, title, get, spec, ratios):
        a = self.args
        head = ["command", "size"] + list(a.configs)
        refs = [c for c in RATIO_TO if ratios and "fnn-dtps" in a.configs and c in a.configs]
        head += [f"fnn-dtps/{c} run1" for c in refs]
        grid = [head]
        for cmd in a.commands:
            for size in a.sizes:
                line = [cmd, str(size)] + [self.cell(cmd, size, cfg, get, spec) for cfg in a.configs]
                for ref in refs:
                    base = self.value(cmd, size, ref, 1, get)
                    mine = [self.value(cmd, size, "fnn-dtps", run, get) for run in (1, 2)]
                    line.append(" / ".join("-" if m is None or not base else f"{m / base:.2f}" for m in mine))
                grid.append(line)
        return self.grid_text(title, grid)

    def table(self):
        a = self.args
        runs = " / ".join(f"run {i}" for i in range(1, a.runs + 1))
        if a.rounds > 1:
            runs += f", each the median of {a.rounds} rounds"
        header = [f"cold.py: lwt2d, every run its own process; {self.workers} (StarPU's defaults), "
                  f"{os.cpu_count()} cores",
                  f"forward, inverse: --levels {a.levels}; filter: --levels {a.filter_levels} --bands {a.bands} "
                  f"({a.filter_input} input)",
                  f"each configuration: a fresh STARPU_HOME (the calibrated bus only) and FNNDTPS_MODEL_DIR, "
                  f"shared by its {a.runs} run(s)" + (f", new for each of {a.rounds} rounds" if a.rounds > 1 else "")
                  + "; gpu-alone = dmdas with STARPU_NCPU=0",
                  "fnn-dtps/X run1: fnn-dtps's run 1 / run 2 over X's run 1"]
        return ("\n".join(header) + "\n\n" +
                self.block(f"transform ms as the app prints it, {runs}:", lambda r: r["transform_ms"], ".2f", True)
                + "\n" + self.block(f"process wall ms, {runs}:", lambda r: r["process_ms"], ".0f", True)
                + "\n" + self.block(f"peak RSS MiB, {runs}:", lambda r: r["peak_rss_kb"] and r["peak_rss_kb"] / 1024,
                                     ".0f", False)
                + ("\n" + self.floor_block() + "\n" + self.block(f"process wall over its floor, {runs}:", self.over_floor,
                                                                 ".2f", False) if self.floors else ""))


# ---------------------------------------------------------------------------------------------

def parse_args(argv):
    ap = compare.OneLineParser(prog="cold.py", description=__doc__.split("\n\n")[0],
                               formatter_class=argparse.RawDescriptionHelpFormatter,
                               epilog="\n\n".join(__doc__.split("\n\n")[2:]))
    ap.add_argument("--build", metavar="DIR", default="build", help="build folder with bin/lwt2d (default build)")
    ap.add_argument("--sizes", metavar="LIST", type=int_list, help="surface sizes S (S x S; default 8192,16384; quick 512,1024)")
    ap.add_argument("--levels", metavar="L", type=int, help="forward and inverse levels (default 4; quick 3)")
    ap.add_argument("--filter-levels", metavar="L", type=int, help="filter levels (default 8; quick 4)")
    ap.add_argument("--bands", metavar="SPEC", help=f"filter bands (default {DEFAULT_BANDS}, scaled to fewer levels)")
    ap.add_argument("--filter-input", choices=["npy", "x3p"], default="npy", help="filter's input file (default npy)")
    ap.add_argument("--commands", metavar="LIST", type=name_list, default=COMMANDS,
                    help="lwt2d commands (default " + ",".join(COMMANDS) + ")")
    ap.add_argument("--configs", metavar="LIST", type=name_list, default=CONFIGS,
                    help="policies, and gpu-alone (default " + ",".join(CONFIGS) + ")")
    ap.add_argument("--runs", metavar="N", type=int, default=2, help="processes per configuration, sharing its folders (default 2)")
    ap.add_argument("--rounds", metavar="K", type=int, default=1,
                    help="independent repetitions of every configuration's runs, each in fresh folders, "
                         "interleaved; the table gives each run's median over them (default 1)")
    ap.add_argument("--out", metavar="DIR", help="output folder (default BUILD/cold)")
    ap.add_argument("--timeout", metavar="S", type=float, help="seconds per process before it counts as timed out (default 600; quick 120)")
    ap.add_argument("--quick", action="store_true", help="small sizes, for CPU-only machines")
    ap.add_argument("--trace", action="store_true", help="each process writes its trace, OUT/logs/NAME-runK.json")
    ap.add_argument("--preload", metavar="LIB", help="LD_PRELOAD for each process (bench/cuda_calls.c: its report "
                    "in OUT/logs/NAME-runK.calls)")
    args = ap.parse_args(argv)
    q = args.quick
    args.sizes = list(dict.fromkeys(args.sizes or ([512, 1024] if q else [8192, 16384])))
    args.levels = args.levels if args.levels is not None else (3 if q else 4)
    fits = max_levels(min(args.sizes))
    if args.filter_levels is None:
        args.filter_levels = min(4, fits) if q else 8
    args.timeout = args.timeout if args.timeout is not None else (120 if q else 600)
    args.commands = list(dict.fromkeys(args.commands))
    args.configs = list(dict.fromkeys(args.configs))
    if args.runs < 1 or args.rounds < 1 or args.levels < 1 or args.filter_levels < 1 or args.timeout <= 0:
        ap.error("--runs, --rounds, --levels, --filter-levels and --timeout must be positive")
    bad = [n for n in args.commands if n not in COMMANDS]
    if bad or not args.commands:
        ap.error(f"unknown command(s) '{','.join(bad)}': use {','.join(COMMANDS)}")
    if not args.configs:
        ap.error("--configs: none given")
    for c in args.configs:
        if config_error(c):
            ap.error(config_error(c))
    if args.preload and not os.access(args.preload, os.R_OK):
        ap.error(f"--preload {args.preload}: not readable")
    for flag, levels in (("--levels", args.levels), ("--filter-levels", args.filter_levels)):
        if levels > fits:
            ap.error(f"{flag} {levels}: a {min(args.sizes)} x {min(args.sizes)} surface allows at most {fits}")
    args.bands = args.bands or scaled_bands(args.filter_levels)
    args.build = os.path.abspath(args.build)
    args.out = os.path.abspath(args.out or os.path.join(args.build, "cold"))
    return args


def check_bands(args, lwt2d):
    """A bad --bands is a bad option: lwt2d's own parser judges it (before it reads any input)."""
    p = subprocess.run([lwt2d, "filter", "--in", os.path.join(args.out, "no-such-input.npy"), "--levels",
                        str(args.filter_levels), "--bands", args.bands, "--out-dir", os.path.join(args.out, "work")],
                       capture_output=True, text=True, timeout=60)
    m = re.search(r"^lwt2d: --bands: (.*)$", p.stderr, re.M)
    if m:
        die(f"--bands {args.bands}: {m.group(1)}")


def main(argv):
    args = parse_args(argv)
    lwt2d = os.path.join(args.build, "bin", "lwt2d")
    if not os.access(lwt2d, os.X_OK):
        die(f"{lwt2d} not built (see --build)")
    if "filter" in args.commands:
        check_bands(args, lwt2d)
    os.makedirs(args.out, exist_ok=True)
    t_start = time.monotonic()
    bench = Bench(args)
    bench.run()
    table = bench.table()
    print(table, end="")
    with open(os.path.join(args.out, "cold.txt"), "w") as f:
        f.write(table)
    csv_path = bench.write_csv()
    bad = [r for r in bench.rows if r["status"] in ("failed", "timeout")]
    log(f"wrote {os.path.join(args.out, 'cold.txt')}, {csv_path}, logs in {bench.logs} "
        f"in {time.monotonic() - t_start:.0f} s" + (f"; {len(bad)} run(s) failed or timed out" if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
