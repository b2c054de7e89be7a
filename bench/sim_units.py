#!/usr/bin/env python3
"""The LWT's unit count in simulated runs and in the calibration that feeds them.

A history-based model knows only the footprints it was calibrated at, and an LWT task's
footprint is its strip's shape: simulation must cut an image into the units the GPU machine
calibrated, whatever the simulated worker count. The rule is lwt2d's default on the GPU
machine (16 workers: 4 per worker, at least one per 16 MiB of image), fixed.

    python3 bench/sim_units.py SIZE      prints the unit count for a SIZE x SIZE image
"""
import sys


def units(size: int) -> int:
    return max(64, size * size * 4 // (16 << 20))


if __name__ == "__main__":
    if len(sys.argv) != 2 or not sys.argv[1].isdigit() or int(sys.argv[1]) < 64:
        sys.exit("usage: sim_units.py SIZE (an image side of at least 64)")
    print(units(int(sys.argv[1])))
