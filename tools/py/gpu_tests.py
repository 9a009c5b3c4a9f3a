#!/usr/bin/env python3
"""Runs a build's meson tests without meson, in parallel, against a deadline.

For tools/gpu-check.sh on a lent GPU machine, which has Python but neither
meson's version of this build nor its Debian packages: the tests come from
`meson introspect --tests` saved at bundle time (tools/gpu-bundle.sh), each
run with the environment meson would give it, plus ENV overrides. A test
named in --derive is run again as NEW with its environment changed (the
portability tests pointed at the GPU's ICD).

  gpu_tests.py TESTS_JSON LOG_DIR --jobs N --seconds S [--only a,b] \
      [--skip-suite s] [--set K=V] [--derive NEW=OLD:K=V,K=V]

Prints one line per test (name, OK/FAIL/SKIP/TIMEOUT, exit status,
seconds) as each ends, the slowest first where they end together, and a
count at the end. Exits 0 when none failed or timed out.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument('tests')
    p.add_argument('logs')
    p.add_argument('--jobs', type=int, default=os.cpu_count() or 2)
    p.add_argument('--seconds', type=float, default=300)
    p.add_argument('--only', default='')
    p.add_argument('--skip-suite', action='append', default=[])
    p.add_argument('--skip', default='')
    p.add_argument('--set', action='append', default=[])
    p.add_argument('--derive', action='append', default=[])
    return p.parse_args()


def pairs(text):
    out = {}
    for kv in filter(None, text.split(',')):
        k, _, v = kv.partition('=')
        out[k] = v
    return out


def select(tests, a):
    by_name = {t['name']: t for t in tests}
    chosen = []
    only = set(filter(None, a.only.split(',')))
    skip = set(filter(None, a.skip.split(',')))
    for t in tests:
        suites = {s.split(':')[-1] for s in t['suite']}
        if only and t['name'] not in only:
            continue
        if t['name'] in skip or suites & set(a.skip_suite):
            continue
        chosen.append(t)
    for d in a.derive:
        new, _, rest = d.partition('=')
        old, _, env = rest.partition(':')
        if old not in by_name:
            print(f'{new}: no test {old} to derive from', flush=True)
            continue
        t = dict(by_name[old], name=new, env=dict(by_name[old]['env'], **pairs(env)))
        chosen.append(t)
    return chosen


def run_one(t, a, extra, deadline):
    env = dict(os.environ)
    env.update(t['env'])
    env.update(extra)
    left = deadline - time.monotonic()
    limit = min(float(t.get('timeout') or 300), left)
    start = time.monotonic()
    log = os.path.join(a.logs, t['name'] + '.txt')
    if limit < 5:
        return t['name'], 'NOT RUN', None, 0.0
    with open(log, 'w') as f:
        # a session of its own: a script's children go with it on a timeout
        proc = subprocess.Popen(t['cmd'], env=env, cwd=t.get('workdir') or None, stdout=f,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return t['name'], 'TIMEOUT', None, time.monotonic() - start
    state = 'OK' if rc == 0 else 'SKIP' if rc == 77 else 'FAIL'
    return t['name'], state, rc, time.monotonic() - start


def main():
    a = parse_args()
    with open(a.tests) as f:
        tests = select(json.load(f), a)
    os.makedirs(a.logs, exist_ok=True)
    extra = pairs(','.join(a.set))
    deadline = time.monotonic() + a.seconds
    # the longest first (by their meson timeouts), so they start early
    tests.sort(key=lambda t: -(t.get('timeout') or 0))
    counts = {}
    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        futs = [pool.submit(run_one, t, a, extra, deadline) for t in tests]
        for fut in as_completed(futs):
            name, state, rc, secs = fut.result()
            counts[state] = counts.get(state, 0) + 1
            print(f'{name}: {state} (exit {rc}) {secs:.1f} s', flush=True)
    print(' '.join(f'{k} {v}' for k, v in sorted(counts.items())), flush=True)
    return 1 if counts.get('FAIL') or counts.get('TIMEOUT') else 0


if __name__ == '__main__':
    sys.exit(main())
