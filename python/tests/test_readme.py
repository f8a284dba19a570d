# SPDX-License-Identifier: BSD-2-Clause
"""The README's PyTorch training loop runs as written."""
import os
import re

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


def test_readme_training_loop(capsys):
    with open(README) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert blocks, "the README has no python block"
    exec(compile(blocks[0], "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "(t_user): _Bag(1000 x 16, float32, sum, feature='user')" in out, out
    assert "optimizer=adagrad, lr=0.01" in out and "optimizer_state" in out, out


def test_runner_skips_without_torch(tmp_path):
    """run_pytest.py exits 77 (meson: skipped) when torch cannot be imported."""
    import subprocess
    import sys
    (tmp_path / "torch.py").write_text("raise ImportError('no torch here')\n")
    runner = os.path.join(os.path.dirname(__file__), "run_pytest.py")
    r = subprocess.run([sys.executable, runner, str(tmp_path)], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert r.returncode == 77 and "no torch here" in r.stdout
