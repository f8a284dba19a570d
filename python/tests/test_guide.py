# SPDX-License-Identifier: BSD-2-Clause
"""Every Python block of docs/guide/ runs as written (the C ones: tests/doc_blocks.py)."""
import glob
import os
import re

import pytest

GUIDE = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "guide")


def python_blocks():
    for path in sorted(glob.glob(os.path.join(GUIDE, "*.md"))):
        with open(path) as f:
            text = f.read()
        for m in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M):
            line = text.count("\n", 0, m.start()) + 2
            yield pytest.param(m.group(1), id="%s:%d" % (os.path.basename(path), line))


@pytest.mark.parametrize("code", list(python_blocks()))
def test_guide_block_runs(code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "guide", "exec"), {})


def test_guide_has_python_blocks():
    assert list(python_blocks()), "docs/guide/ has no python block"
