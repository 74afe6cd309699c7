"""``python -m benchmarks --compare COMMIT``: the working tree against a commit, in alternating runs.

``.venv/bin/python -m benchmarks --compare COMMIT [--compare-runs N] [--scenarios ...] [--receivers ...]``

A shared machine drifts by more than most changes are worth, so one run of
each side says little. This mode runs the chosen scenarios ``N`` times on
each side, alternating (commit, working tree, working tree, commit, ...: each
pair starts with the other side than the last), and prints, for every figure
the runs measured, the median of each side, the ratio of the medians (working
tree ÷ commit) and its noise: the lowest and highest ratio of the pairs run
next to each other, and each side's own spread ((max - min) ÷ median). A
ratio whose pair range holds 1.0 is no change the runs can see.

The commit is exported with ``git archive`` into a temporary directory (no
worktree or branch is left in the repository, even if the run is killed),
given this checkout's ``.venv`` and ``.peers``, and run there as
``python -m benchmarks --json ... --rounds 1 --no-setup`` with its options.
Each side runs with ``PYTHONPATH`` set to its own directory, so its receivers
import its own code, not the editable install's.
"""

from __future__ import annotations

import io
import json
import math
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: Each side's measurements: figure path ("scenario/run/key/...") -> one value per run.
Runs = dict[str, list[float]]


def flatten(results: Any, prefix: str = "") -> dict[str, float]:
    """Every float of one run's JSON (``--json``), by its path; counts (ints), text and the raw
    ``rounds`` are left out."""
    out: dict[str, float] = {}
    if isinstance(results, dict):
        for key, value in results.items():
            if key != "rounds":
                out |= flatten(value, f"{prefix}/{key}" if prefix else str(key))
    elif isinstance(results, list):
        for index, value in enumerate(results):
            out |= flatten(value, f"{prefix}[{index}]")
    elif isinstance(results, float) and math.isfinite(results):
        out[prefix] = results
    return out


@dataclass(frozen=True)
class Figure:
    """One figure compared: each side's median, the ratio of the medians and its noise."""

    path: str
    base: float
    tree: float
    #: The lowest and highest ratio of the runs paired in turn (working tree ÷ commit).
    low: float
    high: float
    #: (max - min) ÷ median of each side's runs.
    base_spread: float
    tree_spread: float

    @property
    def ratio(self) -> float:
        return self.tree / self.base if self.base else math.inf

    @property
    def seen(self) -> bool:
        """Whether every pair moved the same way (the pairs' range does not hold 1.0)."""
        return self.low > 1.0 or self.high < 1.0


def spread(values: Sequence[float]) -> float:
    middle = statistics.median(values)
    return (max(values) - min(values)) / abs(middle) if middle else 0.0


def compare(base: Sequence[dict[str, float]], tree: Sequence[dict[str, float]]) -> list[Figure]:
    """The figures both sides measured in every run, by path."""
    paths = sorted(set.intersection(*(set(run) for run in [*base, *tree]))) if base and tree else []
    figures = []
    for path in paths:
        before, after = [run[path] for run in base], [run[path] for run in tree]
        pairs = [b_after / b_before for b_before, b_after in zip(before, after, strict=False) if b_before]
        if not pairs or max(before + after) == min(before + after) == 0:
            continue
        figures.append(
            Figure(
                path,
                statistics.median(before),
                statistics.median(after),
                min(pairs),
                max(pairs),
                spread(before),
                spread(after),
            )
        )
    return figures


def render(figures: Sequence[Figure], commit: str, runs: int) -> str:
    """The comparison as a Markdown table."""
    lines = [
        f"Working tree ÷ {commit}: medians of {runs} alternating runs each; pairs: the lowest and "
        "highest ratio of the runs paired in turn; spread: (max - min) ÷ median of one side's runs. "
        f"* the pairs all moved the same way (with no change, a chance of {2 ** (1 - runs):.0%}).",
        "",
        "| figure | commit | working tree | ratio | pairs | spread: commit / tree |",
        "|---|---|---|---|---|---|",
    ]
    for f in figures:
        mark = " *" if f.seen else ""
        lines.append(
            f"| {f.path} | {f.base:.4g} | {f.tree:.4g} | {f.ratio:.3f}{mark} | {f.low:.3f}-{f.high:.3f} "
            f"| {f.base_spread:.0%} / {f.tree_spread:.0%} |"
        )
    if not figures:
        lines.append("| (no figure measured by both sides) | | | | | |")
    return "\n".join(lines)


@contextmanager
def exported(commit: str) -> Iterator[Path]:
    """``commit``'s files in a temporary directory, with this checkout's ``.venv`` and ``.peers``."""
    found = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if found.returncode != 0:
        raise SystemExit(f"benchmarks: --compare: git knows no commit {commit!r}")
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", found.stdout.strip()],
        capture_output=True,
        check=True,
    )
    with tempfile.TemporaryDirectory(prefix="hr-compare-") as tmp:
        where = Path(tmp)
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            if hasattr(tarfile, "data_filter"):  # Python 3.11.4 and later
                tar.extractall(where, filter="data")
            else:  # our own repository's archive
                tar.extractall(where)
        for shared in (".venv", ".peers"):
            if (ROOT / shared).exists():
                (where / shared).symlink_to((ROOT / shared).resolve())
        yield where


def run_side(checkout: Path, options: Sequence[str], out: Path) -> dict[str, float]:
    """One benchmark run in ``checkout`` with ``options``; its figures (a failed run: an error)."""
    python = ROOT / ".venv" / "bin" / "python"
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    command = [str(python), "-m", "benchmarks", *options, "--rounds", "1", "--no-setup", "--json", str(out)]
    done = subprocess.run(command, cwd=checkout, env=env, stdout=subprocess.DEVNULL, check=False)
    if not out.exists():
        raise SystemExit(f"benchmarks: --compare: a run in {checkout} wrote no results ({done.returncode})")
    if done.returncode != 0:
        note = f"benchmarks: --compare: a run in {checkout} failed in part ({done.returncode})"
        print(note, file=sys.stderr)
    return flatten(json.loads(out.read_text()))


def run_compare(commit: str, runs: int, options: Sequence[str]) -> str:
    """``runs`` alternating runs of the commit and the working tree; the comparison table."""
    base: list[dict[str, float]] = []
    tree: list[dict[str, float]] = []
    with exported(commit) as checkout, tempfile.TemporaryDirectory(prefix="hr-compare-out-") as tmp:
        for k in range(runs):
            sides = [(checkout, base, "commit"), (ROOT, tree, "tree")]
            for where, into, name in sides if k % 2 == 0 else sides[::-1]:
                print(f"benchmarks: --compare run {k + 1}/{runs}: {name}", file=sys.stderr)
                into.append(run_side(where, options, Path(tmp) / f"{name}-{k}.json"))
    return render(compare(base, tree), commit, runs)
