"""``python -m benchmarks.create_cpu``: the CLI's CPU per pipelined create, side by side (no timing
is asserted)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from benchmarks.compare import ROOT
from benchmarks.create_cpu import render


def test_each_side_is_set_beside_the_one_before_with_the_range_of_its_pairs() -> None:
    runs = {
        "old": [{"cpu_us": 100.0, "per_s": 5000.0}, {"cpu_us": 120.0, "per_s": 4000.0}],
        "new": [{"cpu_us": 90.0, "per_s": 5500.0}, {"cpu_us": 96.0, "per_s": 4400.0}],
    }
    table = render(runs)
    assert "| old | 110.0 | - | - | 18% | 4,500 | - | - | 22% |" in table
    # 93 ÷ 110; the pairs 90 ÷ 100 and 96 ÷ 120, both down: marked
    assert "| new | 93.0 | 0.845 * | 0.800-0.900 | 6% | 4,950 | 1.100 * | 1.100-1.100 | 22% |" in table
    assert "old: CPU µs per create 100.0, 120.0; creates per s 5000, 4000" in table


@pytest.mark.slow
def test_a_commit_and_the_working_tree_each_serve_real_pipelined_creates() -> None:
    command = [sys.executable, "-m", "benchmarks.create_cpu", "HEAD", "tree"]
    command += ["--runs", "1", "--bursts", "1", "--creates", "200", "--warmup", "20"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith(("| HEAD |", "| tree |"))]
    assert len(rows) == 2
    for row in rows:
        cpu = float(row.split("|")[2].replace(",", ""))
        assert cpu > 0  # the receiver's CPU time was read
