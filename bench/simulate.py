"""compare.py --simulate PLATFORM: the bench on a SimGrid-simulated node (DESIGN §8).

The platform is derived from the GPU machine's calibrated sampling folder by
bench/platforms/make_platform.py into OUT/platform at the start of every run; every process gets
the environment that makes the SimGrid build of StarPU read it (prepare()). Codelets do not run:
their durations come from the calibrated history models, transfers from the platform file, and
every time the apps print is simulated time, so a configuration gives the same result every run.
"""
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "platforms"))
import sim_units  # noqa: E402  (lwt2d's unit count in simulated runs)
from make_platform import NAMES  # noqa: E402  (the platforms make_platform.py derives)

DEFAULT_MODELS = os.path.join(HERE, "platforms", "h200", "sampling")
MAKE_PLATFORM = os.path.join(HERE, "platforms", "make_platform.py")
RECALIBRATE = "recalibrate with scripts/gpu/run.sh calibrate (bench/platforms/h200/README.md)"
MISSING_MODEL = re.compile(r"Codelet (\S+) does not have a perfmodel, or is not calibrated enough")
SIM_APPS = ("lwt2d", "gemm")  # StarPU's sgemm/dgemm examples are not built for simulation


def die(msg):
    print(f"{os.path.basename(sys.argv[0])}: {msg}", file=sys.stderr)
    sys.exit(2)


def units(size):
    return sim_units.units(size)


def simgrid_prefix():
    """The SimGrid build of StarPU: $STARPU_SIMGRID_PREFIX, else ~/.cache/fnndtps/current-simgrid."""
    prefix = os.environ.get("STARPU_SIMGRID_PREFIX")
    how = "STARPU_SIMGRID_PREFIX"
    if not prefix:
        pointer = os.path.expanduser("~/.cache/fnndtps/current-simgrid")
        how = pointer
        try:
            with open(pointer) as f:
                prefix = f.read().strip()
        except OSError:
            die(f"--simulate: no SimGrid StarPU ({pointer} missing; set STARPU_SIMGRID_PREFIX to its install prefix)")
    lib = os.path.join(prefix, "lib")
    if not os.path.isdir(lib) or not any(x.startswith("libstarpu") for x in os.listdir(lib)):
        die(f"--simulate: no StarPU library in {lib} (from {how}); set STARPU_SIMGRID_PREFIX to the SimGrid StarPU's prefix")
    return prefix


def sampling_host(models):
    """The host name of a StarPU sampling folder (bus/HOST.config and codelets/45/), or exit 2."""
    bus, codelets = os.path.join(models, "bus"), os.path.join(models, "codelets", "45")
    hosts = [f[:-len(".config")] for f in sorted(os.listdir(bus)) if f.endswith(".config")] \
        if os.path.isdir(bus) else []
    if not hosts or not os.path.isdir(codelets) or not os.listdir(codelets):
        die(f"--sim-models {models}: not a StarPU sampling folder (needs bus/HOST.config and codelets/45/); "
            f"the calibrated one is {os.path.relpath(DEFAULT_MODELS, os.getcwd())}")
    return hosts[0]


def provenance(models):
    """Where the models come from: the calibration's date and commit from the folder's README."""
    readme = os.path.join(os.path.dirname(os.path.abspath(models)), "README.md")
    try:
        with open(readme) as f:
            first = f.read().split("\n\n")[1].replace("\n", " ")
    except (OSError, IndexError):
        return "calibration not documented"
    what = re.search(r"\(([^)]*\bGPU[^)]*|one NVIDIA[^)]*)\)", first)
    date = re.search(r"on (\d{4}-\d\d-\d\d)", first)
    commit = re.search(r"at commit (\w+)", first)
    return ("calibrated on the GPU machine" + (f" ({what.group(1).split(';')[0]})" if what else "")
            + (f" on {date.group(1)}" if date else "") + (f" at commit {commit.group(1)}" if commit else "")
            + " by scripts/gpu/run.sh calibrate")


def prepare(args):
    """Checks the platform, generates it into OUT/platform, and returns (env, info): the variables
    every process gets, and what the header says."""
    name = args.simulate
    if name not in NAMES:
        die(f"--simulate {name}: unknown platform; known: {', '.join(NAMES)}")
    models = os.path.abspath(args.sim_models or DEFAULT_MODELS)
    sampling_host(models)
    prefix = simgrid_prefix()
    plat = os.path.join(args.out, "platform")
    shutil.rmtree(plat, ignore_errors=True)
    os.makedirs(plat)
    p = subprocess.run([sys.executable, MAKE_PLATFORM, "--from", models, "--name", name, "--out", plat],
                       capture_output=True, text=True)
    if p.returncode != 0:
        lines = [x for x in (p.stderr + p.stdout).splitlines() if x.strip()]
        die(f"--simulate {name}: make_platform.py failed: " + (lines[-1] if lines else f"exit {p.returncode}"))
    sampling = os.path.join(plat, "sampling")
    home = os.path.join(args.out, "starpu-home")  # StarPU's own files, out of the repository
    shutil.rmtree(home, ignore_errors=True)
    os.makedirs(home)
    env = {
        "STARPU_PERF_MODEL_DIR": sampling,
        "STARPU_HOSTNAME": name,
        # h200xN: identical devices, one merged model; seed2017: two cards, one model each.
        "STARPU_PERF_MODEL_HOMOGENEOUS_CUDA": "0" if name == "seed2017" else "1",
        "STARPU_CALIBRATE_MINIMUM": "2",
        "STARPU_HOME": home,
        "LD_LIBRARY_PATH": os.path.join(prefix, "lib") +
                           (":" + os.environ["LD_LIBRARY_PATH"] if os.environ.get("LD_LIBRARY_PATH") else ""),
    }
    with open(os.path.join(args.out, "simulate.env"), "w") as f:  # to rerun a log's command by hand
        f.write("".join(f"export {k}='{v}'\n" for k, v in env.items()))
    info = {"name": name, "models": models, "sampling": sampling, "prefix": prefix,
            "provenance": provenance(models)}
    return env, info


def machine_counts(info):
    """CPU hosts and CUDA devices of the generated platform (bus/NAME.config), and the GPUs' models
    (platform.v4.xml's CUDA<i> hosts)."""
    bus = os.path.join(info["sampling"], "bus")
    counts = {}
    with open(os.path.join(bus, info["name"] + ".config")) as f:
        for line in f:
            m = re.match(r"\s*(\d+)\s*#\s*Number of (\w+)", line)
            if m:
                counts[m.group(2)] = int(m.group(1))
    gpus = []
    try:
        root = ET.parse(os.path.join(bus, info["name"] + ".platform.v4.xml")).getroot()
        for h in sorted(root.iter("host"), key=lambda h: h.get("id", "")):
            if re.fullmatch(r"CUDA\d+", h.get("id", "")):
                model = next((p.get("value") for p in h.iter("prop") if p.get("id") == "model"), "?")
                gpus.append((int(h.get("id")[4:]), model))
    except (OSError, ET.ParseError):
        pass
    gpus = [f"GPU {i}: {m} (simulated)" for i, m in sorted(gpus)]
    return counts.get("CPUs", 0), counts.get("CUDA", 0), gpus


def gpu_summary(gpus):
    """'8 x NVIDIA H200' or 'NVIDIA GeForce GTX 750 Ti + NVIDIA GeForce GTX 1080'."""
    models = [g.split(": ", 1)[1].replace(" (simulated)", "") for g in gpus]
    if not models:
        return ""
    if len(set(models)) == 1:
        return f"{len(models)} x {models[0]}"
    return " + ".join(models)


def check_models(text, app, size, args):
    """A run that stopped on a missing model: one line naming the codelet and the size, exit 2."""
    m = MISSING_MODEL.search(text)
    if m:
        print(" STOPPED", file=sys.stderr)  # ends the progress line; the reason is the last line
        die(f"simulated {app.name} {size} ({app.setup(size)}) on platform {args.simulate}: codelet {m.group(1)} "
            f"has no calibrated model for this size in {args.sim_info['models']}; {RECALIBRATE}")
