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
"""

from __future__ import annotations

import itertools
import secrets
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from host_receiver.peer import Peer
from host_receiver.protocol.types import Root
from host_receiver.protocol.versions import LATEST_LEGACY_VERSION
from host_receiver.receiver._config import ReceiverConfig
from host_receiver.receiver._methods import TaskMethods
from host_receiver.receiver._offer import ElicitationMode, Offer, RootsFunction, RootsSource
from host_receiver.receiver._requestor import Requestor
from host_receiver.receiver._runner import TaskRunner
from host_receiver.tasks.cursor import CursorCodec
from host_receiver.tasks.store import MemoryTaskStore, TaskStore
from host_receiver.transports.base import background_task_group
from host_receiver.work import (
    ElicitationFunction,
    ElicitationHandler,
    SamplingFunction,
    SamplingHandler,
    as_elicitation_handler,
    as_sampling_handler,
)

__all__ = ["Receiver"]


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
    ) -> None:
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
    async def attach(self, peer: Peer, *, key: str | None = None) -> AsyncIterator[Requestor]:
        """Serve one server connection; leaving the block ends all of its work and tasks.

        ``key`` identifies the requestor in the store (a fresh random key by default).
        """
        runner: TaskRunner | None = None
        try:
            async with background_task_group() as group:
                runner = TaskRunner(
                    peer=peer,
                    key=key or secrets.token_hex(16),
                    config=self.config,
                    store=self.store,
                    clock=self.clock,
                    sequence=self._sequence,
                    group=group,
                )
                methods = TaskMethods(runner, self._cursors, page_size=self.config.page_size)
                group.start_soon(runner.run)
                yield Requestor(self.offer, peer, runner, methods)
        finally:
            if runner is not None:  # its work is cancelled by now: delete what is left
                runner.forget_all()


def _roots(roots: Sequence[Root | str] | RootsFunction | None) -> RootsSource | None:
    """Roots as the offer keeps them: a function as it is, URIs as :class:`Root` values."""
    if roots is None or callable(roots):
        return roots
    return tuple(r if isinstance(r, Root) else Root(uri=r) for r in roots)
