"""Checks a per-task trace (scheduler/trace.hpp) and a Gantt PNG (bench/gantt.py); tests/trace.sh.

  trace_check.py trace TRACE.json TASKS POLICY [--run NAME] [--lwt]
      exactly TASKS task events under POLICY, each on a named worker with a start and a positive
      duration, none overlapping another on its worker; with --run, every task inside that run's
      span; with --lwt, every task names its unit and level.
  trace_check.py png PNG MIN_WIDTH MIN_HEIGHT
      the image opens, is at least that large and is not blank (several colours, some dark).
Exit 0 when it holds, 1 with one line per failure.
"""
import json
import sys


def check_trace(path, tasks, policy, run=None, lwt=False):
    fails = []
    with open(path) as f:
        doc = json.load(f)
    meta = doc.get("otherData", {})
    events = doc["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
    task_events = [e for e in events if e.get("ph") == "X" and e.get("cat") == "task"]
    if meta.get("policy") != policy:
        fails.append(f"policy {meta.get('policy')!r} in otherData, expected {policy!r}")
    if len(task_events) != tasks or meta.get("tasks") != tasks:
        fails.append(f"{len(task_events)} task events (otherData says {meta.get('tasks')}), expected {tasks}")
    nworkers = meta.get("workers", 0)
    for e in task_events:
        if not (0 <= e["tid"] < nworkers) or not names.get(e["tid"]):
            fails.append(f"task {e['name']} on worker {e['tid']}, not one of the {nworkers} named workers")
            break
        if not (e["dur"] > 0 and e["ts"] > 0):
            fails.append(f"task {e['name']} at {e['ts']} lasting {e['dur']} us")
            break
        if lwt and not ({"unit", "level"} <= set(e.get("args", {}))):
            fails.append(f"lwt task {e['name']} without unit and level: {e.get('args')}")
            break
    by_worker = {}
    for e in task_events:
        by_worker.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"], e["name"]))
    for w, spans in by_worker.items():
        spans.sort()
        for (s0, e0, n0), (s1, e1, n1) in zip(spans, spans[1:]):
            if s1 < e0 - 1e-3:  # the file's microseconds carry 3 decimals
                fails.append(f"worker {names.get(w)}: {n1} starts at {s1} before {n0} ends at {e0}")
                break
    if run:
        spans = [e for e in events if e.get("ph") == "X" and e.get("name") == run and e.get("cat") in ("run", "untimed")]
        if len(spans) != 1:
            fails.append(f"{len(spans)} runs named {run!r}, expected 1")
        else:
            r0, r1 = spans[0]["ts"], spans[0]["ts"] + spans[0]["dur"]
            outside = [e for e in task_events if e["ts"] < r0 or e["ts"] + e["dur"] > r1 + 1e-3]
            if outside:
                e = outside[0]
                fails.append(f"{len(outside)} tasks outside run {run} [{r0}, {r1}], e.g. {e['name']} at "
                             f"[{e['ts']}, {e['ts'] + e['dur']}]")
    return fails


def check_png(path, min_w, min_h):
    from PIL import Image
    im = Image.open(path).convert("RGB")
    w, h = im.size
    fails = []
    if w < min_w or h < min_h:
        fails.append(f"{path} is {w}x{h}, expected at least {min_w}x{min_h}")
    colours = im.getcolors(maxcolors=1 << 20) or []
    if len(colours) < 4:
        fails.append(f"{path} has {len(colours)} colours: blank")
    dark = sum(n for n, (r, g, b) in colours if r + g + b < 600)
    if dark < 0.005 * w * h:
        fails.append(f"{path}: only {dark} non-white pixels: no bars drawn")
    return fails


def main(argv):
    if argv[:1] == ["trace"] and len(argv) >= 4:
        rest = argv[4:]
        run = rest[rest.index("--run") + 1] if "--run" in rest else None
        fails = check_trace(argv[1], int(argv[2]), argv[3], run, "--lwt" in rest)
    elif argv[:1] == ["png"] and len(argv) == 4:
        fails = check_png(argv[1], int(argv[2]), int(argv[3]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    for f in fails:
        print(f"FAIL {f}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
