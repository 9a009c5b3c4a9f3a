#!/usr/bin/env python3
"""Build step: turns an OpenCL C file into a C header holding its text as a
string constant, so kernels are edited as .cl files and shipped inside the
library. With --preamble FILE, FILE's text goes first (the definitions every
source shares, backends/opencl/cl_preamble.cl), then a #line directive so
that build logs count the source's own lines. More --preamble files follow
the first in order, each behind a #line directive naming it (the helpers a
few sources share, such as ops/cl/cast_common.cl).
Usage: embed_cl.py [--preamble FILE]... INPUT.cl OUTPUT.h SYMBOL"""
import sys


def main():
    args = sys.argv[1:]
    preamble = ""
    while args[:1] == ["--preamble"]:
        with open(args[1], encoding="utf-8") as f:
            # the first needs no #line: its lines are the program's first
            preamble += ('#line 1 "%s"\n' % args[1].split("/")[-1] if preamble else "") + f.read()
        args = args[2:]
    src, dst, sym = args[:3]
    with open(src, encoding="utf-8") as f:
        text = f.read()
    if preamble:
        text = preamble + '#line 1 "%s"\n' % src.split("/")[-1] + text
    lines = ["/* Generated from %s by tools/py/embed_cl.py: do not edit. */" % src.split("/")[-1],
             "static const char %s[] =" % sym]
    for line in text.splitlines():
        esc = line.replace("\\", "\\\\").replace('"', '\\"')
        lines.append('    "%s\\n"' % esc)
    lines.append("    ;")
    with open(dst, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
