"""Where one task-augmented create spends its time, layer by layer, warm, in one process.

``.venv/bin/python -m benchmarks.create_layers [--repeat N] [--number N]``

The latency scenario measures a create end to end over a real pipe; this
tool takes the same request apart. Each step below runs ``--number`` times in
a loop, ``--repeat`` times over, and the best loop's time per call is shown
(the minimum is the figure least disturbed by a busy machine). The steps of
host-receiver are the ones a create goes through, in order:

- ``decode``: the frame's bytes to a JSON-RPC request (``decode_message``);
- ``params``: the params validated into the wire model (pydantic);
- ``checks``: the sampling rules of the protocol (tool turns, sizes);
- ``plan``: the host's acceptance: model choice and the limits (``accept``);
- ``task``: quota, ttl, task id, record, store, expiry and start queue;
- ``encode``: the ``CreateTaskResult`` response to bytes.

``dispatch`` runs params to task as the receiver does (the sum, measured as
one), and ``echo limit`` is everything benchmarks/echo_limit.py does per
request (decode, canned answer, encode). No pipe, no event loop wake-up and
no task work are in these figures: the end-to-end p50 minus their sum is what
the transport and the cold caches cost both receivers.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
import timeit
from collections.abc import Callable, Sequence
from typing import Any

import anyio

from benchmarks import echo_limit
from benchmarks.requestor import create_params, encode
from host_receiver import (
    AutoApprove,
    ElicitationService,
    FillDefaults,
    Receiver,
    ReceiverConfig,
    SamplingService,
    tune_gc_for_serving,
)
from host_receiver.protocol.jsonrpc import Response, decode_message, dumps_message
from host_receiver.protocol.params import parse
from host_receiver.protocol.sampling_rules import check_request
from host_receiver.protocol.types import CreateMessageRequestParams
from host_receiver.testing import RecordingPeer
from providers import build_registry

FRAME = encode(7, "sampling/createMessage", create_params(600_000))


def best_us(step: Callable[[], object], number: int, repeat: int) -> float:
    """The best loop's time per call, in µs."""
    return min(timeit.repeat(step, number=number, repeat=repeat)) / number * 1e6


def echo_step() -> Callable[[], object]:
    """What the echo limit does for one create: decode, answer from the table, encode."""
    echo = echo_limit.Echo.__new__(echo_limit.Echo)
    echo.delay, echo.ids = 0.0, itertools.count()

    def step() -> object:
        message = json.loads(FRAME)
        answer = echo.answer(message["id"], message["method"], message.get("params") or {})
        return echo_limit.reply(message["id"], answer)

    return step


async def measure(number: int, repeat: int) -> dict[str, float]:
    registry = build_registry(provider="echo")
    config = ReceiverConfig(max_active_tasks=10**7, max_stored_tasks=10**7)
    receiver = Receiver(
        sampling=SamplingService(registry, AutoApprove()),
        elicitation=ElicitationService(FillDefaults()),
        config=config,
    )
    request = decode_message(FRAME)
    raw: dict[str, Any] = request.params  # type: ignore[union-attr,assignment]
    params = parse(CreateMessageRequestParams, raw)
    offer = receiver.offer
    assert offer.sampling is not None
    sampling = offer.sampling
    async with registry, receiver.attach(RecordingPeer(name="bench")) as requestor:
        work = sampling.accept(params, "bench")
        runner = requestor._runner
        answer = requestor.dispatch("sampling/createMessage", raw)
        assert isinstance(answer, dict)
        steps: dict[str, Callable[[], object]] = {
            "decode": lambda: decode_message(FRAME),
            "params": lambda: parse(CreateMessageRequestParams, raw),
            "checks": lambda: check_request(params, tools_declared=True),
            "plan": lambda: sampling.accept(params, "bench"),
            "task": lambda: runner.create("sampling/createMessage", params, work),
            "encode": lambda: dumps_message(Response(7, answer)),
            "dispatch": lambda: requestor.dispatch("sampling/createMessage", raw),
            "echo limit": echo_step(),
        }
        return {name: best_us(step, number, repeat) for name, step in steps.items()}


def render(figures: dict[str, float]) -> str:
    layers = ("decode", "params", "checks", "plan", "task", "encode")
    total = sum(figures[name] for name in layers)
    lines = ["| step | µs per create (warm) | share of host-receiver's work |", "|---|---|---|"]
    lines += [f"| {name} | {figures[name]:.2f} | {figures[name] / total:.0%} |" for name in layers]
    lines.append(f"| host-receiver, sum of the steps | {total:.2f} | 100% |")
    lines.append(f"| dispatch (params to task, as one) | {figures['dispatch']:.2f} | - |")
    lines.append(f"| echo limit (decode, canned answer, encode) | {figures['echo limit']:.2f} | - |")
    lines.append(f"| difference | {total - figures['echo limit']:.2f} | - |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.create_layers", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--number", type=int, default=200, help="calls per timed loop")
    parser.add_argument("--repeat", type=int, default=40, help="timed loops per step; the best counts")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    tune_gc_for_serving()  # as both host-receiver receivers of the suite do
    figures = anyio.run(measure, args.number, args.repeat)
    print(render(figures))
    print(f"\n(python -m benchmarks.create_layers, {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
