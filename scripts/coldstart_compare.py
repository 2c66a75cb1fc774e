#!/usr/bin/env python3
"""Cold start of two builds side by side: each binary as the local server, from process start
until its port accepts connections, the two alternated so that a busy machine slows both alike.

usage: coldstart_compare.py BIN_A BIN_B [STARTS]     (STARTS per binary, default 40)

Prints the median, the quartiles and the minimum of each, and the difference of the medians. The
model settings name an OpenAI-compatible server that is never called: a cold start reads its
configuration and builds its clients, it calls no model.
"""
import os, statistics, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import start_server, stop  # noqa: E402


def main():
    binaries = sys.argv[1:3]
    starts = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    times = {binary: [] for binary in binaries}
    with tempfile.TemporaryDirectory() as log_dir:
        for _ in range(starts):
            for binary in binaries:
                proc, _port, seconds = start_server(binary, 9, log_dir)
                stop(proc)
                times[binary].append(seconds * 1000)
    medians = []
    for binary in binaries:
        ms = sorted(times[binary])
        q1, median, q3 = statistics.quantiles(ms, n=4)
        medians.append(median)
        print(f"{binary}: median {median:.1f} ms (quartiles {q1:.1f}–{q3:.1f}, min {ms[0]:.1f}) over {starts} starts")
    print(f"difference of the medians: {medians[1] - medians[0]:+.1f} ms")


if __name__ == "__main__":
    main()
