"""``python -m benchmarks.http_push_cpu``: the CLI's CPU per pushed create and get over HTTP, side by
side (no timing is asserted); and ``http_client_cpu``'s pushed request."""

from __future__ import annotations

import subprocess
import sys

import pytest

from benchmarks.compare import ROOT
from benchmarks.http_push_cpu import KEYS, render


def test_each_side_is_set_beside_the_one_before_with_the_range_of_its_pairs() -> None:
    old = [dict.fromkeys(KEYS, 100.0), dict.fromkeys(KEYS, 120.0)]
    new = [dict.fromkeys(KEYS, 90.0), dict.fromkeys(KEYS, 96.0)]
    table = render({"old": old, "new": new})
    assert "| old | 110 | - | - | 110 | - | - |" in table
    # 93 ÷ 110; the pairs 90 ÷ 100 and 96 ÷ 120, both down: marked
    assert "| new | 93 | 0.845 * | 0.800-0.900 | 93 | 0.845 * | 0.800-0.900 |" in table
    assert "old create_cpu_us: 100, 120" in table


@pytest.mark.slow
def test_a_commit_and_the_working_tree_each_answer_real_pushed_creates_and_gets() -> None:
    command = [sys.executable, "-m", "benchmarks.http_push_cpu", "HEAD", "tree"]
    command += ["--runs", "1", "--rounds", "1", "--requests", "30", "--warmup", "5"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith(("| HEAD |", "| tree |"))]
    assert len(rows) == 2
    for row in rows:
        cells = row.split("|")
        assert float(cells[2].replace(",", "")) > 0  # the receiver's CPU per create was read
        assert float(cells[5].replace(",", "")) > 0  # and per get


@pytest.mark.slow
def test_the_client_cpu_tool_times_a_pushed_request() -> None:
    command = [sys.executable, "-m", "benchmarks.http_client_cpu", "--posts", "20", "--rounds", "1"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "pushed ping (an SSE event on the GET stream, answered by a POST):" in done.stdout
