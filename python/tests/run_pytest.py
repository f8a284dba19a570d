#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""Runs the pytest suite of the package; exits 77 (meson: skipped) without numpy,
PyTorch or pytest."""
import sys

try:
    import numpy  # noqa: F401
    import pytest
    import torch  # noqa: F401
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)

sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", sys.argv[1]] + sys.argv[2:]))
