"""What every adapter shares: one requestor scope per library session, and its answers.

An adapter gives another MCP client library's session callbacks that serve the
server's requests through host-receiver's :class:`~host_receiver.receiver.Receiver`.
This module knows no library: the adapters hand it the session object, how to
reach that session's task group, its protocol version and a way to send a
notification through it.

Rules:

- Each library session gets its own requestor scope (``Receiver.attach``)
  under the adapter's server name. The first request the session carries
  starts it, in the session's *own* task group (:func:`task_group_of`): the
  session owns it, and it ends when the session ends, its tasks' work
  cancelled and its tasks deleted, as when host-receiver's own connection
  closes. No thread, no task outside that group. Two sessions built from the
  same options get two scopes, kept apart as two connections are.
- The scope's :class:`SessionPeer` is the receiver's Peer: the server name; the
  session's protocol version (one this project does not know is served as
  the oldest version it knows, the one that allows least); ``notify`` through
  the library; ``notify_soon`` queued, in order, to one sender job in the
  scope, never waiting and never raising.
- :func:`answer` runs a request through ``Requestor.handle_request`` and
  returns the result or the ``RpcError`` to send back: an ``RpcError`` raised
  (alone, or alone in an exception group) is the answer; any other exception
  is logged and answered -32603 "Internal error", as on the own connection.
  Cancellation passes through.
- :func:`without_task` is what a library that declares no task capability
  must do with a ``task`` member: ignore it, as the tasks chapter says.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from weakref import WeakKeyDictionary

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from host_receiver.errors import INTERNAL_ERROR, RpcError
from host_receiver.protocol.versions import LEGACY_VERSIONS, RULES
from host_receiver.receiver import Receiver, Requestor
from host_receiver.sanitize import safe_logger

__all__ = [
    "Send",
    "SessionPeer",
    "SessionScopes",
    "answer",
    "newest_shared",
    "sends_with",
    "served_version",
    "task_group_of",
    "without_task",
]

logger = safe_logger("host_receiver.adapters")

#: Sends one notification through a library session.
Send = Callable[[str, dict[str, Any] | None], Awaitable[None]]

_Queued = tuple[str, dict[str, Any] | None]


@functools.cache  # read on every request: an unknown version is warned about once
def served_version(version: str) -> str:
    """``version`` if this project knows it, else the oldest version it knows (which allows least)."""
    if version in RULES:
        return version
    oldest = LEGACY_VERSIONS[-1]
    logger.warning("protocol version %r is unknown to host-receiver; serving it as %s", version, oldest)
    return oldest


def newest_shared(versions: Iterable[str]) -> str:
    """The newest version this project knows among ``versions`` (a library's supported ones)."""
    offered = set(versions)
    return next((v for v in RULES if v in offered), LEGACY_VERSIONS[-1])


class SessionPeer:
    """One library session as the receiver's :class:`~host_receiver.peer.Peer` (rules above)."""

    def __init__(self, name: str, version: Callable[[], str], send: Send) -> None:
        self._name = name
        self._version = version
        self._send = send
        self._queue_in: MemoryObjectSendStream[_Queued]
        self._queue_out: MemoryObjectReceiveStream[_Queued]
        self._queue_in, self._queue_out = anyio.create_memory_object_stream[_Queued](math.inf)

    @property
    def name(self) -> str:
        return self._name

    @property
    def protocol_version(self) -> str:
        return served_version(self._version())

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        await self._send(method, params)

    def notify_soon(self, method: str, params: dict[str, Any] | None = None) -> None:
        try:
            self._queue_in.send_nowait((method, params))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            logger.debug("%s not sent to %s: the session has ended", method, self._name)

    async def send_queued(self) -> None:
        """Send what :meth:`notify_soon` queued, in order, until the scope ends."""
        async with self._queue_out:
            async for method, params in self._queue_out:
                try:
                    await self._send(method, params)
                except Exception as exc:
                    logger.warning("%s not sent to %s: %r", method, self._name, exc)

    def close(self) -> None:
        """Stop taking notifications (the session has ended)."""
        self._queue_in.close()


@dataclass
class _Scope:
    """A session's requestor scope, once started."""

    ready: anyio.Event = field(default_factory=anyio.Event)
    requestor: Requestor | None = None


def task_group_of(session: Any) -> anyio.abc.TaskGroup | None:
    """The task group a library session runs its receive loop in, once entered.

    mcp 1.x's ``BaseSession`` and mcp 2.x's ``ClientSession`` both keep it as
    ``_task_group``: the adapters' one reliance on a library's private parts.
    """
    group: anyio.abc.TaskGroup | None = getattr(session, "_task_group", None)
    return group


def sends_with(parse: Callable[[dict[str, Any]], Any]) -> Callable[[Any], Send]:
    """``send_of`` for sessions whose ``send_notification`` takes the model ``parse`` makes of one."""

    def send_of(session: Any) -> Send:
        async def send(method: str, params: dict[str, Any] | None) -> None:
            message: dict[str, Any] = {"method": method}
            if params is not None:
                message["params"] = params
            await session.send_notification(parse(message))

        return send

    return send_of


class SessionScopes:
    """The requestor scopes of one adapter's sessions, one per library session (rules above)."""

    def __init__(
        self,
        receiver: Receiver,
        server: str,
        *,
        version_of: Callable[[Any], str],
        send_of: Callable[[Any], Send],
        group_of: Callable[[Any], anyio.abc.TaskGroup | None] = task_group_of,
    ) -> None:
        self.receiver = receiver
        self.server = server
        self._group_of = group_of
        self._version_of = version_of
        self._send_of = send_of
        self._scopes: WeakKeyDictionary[Any, _Scope] = WeakKeyDictionary()

    async def requestor(self, session: Any) -> Requestor:
        """The requestor serving ``session``, its scope started on the first call."""
        scope = self._scopes.get(session)
        if scope is None:
            group = self._group_of(session)
            if group is None:
                raise RuntimeError(f"{type(session).__name__} has no running task group: is it entered?")
            scope = self._scopes[session] = _Scope()
            try:
                await group.start(self._serve, session, scope)
            except BaseException:
                if self._scopes.get(session) is scope:
                    del self._scopes[session]
                raise
            finally:
                scope.ready.set()
        await scope.ready.wait()
        if scope.requestor is None:
            raise RuntimeError(f"the requestor scope of {self.server} has ended")
        return scope.requestor

    async def _serve(
        self,
        session: Any,
        scope: _Scope,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        peer = SessionPeer(self.server, lambda: self._version_of(session), self._send_of(session))
        try:
            # Leaving the scope, by cancellation too, deletes the session's tasks.
            async with self.receiver.attach(peer) as requestor, anyio.create_task_group() as jobs:
                jobs.start_soon(peer.send_queued)
                scope.requestor = requestor
                task_status.started()
                await anyio.sleep_forever()
        finally:
            scope.requestor = None
            peer.close()
            if self._scopes.get(session) is scope:
                del self._scopes[session]


async def answer(
    requestor: Requestor, method: str, params: dict[str, Any] | None
) -> dict[str, Any] | RpcError:
    """The result of one request, or the error to answer it with (rules above)."""
    try:
        return await requestor.handle_request(method, params)
    except Exception as exc:
        only = _sole_rpc_error(exc)
        if only is not None:
            return only
        logger.error("serving %s from %s failed", method, requestor.name, exc_info=exc)
        return RpcError(INTERNAL_ERROR, "Internal error")


def without_task(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` without a ``task`` member (for a session that declares no task capability)."""
    params.pop("task", None)
    return params


def _sole_rpc_error(exc: BaseException) -> RpcError | None:
    """``exc`` if it is an RpcError, or the RpcError alone in (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc if isinstance(exc, RpcError) else None
