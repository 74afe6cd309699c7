"""The calls of the multi-round-trip benchmark and their timing, the same for every client.

Each client of the ``mrtr`` scenario (benchmarks/mrtr_host.py for host-receiver,
benchmarks/peers/py2_mrtr_client.py for the mcp 2.3.0 ``Client``) connects to
benchmarks/peers/mrtr_server.py and hands :func:`measure` a function that
calls a tool and returns its text (the server's ``stats`` tool included).
This module needs only anyio, so both interpreters import it; their command
lines are the same too (:func:`client_main`).

For each tool (``form``, then ``sample``):

- warm-up calls, then ``calls`` calls one after another, each timed with
  ``perf_counter`` from the call to its final result (both rounds: the
  ``input_required`` answer, the input answered, the retry). The server's
  ``stats`` before and after give its CPU time per call;
- ``bursts`` times: ``concurrency`` calls started at once, the wall time until
  the last result, and the server's work for them: the CPU time its process
  spent between the ``stats`` calls before and after the burst. The bound is
  one call's time (the sequential p50) plus that work; the figure is
  wall / bound, and the burst reported is the median one by that ratio.

The client's own CPU time (``time.process_time()``) is recorded beside the
server's, per call and per burst, to show which side a burst waited for; so is
each side's run-queue wait (:class:`RunQueueWait`): time it was ready to run
but another process had the CPU, which on a shared machine is most of what
separates a burst's wall time from the work done in it.

Every result's text is checked against what the client's answers must
produce; a wrong or failed call is counted, never timed as a success.
"""

from __future__ import annotations

import argparse
import glob
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

#: The tools, in the order they are measured.
TOOLS = ("form", "sample")
#: What the ``form`` tool returns for the fixed answer every client gives.
FORM_TEXT = "Ada 36"


@dataclass(frozen=True)
class Sizes:
    warmup: int
    calls: int
    bursts: int
    concurrency: int


SIZES = {"full": Sizes(warmup=30, calls=200, bursts=5, concurrency=50), "smoke": Sizes(2, 5, 1, 5)}


class RunQueueWait:
    """Seconds this process's threads spent runnable but waiting for a CPU, so far (Linux schedstat).

    Summed thread by thread from the first reading on: a thread's growth since
    the previous reading, a new thread's whole wait. A thread that ended
    between two readings takes its last part with it (the sum never goes
    back). Always 0 without ``/proc``.
    """

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}
        self._total = 0

    def seconds(self) -> float:
        seen: dict[str, int] = {}
        for path in glob.glob("/proc/self/task/*/schedstat"):
            try:
                with open(path) as stat:
                    waited = int(stat.read().split()[1])
            except (OSError, IndexError, ValueError):  # a thread that ended, or no schedstat
                continue
            seen[path] = waited
            self._total += max(0, waited - self._seen.get(path, 0))
        self._seen = seen
        return self._total / 1e9


#: Calls a tool by name and returns the text of its result.
Call = Callable[[str], Awaitable[str]]


class Checked:
    """Calls that returned the wrong text or raised, with the first of them described."""

    def __init__(self, expected: Mapping[str, str]) -> None:
        self.expected = expected
        self.errors = 0
        self.first_error = ""

    async def call(self, call: Call, tool: str) -> None:
        try:
            text = await call(tool)
        except Exception as exc:
            self._fail(f"{tool}: {described(exc)}")
            return
        if text != self.expected[tool]:
            self._fail(f"{tool} returned {text[:100]!r}, not {self.expected[tool]!r}")

    def _fail(self, what: str) -> None:
        self.errors += 1
        self.first_error = self.first_error or what


def described(error: BaseException) -> str:
    """``Type: message`` of the first error inside any exception groups, for a run's ``failure``."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return f"{type(error).__name__}: {error}"[:300]


async def stats(call: Call) -> dict[str, float]:
    """The server's ``stats``: ``cpu_s``, ``wait_s``, ``handled``, ``handler_s`` so far."""
    found: dict[str, float] = json.loads(await call("stats"))
    return found


def work(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """The server's work between two ``stats`` answers: CPU, run-queue wait, request handling."""
    return {
        "cpu_s": after["cpu_s"] - before["cpu_s"],
        "wait_s": after["wait_s"] - before["wait_s"],
        "handler_s": after["handler_s"] - before["handler_s"],
        "handled": after["handled"] - before["handled"],
    }


async def sequential(
    call: Call, tool: str, sizes: Sizes, checked: Checked, waits: RunQueueWait
) -> dict[str, Any]:
    for _ in range(sizes.warmup):
        await checked.call(call, tool)
    before = await stats(call)
    client_before = time.process_time(), waits.seconds()
    times = []
    for _ in range(sizes.calls):
        started = time.perf_counter()
        await checked.call(call, tool)
        times.append(time.perf_counter() - started)
    client_cpu = time.process_time() - client_before[0]
    client_wait = waits.seconds() - client_before[1]
    spent = work(before, await stats(call))
    times.sort()
    return {
        "n": len(times),
        "p50_us": statistics.median(times) * 1e6,
        "p90_us": times[int(0.9 * (len(times) - 1))] * 1e6,
        "server_cpu_us_per_call": spent["cpu_s"] / len(times) * 1e6,
        "server_handler_us_per_call": spent["handler_s"] / len(times) * 1e6,
        "server_wait_us_per_call": spent["wait_s"] / len(times) * 1e6,
        "server_requests_per_call": spent["handled"] / len(times),
        "client_cpu_us_per_call": client_cpu / len(times) * 1e6,
        "client_wait_us_per_call": client_wait / len(times) * 1e6,
    }


async def burst(
    call: Call, tool: str, one_call_s: float, sizes: Sizes, checked: Checked, waits: RunQueueWait
) -> dict[str, float]:
    before = await stats(call)
    client_before = time.process_time(), waits.seconds()
    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for _ in range(sizes.concurrency):
            group.start_soon(checked.call, call, tool)
    wall = time.perf_counter() - started
    client_cpu = time.process_time() - client_before[0]
    client_wait = waits.seconds() - client_before[1]
    spent = work(before, await stats(call))
    bound = one_call_s + spent["cpu_s"]
    return {
        "wall_ms": wall * 1e3,
        "server_cpu_ms": spent["cpu_s"] * 1e3,
        "server_handler_ms": spent["handler_s"] * 1e3,
        "server_wait_ms": spent["wait_s"] * 1e3,
        "client_cpu_ms": client_cpu * 1e3,
        "client_wait_ms": client_wait * 1e3,
        "bound_ms": bound * 1e3,
        "ratio": wall / bound,
    }


async def measure(call: Call, expected: Mapping[str, str], size: str) -> dict[str, Any]:
    """Every tool's sequential and concurrent figures (module docstring); ``errors`` counts failures."""
    sizes = SIZES[size]
    checked = Checked(expected)
    waits = RunQueueWait()
    measured: dict[str, Any] = {}
    for tool in TOOLS:
        one = await sequential(call, tool, sizes, checked, waits)
        bursts = [
            await burst(call, tool, one["p50_us"] / 1e6, sizes, checked, waits) for _ in range(sizes.bursts)
        ]
        ranked = sorted(bursts, key=lambda b: b["ratio"])
        measured[tool] = {
            "sequential": one,
            "concurrent": {**ranked[(len(ranked) - 1) // 2], "concurrency": sizes.concurrency},
            "bursts": bursts,
        }
    measured["errors"] = checked.errors
    if checked.errors:
        measured["first_error"] = checked.first_error
    return measured


#: A client's run: connect as the arguments say (``--url`` or the stdio command), then :func:`measure`.
ClientRun = Callable[[argparse.Namespace, list[str]], Awaitable[dict[str, Any]]]


def client_main(description: str, run: ClientRun, option: tuple[str, str, str]) -> None:
    """A client's command line: ``[OPTION V] [--size S] --out PATH (--url URL | -- COMMAND...)``.

    ``option`` is the client's own (name, default, help). Writes ``{"results": ...}``
    or ``{"failure": ...}`` as JSON to PATH; exits non-zero on a failure.
    """
    parser = argparse.ArgumentParser(description=description)
    name, default, about = option
    parser.add_argument(name, default=default, help=about)
    parser.add_argument("--size", choices=sorted(SIZES), default="full")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--url", help="a Streamable HTTP server")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="a stdio server, after --")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if bool(command) == bool(args.url):
        parser.error("give either --url URL or -- COMMAND")
    try:
        out: dict[str, Any] = {"results": anyio.run(run, args, command)}
    except Exception as exc:
        out = {"failure": described(exc)}
    args.out.write_text(json.dumps(out, indent=1))
    if "failure" in out:
        sys.exit(out["failure"])
