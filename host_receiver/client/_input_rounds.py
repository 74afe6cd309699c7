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
- With a :class:`RoundKeeper` (a shared store: :mod:`._kept_calls`), each
  round that asks for input is kept before it is fulfilled, and while an
  entry is fulfilled :func:`answering_input_request` names the call and the
  entry's key (so that an inbox item can say which request it answers).

Fixed caps (docs/limits.md): ``_MESSAGE_LIMIT``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from contextvars import ContextVar
from typing import Any, Protocol

import anyio

from host_receiver.errors import InputRequestFailed, InputRoundsExceeded, RpcError
from host_receiver.protocol.modern import InputRound, input_round, result_type

__all__ = [
    "Fulfil",
    "RoundKeeper",
    "answering_input_request",
    "fulfil_all",
    "resumed_by",
    "with_input_rounds",
]

#: Answers one input request (method, params) with its result, or raises RpcError.
Fulfil = Callable[[str, dict[str, Any] | None], Awaitable[dict[str, Any]]]
#: The most characters of an input request's error quoted in :class:`InputRequestFailed`.
_MESSAGE_LIMIT = 500
#: Sends the request once with these params and returns its result.
Send = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
#: The kept call and the key of the input request being fulfilled in this task, if any.
_ANSWERING: ContextVar[tuple[str, str] | None] = ContextVar("host_receiver_answering", default=None)


def answering_input_request() -> tuple[str, str] | None:
    """(call id, key) of the kept call's input request this task is fulfilling, else None. A kept
    server task (tasks extension) is linked as ``task:ID`` (:func:`resumed_by`)."""
    return _ANSWERING.get()


def resumed_by(link: str) -> str:
    """The command that continues the kept call or task ``link`` names (``calls resume ID`` or
    ``tasks resume ID``)."""
    kind, sep, task = link.partition(":")
    return f"tasks resume {task}" if sep and kind == "task" else f"calls resume {link}"


class RoundKeeper(Protocol):
    """Keeps a call's rounds that wait for input (:class:`host_receiver.client._kept_calls.KeptCall`)."""

    call_id: str

    def waiting(self, rounds_used: int, asked: InputRound) -> AbstractAsyncContextManager[None]:
        """Kept (and its lease held) while the round ``asked`` is being fulfilled."""
        ...


async def fulfil_all(
    requests: dict[str, tuple[str, dict[str, Any] | None]], fulfil: Fulfil, *, call_id: str | None = None
) -> dict[str, dict[str, Any]]:
    """Every request's answer by key, fulfilled side by side; the first failure cancels the rest.
    With ``call_id`` (a kept call), :func:`answering_input_request` names it and the key meanwhile.

    A round of one request (the usual case) is fulfilled in the caller's task:
    a task group for one task would only add its cost (about 40 µs a round).
    """
    answers: dict[str, dict[str, Any]] = {}

    async def one(key: str, method: str, params: dict[str, Any] | None) -> None:
        token = _ANSWERING.set(None if call_id is None else (call_id, key))
        try:
            answers[key] = await fulfil(method, params)
        except RpcError as exc:
            raise InputRequestFailed(key, method, exc) from None
        finally:
            _ANSWERING.reset(token)

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
    method: str,
    params: dict[str, Any],
    send: Send,
    fulfil: Fulfil,
    *,
    max_rounds: int,
    keeper: RoundKeeper | None = None,
    first: dict[str, Any] | None = None,
    rounds_used: int = 0,
) -> dict[str, Any]:
    """Send ``method`` and answer its input rounds until a result that is not ``input_required``.

    ``keeper`` keeps each round that asks for input; ``first`` is the first attempt's params
    (a resumed call's: with its answers and ``requestState``), ``rounds_used`` the rounds it took.
    """
    attempt = dict(params) if first is None else first
    for retries in range(rounds_used, max_rounds + 1):
        result = await send(attempt)
        if result_type(result) != "input_required":
            return result
        if retries == max_rounds:
            break
        asked = input_round(result)
        attempt = dict(params)
        if asked.requests:
            if keeper is None:
                attempt["inputResponses"] = await fulfil_all(asked.requests, fulfil)
            else:
                async with keeper.waiting(retries + 1, asked):
                    attempt["inputResponses"] = await fulfil_all(
                        asked.requests, fulfil, call_id=keeper.call_id
                    )
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
