#!/usr/bin/env python3
"""Build step: turns an OpenCL C file into a C header holding its text as a
string constant, so kernels are edited as .cl files and shipped inside the
library. Usage: embed_cl.py INPUT.cl OUTPUT.h SYMBOL"""
import sys


def main():
    src, dst, sym = sys.argv[1:4]
    with open(src, encoding="utf-8") as f:
        text = f.read()
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
