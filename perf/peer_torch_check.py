#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""peer_torch_check.py — emb-bench's peer-script for the test emb-bench-peer-sets: runs
peer_torch.py's main() and checks that, in steady state, its rows of a variant read id sets
no earlier row (nor the priming) read, all of them among those emb-bench wrote; exits 1
naming the first set seen twice. Usage: emb-bench ... --peer torch --peer-script THIS."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_torch  # noqa: E402

seen = {}  # IdSet -> the row that read it
row = [0]
read = peer_torch.IdSet.read


def checked_read(self):
    if self in seen and seen[self] != row[0]:
        sys.exit(f"peer_torch_check: {os.path.basename(self.ids)} read by row {seen[self]} "
                 f"and again by row {row[0]}")
    seen[self] = row[0]
    return read(self)


def counted(*args, **kw):
    row[0] += 1
    return time_row(*args, **kw)


time_row = peer_torch.time_row
peer_torch.IdSet.read = checked_read
peer_torch.time_row = counted
peer_torch.main()
print(f"peer_torch_check: {row[0]} rows, {len(seen)} id sets, none read by two rows",
      file=sys.stderr)
