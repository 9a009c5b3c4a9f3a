#!/usr/bin/env python3
"""Resource bounds of clgraph, measured (issue 15; docs/reliability.md).

    python3 tools/py/bench/limits.py [--build BUILD_DIR] [--big] [--json OUT]

Each row runs one clgraph command under /usr/bin/time and records its wall
time and peak RSS:

  check CHAIN_N      `clgraph check` on a chain of N tanh nodes (100,000; with
                     --big 1,000,000): name lookups must stay linear
  plan auto, huge    `clgraph plan --device auto` of a plan far too large
                     for memory: refused by the memory plan before anything
                     big is allocated
  translate LINES    `clgraph translate models/dates` of N lines (10,000 and
                     100,000; with --big 1,000,000) streamed through stdin:
                     peak RSS must not grow with the input
  beam 1024          the widest beam on one line

It prints a table and the machine's load before and after (say it with the
figures); --json writes the rows. Nothing here is a test: timings live here.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))


def timed(cmd, stdin_path=None):
    """(exit status, wall seconds, peak RSS in MB) of cmd."""
    with tempfile.NamedTemporaryFile("r") as tf:
        full = ["/usr/bin/time", "-f", "%e %M", "-o", tf.name] + cmd
        stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
        try:
            p = subprocess.run(full, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        finally:
            if stdin_path:
                stdin.close()
        wall, rss_kb = tf.read().split()[-2:]
    return p.returncode, float(wall), int(rss_kb) / 1024.0


def chain(path, n):
    with open(path, "w") as f:
        f.write("graph g {\n  input x0: f32[4]\n")
        for i in range(1, n + 1):
            f.write("  x%d = tanh(x%d)\n" % (i, i - 1))
        f.write("  output x%d\n}\n" % n)


def date_lines(path, n):
    """n date lines in the model's formats (the samples, shuffled)."""
    with open(os.path.join(ROOT, "models", "dates", "samples.txt"), encoding="utf-8") as f:
        samples = [line.rstrip("\n") for line in f if line.strip()]
    r = random.Random(15)
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(n):
            f.write(r.choice(samples) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--big", action="store_true", help="add the 1,000,000-node and 1,000,000-line rows")
    ap.add_argument("--json")
    a = ap.parse_args()
    cg = os.path.join(a.build, "tools", "clgraph")
    model = os.path.join(ROOT, "models", "dates")
    rows = []
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        for n in [100000] + ([1000000] if a.big else []):
            g = os.path.join(tmp, "chain.cg")
            chain(g, n)
            rc, wall, rss = timed([cg, "check", g])
            rows.append(("check, %d-node chain" % n, rc, wall, rss))
        big = os.path.join(tmp, "big.cg")
        with open(big, "w") as f:
            f.write("graph big {\n  input x: f32[N, 4]\n  y = tanh(x)\n  z = tanh(y)\n  output z\n}\n")
        rc, wall, rss = timed([cg, "plan", big, "--bind", "N=100000000000", "--device", "auto"])
        rows.append(("plan --device auto, 1.6 TB", rc, wall, rss))
        for n in [10000, 100000] + ([1000000] if a.big else []):
            src = os.path.join(tmp, "lines.txt")
            date_lines(src, n)
            rc, wall, rss = timed([cg, "translate", model], src)
            rows.append(("translate, %d lines" % n, rc, wall, rss))
        one = os.path.join(tmp, "one.txt")
        with open(one, "w") as f:
            f.write("14/04/1901\n")
        rc, wall, rss = timed([cg, "translate", model, "--beam", "1024"], one)
        rows.append(("translate --beam 1024, one line", rc, wall, rss))
    load1 = os.getloadavg()
    print("| run | exit | seconds | peak RSS (MB) |")
    print("| --- | --- | --- | --- |")
    for name, rc, wall, rss in rows:
        print("| %s | %d | %.2f | %.1f |" % (name, rc, wall, rss))
    print("\nload average %.2f %.2f %.2f before, %.2f %.2f %.2f after; %s" %
          (load0 + load1 + (time.strftime("%Y-%m-%d"),)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump([dict(run=r[0], exit=r[1], seconds=r[2], rss_mb=r[3]) for r in rows], f, indent=1)
    sys.exit(0 if all(r[1] == (1 if "1.6 TB" in r[0] else 0) for r in rows) else 1)


if __name__ == "__main__":
    main()
