"""The receiver: what a host serves (handlers, limits, the store), for any number of servers.

Theory of operation. A :class:`Receiver` holds what is configured; each
server connection attaches to it as a :class:`Requestor` scope
(:meth:`Receiver.attach`), given the :class:`~host_receiver.peer.Peer` it
serves. Everything a requestor starts lives in that scope's task group, and
leaving the scope cancels it and deletes its tasks.

Rules:

- What it serves, and the capabilities that follow, are its
  :class:`~host_receiver.receiver._offer.Offer`: handlers for sampling and
  elicitation, and the roots it offers (``roots/list``).
- One store holds every requestor's tasks; each requestor sees only its own
  (its random ``key``).
- Until 0.3 (docs/changelog.md), two 0.1 calls still work or say what to do:
  ``attach(notify, name=..., protocol_version=...)`` serves a plain notify
  function as a :class:`Peer` (default version 2025-11-25, as 0.1 had) with
  a ``DeprecationWarning``; ``Receiver(sampling_limits=...)`` is a
  ``TypeError`` naming where the limits went (the model router).
"""

from __future__ import annotations

import itertools
import secrets
import time
import warnings
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio.abc

from host_receiver._concurrency import background_task_group
from host_receiver.peer import Peer
from host_receiver.protocol.types import Root
from host_receiver.protocol.versions import LATEST_LEGACY_VERSION
from host_receiver.receiver._config import ReceiverConfig
from host_receiver.receiver._methods import TaskMethods
from host_receiver.receiver._offer import ElicitationMode, Offer, RootsFunction, RootsSource
from host_receiver.receiver._requestor import Requestor
from host_receiver.receiver._runner import TaskRunner
from host_receiver.receiver.tasks.cursor import CursorCodec
from host_receiver.receiver.tasks.store import MemoryTaskStore, TaskStore
from host_receiver.receiver.work import (
    ElicitationFunction,
    ElicitationHandler,
    Notify,
    SamplingFunction,
    SamplingHandler,
    as_elicitation_handler,
    as_sampling_handler,
)
from host_receiver.sanitize import safe_logger

__all__ = ["Receiver"]

logger = safe_logger("host_receiver.receiver")


class Receiver:
    """Serves sampling and elicitation requests, as tasks when asked, for any number of servers."""

    def __init__(
        self,
        *,
        sampling: SamplingHandler | SamplingFunction | None = None,
        elicitation: ElicitationHandler | ElicitationFunction | None = None,
        sampling_tools: bool = True,
        elicitation_modes: tuple[ElicitationMode, ...] = ("form", "url"),
        config: ReceiverConfig | None = None,
        store: TaskStore | None = None,
        clock: Callable[[], float] = time.time,
        roots: Sequence[Root | str] | RootsFunction | None = None,
        sampling_limits: None = None,
    ) -> None:
        """``sampling_limits`` was removed in 0.2 and raises ``TypeError`` (module rules)."""
        if sampling_limits is not None:
            raise TypeError(
                "Receiver(sampling_limits=...) was removed in host-receiver 0.2: the limits belong to the "
                "model router, ProviderRegistry(..., limits=SamplingLimits(...)) (or the config file's "
                "[limits] table); see docs/changelog.md"
            )
        self.config = config or ReceiverConfig()
        #: The handlers, and the capabilities derived from them.
        self.offer = Offer(
            sampling=None if sampling is None else as_sampling_handler(sampling),
            elicitation=None if elicitation is None else as_elicitation_handler(elicitation),
            sampling_tools=sampling_tools and sampling is not None,
            elicitation_modes=elicitation_modes if elicitation is not None else (),
            config=self.config,
            roots=_roots(roots),
        )
        self.store: TaskStore = store if store is not None else MemoryTaskStore()
        self.clock = clock
        self._cursors = CursorCodec()
        self._sequence = itertools.count(1)

    def capabilities(self, protocol_version: str = LATEST_LEGACY_VERSION) -> dict[str, Any]:
        """The client capabilities this receiver really serves, for ``protocol_version``."""
        return self.offer.capabilities(protocol_version)

    # --- requestor scopes --------------------------------------------------

    @asynccontextmanager
    async def attach(
        self,
        peer: Peer | Notify,
        *,
        key: str | None = None,
        name: str | None = None,
        protocol_version: str | None = None,
    ) -> AsyncIterator[Requestor]:
        """Serve one server connection; leaving the block ends all of its work and tasks.

        ``key`` identifies the requestor in the store (a fresh random key by
        default). A notify function with ``name`` and ``protocol_version``
        instead of a :class:`Peer` is 0.1's call, deprecated (module rules).
        """
        if not hasattr(peer, "notify_soon"):
            warnings.warn(
                "Receiver.attach(notify, name=..., protocol_version=...) is deprecated and goes in "
                "host-receiver 0.3: pass a Peer (name, protocol_version, notify, notify_soon), "
                "such as a ClientConnection; see docs/changelog.md",
                DeprecationWarning,
                stacklevel=3,
            )
            async with background_task_group() as group:
                legacy = _NotifyPeer(peer, name or "server", protocol_version or LATEST_LEGACY_VERSION, group)
                async with self.attach(legacy, key=key) as requestor:
                    yield requestor
            return
        if name is not None or protocol_version is not None:
            raise TypeError(
                "name and protocol_version are the Peer's own: pass them with a notify function only"
            )
        served = cast(Peer, peer)
        runner: TaskRunner | None = None
        try:
            async with background_task_group() as group:
                runner = TaskRunner(
                    peer=served,
                    key=key or secrets.token_hex(16),
                    config=self.config,
                    store=self.store,
                    clock=self.clock,
                    sequence=self._sequence,
                    group=group,
                )
                methods = TaskMethods(runner, self._cursors, page_size=self.config.page_size)
                group.start_soon(runner.run)
                yield Requestor(self.offer, served, runner, methods)
        finally:
            if runner is not None:  # its work is cancelled by now: delete what is left
                runner.forget_all()


def _roots(roots: Sequence[Root | str] | RootsFunction | None) -> RootsSource | None:
    """Roots as the offer keeps them: a function as it is, URIs as :class:`Root` values."""
    if roots is None or callable(roots):
        return roots
    return tuple(r if isinstance(r, Root) else Root(uri=r) for r in roots)


class _NotifyPeer:
    """0.1's ``attach(notify, name=, protocol_version=)`` as a :class:`Peer` (deprecated, goes in 0.3).

    ``notify_soon`` sends from a task of the attach scope, as 0.1 did; once
    the scope has ended it drops the notification with a debug line.
    """

    def __init__(self, notify: Notify, name: str, protocol_version: str, group: anyio.abc.TaskGroup) -> None:
        self._notify = notify
        self.name = name
        self.protocol_version = protocol_version
        self._group = group

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        await self._notify(method, params)

    def notify_soon(self, method: str, params: dict[str, Any] | None = None) -> None:
        try:
            self._group.start_soon(self._notify_quietly, method, params)
        except RuntimeError:  # the scope has ended: so has the connection
            logger.debug("%s not sent to %s: the connection has ended", method, self.name)

    async def _notify_quietly(self, method: str, params: dict[str, Any] | None) -> None:
        try:
            await self._notify(method, params)
        except Exception as exc:  # the connection may be closing; the task state stands
            logger.debug("could not send %s to %s: %r", method, self.name, exc)
