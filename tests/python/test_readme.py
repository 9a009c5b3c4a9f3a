"""The README's Python examples run as written (from the source tree's root)."""
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT


def readme_python_blocks():
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    section = text.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


@pytest.mark.parametrize("index", range(3))
def test_readme_example(index):
    blocks = readme_python_blocks()
    assert len(blocks) == 3
    code = blocks[index]
    if "pandas" in code:
        pytest.importorskip("pandas")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip()
