#!/usr/bin/env python3
"""Compares two perf profiles of proxies, per request.

    perf record -F 199 -g -p PID -o A.data -- sleep 15   # one per process
    python3 scripts/perfdiff.py A.data REQS_A B.data REQS_B [HZ]

REQS_* are the requests each process served while it was sampled (its
req/s in the round times the seconds sampled); HZ is perf's -F (199).
It prints, for each function, the microseconds per request spent in it,
its callees included, in A, in B and A less B, largest difference first.
"""
import collections
import re
import subprocess
import sys


def inclusive(data):
    """Samples per function, stacks included (a function counted once a sample)."""
    out = subprocess.run(["perf", "script", "-i", data], capture_output=True, text=True, check=True).stdout
    counts = collections.Counter()
    for sample in out.split("\n\n"):
        frames = set()
        for line in sample.splitlines()[1:]:
            parts = line.strip().split(" ", 1)
            if len(parts) == 2:
                frames.add(re.sub(r"\+0x[0-9a-f]+$", "", parts[1].rsplit(" (", 1)[0]))
        counts.update(frames)
    return counts


def main(argv):
    if len(argv) < 5:
        sys.exit(__doc__)
    hz = float(argv[5]) if len(argv) > 5 else 199.0
    a, b = inclusive(argv[1]), inclusive(argv[3])
    per_a, per_b = 1e6 / hz / float(argv[2]), 1e6 / hz / float(argv[4])
    rows = sorted(((a[f] * per_a - b[f] * per_b, a[f] * per_a, b[f] * per_b, f) for f in set(a) | set(b)), reverse=True)
    print("   A-B       A       B  function (µs per request)")
    for row in rows[:60]:
        print("%6.1f  %6.1f  %6.1f  %s" % row)


if __name__ == "__main__":
    main(sys.argv)
