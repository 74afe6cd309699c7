"""``python -m benchmarks --compare COMMIT`` (the working tree against a commit) and ``--profile DIR``
(no timing is asserted)."""

from __future__ import annotations

import os
import pstats
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.compare import ROOT, compare, flatten, render


def test_each_figure_gets_both_medians_their_ratio_and_the_noise_of_the_pairs() -> None:
    base = [{"slow/cli/wall_s": 2.0}, {"slow/cli/wall_s": 4.0}, {"slow/cli/wall_s": 3.0}]
    tree = [{"slow/cli/wall_s": 1.5}, {"slow/cli/wall_s": 2.4}, {"slow/cli/wall_s": 2.7}]
    (figure,) = compare(base, tree)
    assert (figure.base, figure.tree) == (3.0, 2.4)
    assert figure.ratio == pytest.approx(0.8)
    assert (figure.low, figure.high) == pytest.approx((0.6, 0.9))  # 2.4 / 4.0 and 2.7 / 3.0
    assert figure.seen  # every pair went down
    assert figure.base_spread == pytest.approx(2 / 3)
    table = render([figure], "abc123", 3)
    assert "| slow/cli/wall_s | 3 | 2.4 | 0.800 * | 0.600-0.900 | 67% / 50% |" in table


def test_a_change_inside_the_noise_is_not_marked_and_figures_one_side_lacks_are_left_out() -> None:
    base = [{"a": 1.0, "only-before": 5.0}, {"a": 1.2}]
    tree = [{"a": 1.1}, {"a": 1.0}]
    (figure,) = compare(base, tree)
    assert figure.path == "a"
    assert not figure.seen  # one pair up, one down
    assert "| a | 1.1 | 1.05 | 0.955 | 0.833-1.100 |" in render([figure], "abc123", 2)


def test_only_measured_floats_are_figures_not_counts_text_or_raw_rounds() -> None:
    results = {
        "slow": {
            "cli": {"results": {"tasks": 1000, "wall_s": 2.5, "levels": [{"p50_us": 9.5}]}, "failure": "x"},
            "ts": {"results": {"wall_s": 3.0}, "rounds": [{"results": {"wall_s": 9.0}}]},
        }
    }
    assert flatten(results) == {
        "slow/cli/results/wall_s": 2.5,
        "slow/cli/results/levels[0]/p50_us": 9.5,
        "slow/ts/results/wall_s": 3.0,
    }


def benchmarks(*options: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "benchmarks", *options]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)


def test_a_commit_git_does_not_know_is_named() -> None:
    done = benchmarks("--compare", "no-such-commit-0000", "--smoke", "--scenarios", "latency")
    assert done.returncode != 0
    assert "git knows no commit 'no-such-commit-0000'" in done.stderr


@pytest.mark.slow
def test_a_smoke_comparison_runs_both_sides_and_leaves_no_worktree_behind() -> None:
    worktrees = checkouts()
    done = benchmarks(
        "--compare", "HEAD", "--compare-runs", "2", "--smoke", "--scenarios", "latency", "--receivers", "echo"
    )
    assert done.returncode == 0, done.stderr
    assert "Working tree ÷ HEAD: medians of 2 alternating runs each" in done.stdout
    assert "| latency/echo/results/create_seq/p50_us |" in done.stdout
    order = [line.rsplit(": ", 1)[1] for line in done.stderr.splitlines() if "--compare run" in line]
    assert order == ["commit", "tree", "tree", "commit"]
    assert checkouts() == worktrees


def checkouts() -> set[str]:
    """The repository's worktrees (their paths: other checkouts may commit meanwhile)."""
    command = ["git", "-C", str(ROOT), "worktree", "list", "--porcelain"]
    listed = subprocess.run(command, capture_output=True, text=True, check=True)
    return {line for line in listed.stdout.splitlines() if line.startswith("worktree ")}


@pytest.mark.slow
def test_profile_writes_the_cli_receivers_cprofile_stats_per_backend(tmp_path: Path) -> None:
    done = benchmarks(
        "--smoke", "--scenarios", "slow", "--receivers", "cli", "--backends", "gemini", "--no-setup",
        "--profile", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    stats = {path.name: pstats.Stats(str(path)) for path in tmp_path.iterdir()}
    assert set(stats) == {"slow-cli-fake.prof", "slow-cli-fake-gemini.prof"}
    called = {function[2] for function in stats["slow-cli-fake-gemini.prof"].stats}  # type: ignore[attr-defined]
    assert "generate_content" in called  # the Gemini SDK's call, inside the receiver
