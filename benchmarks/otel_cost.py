"""What OpenTelemetry costs one task-augmented create, in one process per variant, no pipe.

``.venv/bin/python -m benchmarks.otel_cost [--creates N] [--rounds N]``

A server played in memory (:class:`host_receiver.testing.FakeServer`) pushes
``sampling/createMessage`` with a task to a ``Host`` serving it as the
command does with ``--approve auto --elicit defaults --provider echo``, one
create after the other, each followed by a 2 ms pause in which the task's
work runs (as the latency scenario does). Three variants, each in a process
of its own, interleaved over ``--rounds``:

- ``without the extra``: the OpenTelemetry API not importable;
- ``API, no SDK``: the API's no-op instruments;
- ``SDK on``: the SDK as the command configures it (``cli._telemetry.exporting``),
  batch export over OTLP/HTTP to a loopback endpoint.

Printed per variant: the p50 of a create's answer (request sent to answer
received, in µs) and the CPU time of the whole process per create (its
answer, its task's work, the export thread), the median over the rounds,
and each as a ratio to the variant without the extra. The figures are
measured, not asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

import anyio

from benchmarks.requestor import create_params
from benchmarks.run import otlp_sink
from host_receiver import (
    AutoApprove,
    ElicitationService,
    FillDefaults,
    Receiver,
    ReceiverConfig,
    SamplingService,
    tune_gc_for_serving,
)
from host_receiver.cli._telemetry import exporting
from host_receiver.client.host import Host
from host_receiver.testing import FakeServer
from providers import build_registry

VARIANTS = {
    "without the extra": "none",
    "API, no SDK": "api",
    "SDK on": "sdk",
}
PAUSE_S = 0.002


async def serve(creates: int) -> dict[str, float]:
    """Push ``creates`` task-augmented creates at a Host; the answer p50 (µs) and CPU µs per create."""
    tune_gc_for_serving()
    registry = build_registry(provider="echo")
    receiver = Receiver(
        sampling=SamplingService(registry, AutoApprove()),
        elicitation=ElicitationService(FillDefaults()),
        config=ReceiverConfig(max_active_tasks=5_000, max_stored_tasks=250_000),
    )
    params = create_params(600_000)
    async with registry, FakeServer() as server, Host(receiver) as host:
        await host.connect("bench", server.transport)
        for _ in range(creates // 10):  # warm up
            await server.request("sampling/createMessage", params)
            await anyio.sleep(PAUSE_S)
        answers: list[float] = []
        cpu = time.process_time()
        for _ in range(creates):
            started = time.perf_counter()
            await server.request("sampling/createMessage", params)
            answers.append(time.perf_counter() - started)
            await anyio.sleep(PAUSE_S)
        cpu = time.process_time() - cpu
    return {"answer_p50_us": statistics.median(answers) * 1e6, "cpu_per_create_us": cpu / creates * 1e6}


def child(variant: str, creates: int) -> None:
    """One variant's measurement, printed as one JSON line."""
    if variant == "none":
        sys.modules["opentelemetry"] = None  # type: ignore[assignment]
    if variant == "sdk":
        with exporting(os.environ):
            figures = anyio.run(serve, creates)
    else:
        figures = anyio.run(serve, creates)
    print(json.dumps(figures))


def measure(variant: str, creates: int, otlp_url: str) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    if variant == "sdk":
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = otlp_url
    command = [sys.executable, "-m", "benchmarks.otel_cost", "--child", variant, "--creates", str(creates)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def render(results: dict[str, list[dict[str, float]]]) -> str:
    medians = {
        name: {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        for name, runs in results.items()
    }
    base = medians["without the extra"]
    lines = [
        "| variant | create answer p50 (µs) | ÷ without | CPU per create (µs) | ÷ without |",
        "|---|---|---|---|---|",
    ]
    for name, figures in medians.items():
        answer, cpu = figures["answer_p50_us"], figures["cpu_per_create_us"]
        lines.append(
            f"| {name} | {answer:.0f} | {answer / base['answer_p50_us']:.2f} "
            f"| {cpu:.0f} | {cpu / base['cpu_per_create_us']:.2f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.otel_cost", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--creates", type=int, default=2000, help="creates per process")
    parser.add_argument("--rounds", type=int, default=3, help="processes per variant, interleaved")
    parser.add_argument("--child", choices=sorted(VARIANTS.values()), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.creates)
        return
    started = time.perf_counter()
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in VARIANTS}
    with otlp_sink() as otlp_url:
        for _ in range(args.rounds):
            for name, variant in VARIANTS.items():
                results[name].append(measure(variant, args.creates, otlp_url))
    print(render(results))
    print(f"\n(python -m benchmarks.otel_cost, {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
