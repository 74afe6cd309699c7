"""The CLI receiver's CPU per pushed request over Streamable HTTP, for any commit, in alternating runs.

``.venv/bin/python -m benchmarks.http_push_cpu [--runs N] [--rounds N] [--requests N] SIDE [SIDE...]``

The ``http-latency-json`` scenario's path, measured by the CPU it costs the
receiver rather than by wall time (which on a shared machine is mostly the
other processes'). The requestor is :mod:`benchmarks.http_requestor`'s
endpoint in the ``json`` framing (the server's requests as SSE events on the
GET stream, the receiver's answers as POSTs answered 202); the receiver is
the CLI as the suite starts it (``run --approve auto --elicit defaults
--provider echo --url URL``), with ``PYTHONPATH`` at the side's files. After
the handshake and a warm-up, each round sends ``--requests`` task-augmented
``sampling/createMessage`` requests one after the other, then as many
``tasks/get`` of the tasks made, and reads the receiver's CPU time (its
threads' ``/proc/PID/task/*/schedstat`` run times) before each phase and
after the receiver went quiet behind it, so each task's own work (the echo
provider, the status notification's POST) is counted with its create.

Sides are commits (exported as ``--compare`` does) or ``tree`` (this
checkout); runs alternate (OLD, NEW, NEW, OLD, ...). Printed: per side the
median over its runs (each run's figure the median of its rounds) of the CPU
µs per create and per get, and the p50 wall µs of each, with the ratio to
the side before and the lowest and highest ratio of the runs paired in turn.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.create_cpu import CLI, PYTHON, ROOT, alternating, beside, receiver_cpu_ns, sides_given

REQUESTOR = (
    f"import sys; sys.path.insert(0, {str(ROOT)!r}); from benchmarks.http_push_cpu import serve; serve()"
)
KEYS = ("create_cpu_us", "get_cpu_us", "create_p50_us", "get_p50_us")


async def rounds(out: str, count: int, requests: int, warmup: int) -> None:
    """The requestor's side: serve, handshake, warm-up, ``count`` measured rounds; figures to ``out``."""
    import anyio

    from benchmarks.http_requestor import PATH, Endpoint, HttpRequestor
    from benchmarks.requestor import LONG_TTL_MS, create_params

    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    endpoint = Endpoint("json")
    print(f"http://127.0.0.1:{listener.getsockname()[1]}{PATH.decode()}", flush=True)
    figures: dict[str, list[float]] = {key: [] for key in KEYS}
    async with anyio.create_task_group() as group:
        group.start_soon(endpoint.serve, listener)
        line = await anyio.to_thread.run_sync(sys.stdin.readline)
        req = HttpRequestor(endpoint, int(line))
        pid = req.receiver_pid
        await req.handshake()
        create = ("sampling/createMessage", create_params(LONG_TTL_MS))
        for _ in range(warmup):
            await req.call(*create)
        await req.drain(0.3)
        for _ in range(count):
            ids: list[str] = []
            for phase in ("create", "get"):
                cpu, walls = receiver_cpu_ns(pid), []
                for index in range(requests):
                    call = create if phase == "create" else ("tasks/get", {"taskId": ids[index]})
                    wall, answer = await req.call(*call)
                    walls.append(wall / 1000)
                    if phase == "create":
                        ids.append(answer["result"]["task"]["taskId"])
                await req.drain(0.3)
                figures[f"{phase}_cpu_us"].append((receiver_cpu_ns(pid) - cpu) / requests / 1000)
                figures[f"{phase}_p50_us"].append(statistics.median(walls))
        await req.finish()
        group.cancel_scope.cancel()
    listener.close()
    await anyio.Path(out).write_text(json.dumps(figures))


def serve() -> None:
    """Entry of the requestor process (``REQUESTOR``)."""
    import anyio

    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--rounds", type=int, required=True)
    parser.add_argument("--requests", type=int, required=True)
    parser.add_argument("--warmup", type=int, required=True)
    args = parser.parse_args()
    anyio.run(rounds, args.out, args.rounds, args.requests, args.warmup)


def run_once(where: Path, args: argparse.Namespace) -> dict[str, float]:
    """One receiver process on ``where``'s code; its medians over the rounds."""
    with tempfile.TemporaryDirectory(prefix="hr-push-cpu-") as tmp:
        out = Path(tmp) / "figures.json"
        counts = ["--rounds", str(args.rounds), "--requests", str(args.requests)]
        counts += ["--warmup", str(args.warmup)]
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        with subprocess.Popen(
            [str(PYTHON), "-c", REQUESTOR, "--out", str(out), *counts],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        ) as requestor:
            assert requestor.stdin is not None and requestor.stdout is not None
            url = requestor.stdout.readline().strip()
            limits = ["--max-active-tasks", "5000", "--max-stored-tasks", "250000"]
            command = [str(PYTHON), "-c", CLI, "run", "--approve", "auto", "--elicit", "defaults", *limits]
            with subprocess.Popen(
                [*command, "--provider", "echo", "--url", url],
                cwd=where,
                env=env | {"PYTHONPATH": str(where)},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            ) as receiver:
                try:
                    requestor.stdin.write(f"{receiver.pid}\n")
                    requestor.stdin.flush()
                    requestor.wait(timeout=600)
                finally:
                    receiver.terminate()
        if not out.exists():
            raise SystemExit(f"http_push_cpu: a run in {where} wrote no figures ({requestor.returncode})")
        figures: dict[str, list[float]] = json.loads(out.read_text())
    return {key: statistics.median(values) for key, values in figures.items()}


def render(runs: dict[str, list[dict[str, float]]]) -> str:
    """One row per side: its medians, and each beside the side before it (ratio, pairs)."""
    sides = list(runs)
    lines = [
        f"{len(runs[sides[0]])} alternating runs per side; ratio: to the side above; pairs: lowest and "
        "highest ratio of the runs paired in turn (* all pairs moved the same way).",
        "",
        "| side | " + " | ".join(f"{key} | ratio | pairs" for key in KEYS) + " |",
        "|---|" + "---|---|---|" * len(KEYS),
    ]
    for index, side in enumerate(sides):
        cells = [side]
        for key in KEYS:
            middle = statistics.median(run[key] for run in runs[side])
            cells.append(f"{middle:,.0f}")
            cells += ["-", "-"] if index == 0 else beside(runs[sides[index - 1]], runs[side], key)
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for side in sides:
        for key in KEYS:
            lines.append(f"{side} {key}: " + ", ".join(f"{run[key]:.0f}" for run in runs[side]))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.http_push_cpu", description=__doc__.splitlines()[0]
    )
    parser.add_argument("sides", nargs="+", metavar="SIDE", help="commits, or tree (this checkout)")
    parser.add_argument("--runs", type=int, default=3, help="receiver processes per side, alternating")
    parser.add_argument("--rounds", type=int, default=3, help="measured rounds per process")
    parser.add_argument("--requests", type=int, default=500, help="creates (and gets) per round")
    parser.add_argument("--warmup", type=int, default=200, help="creates before the first round")
    args = parser.parse_args(argv)
    sides = sides_given(parser, args.sides)
    started = time.perf_counter()
    runs = alternating("http_push_cpu", sides, args.runs, lambda where: run_once(where, args))
    print(render(runs))
    print(f"\n(python -m benchmarks.http_push_cpu, {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
