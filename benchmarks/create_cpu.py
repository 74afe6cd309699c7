"""The CLI receiver's CPU time per pipelined create over stdio, for any commit, in alternating runs.

``.venv/bin/python -m benchmarks.create_cpu [--runs N] [--bursts N] [--creates N] SIDE [SIDE...]``

Wall-time throughput on a shared machine moves by 20 % and more with the
other processes' load; the receiver's own CPU time per create moves far less,
so this tool measures that, next to the wall rate. Each side is a commit
(exported with ``git archive``, as ``--compare`` does; nothing is added to the
repository) or ``tree`` (this checkout, uncommitted changes included; the
default NEW). Each run starts the side's CLI as the suite does (``run
--approve auto --elicit defaults --max-active-tasks 5000 --max-stored-tasks
250000 --provider echo``, the OpenTelemetry API installed, no SDK) with
``PYTHONPATH`` at the side's files, so the code measured is the side's own,
whatever its layout (every commit since 5503c7c has ``host_receiver.cli:main``).
The same requestor (this checkout's :mod:`benchmarks.requestor`, no MCP
library) is its stdio server: after the handshake and a warm-up burst it
pipelines ``--bursts`` bursts of ``--creates`` task-augmented
``sampling/createMessage`` requests (window 32, as the latency scenario),
reading the receiver's CPU time (the sum of its threads'
``/proc/PID/task/*/schedstat`` run times, in ns) before each burst and after
the receiver has gone quiet behind it, so each task's work (the echo
provider, the status notifications) is counted too.

Runs alternate (OLD, NEW, NEW, OLD, ...). Printed: each side's median over
its runs (each run's figure is the median of its bursts) of the CPU µs per
create and the creates per s, the ratio NEW ÷ OLD, the lowest and highest
ratio of the runs paired in turn, and each side's spread ((max - min) ÷
median). A pair range that holds 1.0 is no change the runs can see.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from benchmarks.compare import compare, exported

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".venv" / "bin" / "python"
#: The CLI as the installed command runs it, but importing the side's files (``PYTHONPATH``).
CLI = "import sys; from host_receiver.cli import main; main(sys.argv[1:])"
#: The requestor, always this checkout's; the receiver gives its server a clean environment.
REQUESTOR = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from benchmarks.create_cpu import serve; serve()"
WINDOW = 32
TREE = "tree"


def receiver_cpu_ns(pid: int) -> int:
    """The CPU time of every thread of ``pid`` so far, in ns (schedstat's run time)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(FileNotFoundError), open(f"/proc/{pid}/task/{task}/schedstat") as stat:
            total += int(stat.read().split()[0])
    return total


async def bursts(out: str, count: int, creates: int, warmup: int) -> None:
    """The requestor's side: handshake, warm-up, ``count`` measured bursts; the figures to ``out``."""
    import anyio

    from benchmarks.requestor import Requestor, Wire, create_params, pipelined

    requestor = Requestor(Wire(), os.getppid())
    pid = requestor.receiver_pid
    request = ("sampling/createMessage", create_params(600_000))
    await requestor.handshake()
    figures: dict[str, Any] = {"cpu_us": [], "per_s": [], "errors": 0}
    await pipelined(requestor, [request] * warmup, WINDOW)
    await requestor.drain()
    for _ in range(count):
        cpu = receiver_cpu_ns(pid)
        rate, _answers = await pipelined(requestor, [request] * creates, WINDOW, chunk=creates)
        await requestor.drain(0.2)
        figures["cpu_us"].append((receiver_cpu_ns(pid) - cpu) / creates / 1000)
        figures["per_s"].append(rate["per_s"])
        figures["errors"] += rate["errors"]
        figures.setdefault("first_error", rate.get("first_error"))
    await requestor.finish()
    await anyio.Path(out).write_text(json.dumps(figures))


def serve() -> None:
    """Entry of the requestor process (``REQUESTOR``)."""
    import anyio

    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--bursts", type=int, required=True)
    parser.add_argument("--creates", type=int, required=True)
    parser.add_argument("--warmup", type=int, required=True)
    args = parser.parse_args()
    anyio.run(bursts, args.out, args.bursts, args.creates, args.warmup)


@contextlib.contextmanager
def checkout(side: str) -> Iterator[Path]:
    """Where ``side``'s files are: this checkout for ``tree``, else the commit exported."""
    if side == TREE:
        yield ROOT
        return
    with exported(side) as where:
        yield where


def sides_given(parser: argparse.ArgumentParser, given: Sequence[str]) -> list[str]:
    """The sides to run: those given, ``tree`` after a single one; each at most once."""
    sides = list(given) if len(given) > 1 else [*given, TREE]
    if len(set(sides)) < len(sides):
        parser.error("each side once")
    return sides


def alternating(
    name: str, sides: Sequence[str], count: int, measure: Callable[[Path], dict[str, float]]
) -> dict[str, list[dict[str, float]]]:
    """``count`` runs of ``measure`` per side, alternating (OLD, NEW, NEW, OLD, ...)."""
    runs: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
    with contextlib.ExitStack() as stack:
        files = [(side, stack.enter_context(checkout(side))) for side in sides]
        for k in range(count):
            for side, where in files if k % 2 == 0 else files[::-1]:
                runs[side].append(measure(where))
                print(f"{name}: {side}: {runs[side][-1]}", file=sys.stderr)
    return runs


def beside(before: Sequence[dict[str, float]], after: Sequence[dict[str, float]], key: str) -> list[str]:
    """Two cells: the ratio of ``key``'s medians (``*`` when every pair moved the same way) and the
    lowest and highest ratio of the runs paired in turn."""
    figure = next((figure for figure in compare(before, after) if figure.path == key), None)
    if figure is None:
        return ["-", "-"]
    return [f"{figure.ratio:.3f}{' *' if figure.seen else ''}", f"{figure.low:.3f}-{figure.high:.3f}"]


def run_once(where: Path, args: argparse.Namespace) -> dict[str, float]:
    """One receiver process on ``where``'s code; its medians over the bursts."""
    with tempfile.TemporaryDirectory(prefix="hr-create-cpu-") as tmp:
        out = Path(tmp) / "figures.json"
        requestor = [str(PYTHON), "-c", REQUESTOR, "--out", str(out)]
        requestor += [
            "--bursts",
            str(args.bursts),
            "--creates",
            str(args.creates),
            "--warmup",
            str(args.warmup),
        ]
        limits = ["--max-active-tasks", "5000", "--max-stored-tasks", "250000"]
        command = [str(PYTHON), "-c", CLI, "run", "--approve", "auto", "--elicit", "defaults", *limits]
        command += ["--provider", "echo", "--", *requestor]
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")} | {"PYTHONPATH": str(where)}
        done = subprocess.run(
            command,
            cwd=where,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=300,
            check=False,
        )
        if not out.exists():
            tail = done.stderr.decode(errors="replace")[-2000:]
            raise SystemExit(f"create_cpu: a run in {where} wrote no figures ({done.returncode}):\n{tail}")
        figures = json.loads(out.read_text())
    if figures["errors"]:
        raise SystemExit(f"create_cpu: {figures['errors']} creates refused: {figures['first_error']}")
    return {"cpu_us": statistics.median(figures["cpu_us"]), "per_s": statistics.median(figures["per_s"])}


def render(runs: dict[str, list[dict[str, float]]]) -> str:
    """One row per side, in the order given: its medians, and each beside the side before it."""
    sides = list(runs)
    lines = [
        f"{len(runs[sides[0]])} alternating runs per side; ÷ previous: the ratio of the medians to the "
        "side above, pairs: the lowest and highest ratio of the runs paired in turn (* all pairs moved "
        "the same way), spread: (max - min) ÷ median of the side's runs.",
        "",
        "| side | CPU per create (µs) | ÷ previous | pairs | spread "
        "| creates per s | ÷ previous | pairs | spread |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for index, side in enumerate(sides):
        cells = [side]
        for key, digits in (("cpu_us", 1), ("per_s", 0)):
            values = [run[key] for run in runs[side]]
            middle = statistics.median(values)
            cells.append(f"{middle:,.{digits}f}")
            cells += ["-", "-"] if index == 0 else beside(runs[sides[index - 1]], runs[side], key)
            cells.append(f"{(max(values) - min(values)) / middle:.0%}")
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for side in sides:
        cpu = ", ".join(f"{run['cpu_us']:.1f}" for run in runs[side])
        rate = ", ".join(f"{run['per_s']:.0f}" for run in runs[side])
        lines.append(f"{side}: CPU µs per create {cpu}; creates per s {rate}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.create_cpu", description=__doc__.splitlines()[0]
    )
    parser.add_argument("sides", nargs="+", metavar="SIDE", help="commits, or tree (this checkout)")
    parser.add_argument("--runs", type=int, default=3, help="receiver processes per side, alternating")
    parser.add_argument("--bursts", type=int, default=5, help="measured bursts per process")
    parser.add_argument("--creates", type=int, default=4000, help="creates per burst")
    parser.add_argument("--warmup", type=int, default=2000, help="creates before the first burst")
    parser.add_argument("--json", help="also write every run's figures to this file")
    args = parser.parse_args(argv)
    sides = sides_given(parser, args.sides)
    started = time.perf_counter()
    runs = alternating("create_cpu", sides, args.runs, lambda where: run_once(where, args))
    if args.json:
        Path(args.json).write_text(json.dumps(runs, indent=1))
    print(render(runs))
    print(f"\n(python -m benchmarks.create_cpu, {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
