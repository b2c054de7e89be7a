#!/usr/bin/python3
"""Gantt charts of a per-task trace (lwt2d/gemm --trace, FNNDTPS_TRACE; DESIGN §8): workers as
rows, each task a bar coloured by its codelet, idle time left blank; the title names the policy,
the program and the makespan.

  bench/gantt.py TRACE.json [--out PNG] [--run all|median|NAME] [--cut OUT.json]
  bench/gantt.py --sheet A.json B.json ... --out SHEET.png [--run ...]
  bench/gantt.py --stats TRACE.json ... [--run ...]

--run: the window drawn. `all` (default where the trace has no timed run): every task; `median`
(default otherwise): the timed run (a "runs" span of category "run", as the apps mark them) of
median duration; NAME: the span of that name ("forward 3"). Time is in ms from the window's start.
--cut writes the window's tasks as a trace of their own. --sheet puts one chart per trace one
above the other on one time axis (the longest window's).
--stats draws nothing: per worker of the window, its tasks, busy time (the union of its tasks'
spans), idle gaps between its first start and last end, and the medians and sums of what a task
waited for: its push's own time (push_us), ready to start (ts - pushed_us: the queue and the
data) and the data alone (fetch_us), from the trace's task fields where it has them.
"""
import argparse
import json
import os
import sys


def die(msg):
    print(f"gantt.py: {msg}", file=sys.stderr)
    sys.exit(2)


class Trace:
    """A trace file's tasks, worker names, runs and metadata."""

    def __init__(self, path):
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            die(f"{path}: not a readable trace ({e})")
        events = doc.get("traceEvents", doc if isinstance(doc, list) else None)
        if not isinstance(events, list):
            die(f"{path}: no traceEvents")
        self.path = path
        self.meta = doc.get("otherData", {}) if isinstance(doc, dict) else {}
        self.names = {}   # tid -> name
        self.tasks = []   # dicts with name, tid, ts, dur, args
        self.runs = []    # dicts with name, ts, dur, cat
        for e in events:
            if e.get("ph") == "M" and e.get("name") == "thread_name":
                self.names[e.get("tid")] = e.get("args", {}).get("name", str(e.get("tid")))
            elif e.get("ph") == "X" and e.get("cat") == "task":
                self.tasks.append(e)
            elif e.get("ph") == "X" and e.get("cat") in ("run", "untimed"):
                self.runs.append(e)
        run_rows = {r.get("tid") for r in self.runs}
        self.workers = sorted({t for t in self.names if t not in run_rows} | {e["tid"] for e in self.tasks})

    def window(self, run):
        """(label, start_us, end_us) of the chosen window."""
        timed = [r for r in self.runs if r.get("cat") == "run"]
        if run is None:
            run = "median" if timed else "all"
        if run == "all":
            if not self.tasks:
                return "all tasks", 0.0, 0.0
            return ("all tasks", min(e["ts"] for e in self.tasks),
                    max(e["ts"] + e["dur"] for e in self.tasks))
        if run == "median":
            if not timed:
                die(f"{self.path}: no timed run marked in the trace; use --run all")
            r = sorted(timed, key=lambda x: x["dur"])[(len(timed) - 1) // 2]
            return f"{r['name']} (median of {len(timed)} timed runs)", r["ts"], r["ts"] + r["dur"]
        for r in self.runs:
            if r["name"] == run:
                return r["name"], r["ts"], r["ts"] + r["dur"]
        die(f"{self.path}: no run named '{run}' (runs: {', '.join(r['name'] for r in self.runs) or 'none'})")

    def tasks_in(self, t0, t1):
        """The tasks that start inside [t0, t1] (a run's tasks; those of the next start after it)."""
        return [e for e in self.tasks if t0 <= e["ts"] <= t1]


def write_cut(trace, tasks, label, path):
    meta = dict(trace.meta)
    meta["window"] = label
    meta["tasks"] = len(tasks)
    if tasks:
        t0 = min(e["ts"] for e in tasks)
        meta["first_start_us"] = t0
        meta["makespan_us"] = max(e["ts"] + e["dur"] for e in tasks) - t0
    events = [{"name": "process_name", "ph": "M", "pid": 0,
               "args": {"name": f"{meta.get('program', '?')} under {meta.get('policy', '?')}"}}]
    events += [{"name": "thread_name", "ph": "M", "pid": 0, "tid": t, "args": {"name": n}}
               for t, n in sorted(trace.names.items()) if t in trace.workers]
    with open(path, "w") as f:
        json.dump({"displayTimeUnit": "ms", "otherData": meta, "traceEvents": events + tasks}, f)


def colours(names):
    import matplotlib
    cmap = matplotlib.colormaps["tab20"]
    return {n: cmap(i % 20) for i, n in enumerate(sorted(names))}


def draw(ax, trace, tasks, t0, colour, span_ms=None):
    """One chart on `ax`: a row per worker, bars in ms from t0."""
    rows = trace.workers
    for y, tid in enumerate(rows):
        bars = [((e["ts"] - t0) / 1e3, e["dur"] / 1e3) for e in tasks if e["tid"] == tid]
        cols = [colour[e["name"]] for e in tasks if e["tid"] == tid]
        if bars:
            ax.broken_barh(bars, (y - 0.4, 0.8), facecolors=cols, edgecolor="none")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([trace.names.get(t, str(t)) for t in rows], fontsize=7)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_facecolor("white")
    ax.grid(axis="x", color="0.85", linewidth=0.5)
    if span_ms:
        ax.set_xlim(0, span_ms)
    makespan = (max(e["ts"] + e["dur"] for e in tasks) - min(e["ts"] for e in tasks)) / 1e3 if tasks else 0.0
    return makespan


def title(trace, label, makespan_ms, ntasks):
    m = trace.meta
    if label == "all tasks" and m.get("window"):  # a cut (--cut, compare.py --trace) names its run
        label = m["window"]
    return (f"{m.get('program', '?')} under {m.get('policy', '?')}: {label}, makespan {makespan_ms:.2f} ms, "
            f"{ntasks} tasks")


def plot(traces, run, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    chosen = []
    for tr in traces:
        label, t0, t1 = tr.window(run)
        tasks = tr.tasks_in(t0, t1) if label != "all tasks" else tr.tasks
        start = min([e["ts"] for e in tasks] + [t0]) if tasks else t0
        end = max([e["ts"] + e["dur"] for e in tasks] + [t1]) if tasks else t1
        chosen.append((tr, label, tasks, start, end))
    span = max(end - start for _, _, _, start, end in chosen) / 1e3 or 1.0
    colour = colours({e["name"] for _, _, tasks, _, _ in chosen for e in tasks})
    heights = [max(1.2, 0.25 * len(tr.workers) + 0.9) for tr, *_ in chosen]
    fig, axes = plt.subplots(len(chosen), 1, figsize=(12, sum(heights) + 0.8), squeeze=False,
                             gridspec_kw={"height_ratios": heights}, sharex=True)
    for ax, (tr, label, tasks, start, end) in zip(axes[:, 0], chosen):
        makespan = draw(ax, tr, tasks, start, colour, span)
        ax.set_title(title(tr, label, makespan, len(tasks)), fontsize=9, loc="left")
    axes[-1, 0].set_xlabel("ms from the window's start (blank: idle)")
    fig.legend(handles=[Patch(color=c, label=n) for n, c in colour.items()], loc="lower center",
               ncol=min(6, max(1, len(colour))), fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.06 if colour else 0, 1, 1))
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return chosen


def stats(trace, run):
    """The --stats table of one trace's window, as lines."""
    import statistics
    label, t0, t1 = trace.window(run)
    tasks = trace.tasks_in(t0, t1) if label != "all tasks" else trace.tasks
    lines = [f"{trace.path}: {trace.meta.get('program', '?')} under {trace.meta.get('policy', '?')}, {label}, "
             f"{len(tasks)} tasks"]
    lines.append(f"  {'worker':<32} {'tasks':>6} {'busy ms':>9} {'gaps ms':>9} {'push us':>15} "
                 f"{'ready->start us':>17} {'data us':>15}")

    def med_sum(xs):
        return f"{statistics.median(xs):7.1f} {sum(xs) / 1e3:6.2f}ms" if xs else f"{'-':>15}"

    for tid in trace.workers:
        mine = sorted((e for e in tasks if e["tid"] == tid), key=lambda e: e["ts"])
        if not mine:
            continue
        busy = gaps = 0.0
        end = None
        for e in mine:
            s, f = e["ts"], e["ts"] + e["dur"]
            if end is not None and s > end:
                gaps += s - end
            busy += f - s if end is None else max(0.0, f - max(s, end))
            end = f if end is None else max(end, f)
        args = [e.get("args", {}) for e in mine]
        push = [a["push_us"] for a in args if "push_us" in a]
        ready = [e["ts"] - e["args"]["pushed_us"] for e in mine if "pushed_us" in e.get("args", {})]
        fetch = [a["fetch_us"] for a in args if "fetch_us" in a]
        lines.append(f"  {trace.names.get(tid, str(tid))[:32]:<32} {len(mine):>6} {busy / 1e3:>9.2f} {gaps / 1e3:>9.2f} "
                     f"{med_sum(push):>15} {med_sum(ready):>17} {med_sum(fetch):>15}")
    return lines


def main(argv):
    ap = argparse.ArgumentParser(prog="gantt.py", description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("traces", nargs="*", metavar="TRACE.json")
    ap.add_argument("--sheet", nargs="+", metavar="TRACE.json", help="several traces on one time axis")
    ap.add_argument("--out", metavar="PNG", help="the chart (default: TRACE.png)")
    ap.add_argument("--run", metavar="all|median|NAME", help="the window drawn (default median where runs are marked)")
    ap.add_argument("--cut", metavar="OUT.json", help="write the window's tasks as a trace")
    ap.add_argument("--stats", action="store_true", help="print each worker's busy time, gaps and waits; draw nothing")
    a = ap.parse_args(argv)
    paths = (a.sheet or []) + a.traces
    if not paths:
        die("give a trace (TRACE.json) or --sheet A.json B.json")
    if a.cut and len(paths) != 1:
        die("--cut takes one trace")
    for p in paths:
        if not os.path.isfile(p):
            die(f"{p}: no such file")
    traces = [Trace(p) for p in paths]
    if a.stats:
        if a.cut or a.out or a.sheet:
            die("--stats draws nothing: no --out, --cut or --sheet")
        for tr in traces:
            print("\n".join(stats(tr, a.run)))
        return 0
    out = a.out or (os.path.splitext(paths[0])[0] + ".png")
    chosen = plot(traces, a.run, out)
    if a.cut:
        tr, label, tasks, _, _ = chosen[0]
        write_cut(tr, tasks, label, a.cut)
    for tr, label, tasks, start, end in chosen:
        print(f"{tr.path}: {label}, {len(tasks)} tasks, {(end - start) / 1e3:.3f} ms")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
