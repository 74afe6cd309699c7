"""Multi round-trip requests (2026-07-28): answer a server's ``input_required`` and retry.

Rules (basic-patterns-mrtr.mdx, "Client Requirements"):

- ``tools/call``, ``prompts/get`` and ``resources/read`` may be answered with
  ``resultType: "input_required"``. Each entry of ``inputRequests`` is
  fulfilled through the receiver's own pipeline (the same one a pushed
  request takes: checks, approval, limits, providers, forms), all entries of
  a round at once; then the request is sent again with a new JSON-RPC id, the
  original params, ``inputResponses`` with this round's answers under the
  server's keys, and ``requestState`` exactly as received (never parsed or
  changed; absent when the server sent none). A round with only a
  ``requestState`` is retried at once.
- The first entry that fails (a refused sampling request, a handler error)
  ends the call with :class:`InputRequestFailed` (the same JSON-RPC code),
  cancels the round's other entries, and nothing is sent: the spec says the
  server is not waiting for an answer. A declined or cancelled elicitation
  is an ordinary answer (``{"action": "decline"}``) and goes back.
- A server that asks more than ``max_rounds`` rounds in a row ends the call
  with :class:`InputRoundsExceeded`.
- Cancelling the call cancels the work of its current round.
- ``inputResponses`` and ``requestState`` belong to the retry of this one
  request: nothing is shared between calls in flight.

Fixed caps (docs/limits.md): ``_MESSAGE_LIMIT``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from host_receiver.errors import InputRequestFailed, InputRoundsExceeded, RpcError
from host_receiver.protocol.modern import input_round, result_type

__all__ = [
    "Fulfil",
    "fulfil_all",
    "with_input_rounds",
]

#: Answers one input request (method, params) with its result, or raises RpcError.
Fulfil = Callable[[str, dict[str, Any] | None], Awaitable[dict[str, Any]]]
#: The most characters of an input request's error quoted in :class:`InputRequestFailed`.
_MESSAGE_LIMIT = 500
#: Sends the request once with these params and returns its result.
Send = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


async def fulfil_all(
    requests: dict[str, tuple[str, dict[str, Any] | None]], fulfil: Fulfil
) -> dict[str, dict[str, Any]]:
    """Every request's answer by key, fulfilled side by side; the first failure cancels the rest.

    A round of one request (the usual case) is fulfilled in the caller's task:
    a task group for one task would only add its cost (about 40 µs a round).
    """
    answers: dict[str, dict[str, Any]] = {}

    async def one(key: str, method: str, params: dict[str, Any] | None) -> None:
        try:
            answers[key] = await fulfil(method, params)
        except RpcError as exc:
            raise InputRequestFailed(key, method, exc) from None

    if len(requests) == 1:
        [(key, (method, params))] = requests.items()
        await one(key, method, params)
        return answers
    try:
        async with anyio.create_task_group() as group:
            for key, (method, params) in requests.items():
                group.start_soon(one, key, method, params)
    except BaseExceptionGroup as group_error:
        raise _first(group_error) from None
    return answers


async def with_input_rounds(
    method: str, params: dict[str, Any], send: Send, fulfil: Fulfil, *, max_rounds: int
) -> dict[str, Any]:
    """Send ``method`` and answer its input rounds until a result that is not ``input_required``."""
    attempt = dict(params)
    for retries in range(max_rounds + 1):
        result = await send(attempt)
        if result_type(result) != "input_required":
            return result
        if retries == max_rounds:
            break
        asked = input_round(result)
        attempt = dict(params)
        if asked.requests:
            attempt["inputResponses"] = await fulfil_all(asked.requests, fulfil)
        if asked.request_state is not None:
            attempt["requestState"] = asked.request_state
    times = "time" if max_rounds == 1 else "times"
    raise InputRoundsExceeded(
        f"the server asked for input on {method} more than {max_rounds} {times} in a row "
        f"(the limit of input rounds for one request is {max_rounds})"
    )


def _first(group: BaseExceptionGroup[Any]) -> BaseException:
    """The error that ended a round: an input failure before anything else."""
    leaves: list[BaseException] = []

    def walk(error: BaseException) -> None:
        if isinstance(error, BaseExceptionGroup):
            for inner in error.exceptions:
                walk(inner)
        else:
            leaves.append(error)

    walk(group)
    for leaf in leaves:
        if isinstance(leaf, InputRequestFailed):
            return leaf
    return leaves[0] if leaves else group
