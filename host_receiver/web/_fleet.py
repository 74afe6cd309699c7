"""The inbox of a host on a shared store: its items wait in the store, any inbox answers them.

:class:`StoreInbox` is a :class:`~host_receiver.web.WebInbox` whose hooks put
each item into the store (:meth:`Store.add_item`: the host's name, the server's
name, title and identity, ``kind`` as :data:`~host_receiver.web._items.Kind`,
the item's ``request`` JSON as the payload, who it is routed to, this host's
session, when it expires) and wait with :meth:`Store.wait_answer`; the answer
(the JSON body of docs/inbox.md) is decoded here, with the item's own decider.

Rules:

- An answer the decider rejects (the store took it, but it is not one this
  request can take) ends the request as a refusal (sampling) or a cancelled
  form or link, with the reason "the answer in the store is not valid: ...".
  An item withdrawn, expired or refused by someone else ends the same way with
  its reason.
- The store unreachable when a request comes: it is refused (sampling) or
  declined (forms, links) at once with the reason :data:`UNREACHABLE`, logged;
  nothing is written. Unreachable while a request waits: it keeps waiting,
  reading again with backoff, until its timeout (no answer is lost).
- Every item carries a lease of three ``lease`` periods, which :meth:`keep_alive`
  renews each period (and runs the store's sweep of other hosts' expired
  sessions); :meth:`end_session` withdraws this host's pending items with
  :data:`SESSION_ENDED` (a clean stop). A killed host's items are withdrawn by
  whoever sweeps after its lease ran out (:meth:`Store.withdraw_expired_sessions`).
- An item asked for a kept call's input round (2026-07-28:
  :func:`~host_receiver.client._input_rounds.answering_input_request`) is linked to
  the call (``call=(call id, key)``) and has no lease: when the host stops or is
  killed it stays pending, and ``calls resume`` reads its answer. So is an item asked for
  an ``inputRequests`` entry of a server task kept in the store (``task:ID``; ``tasks resume``).
- When the host also serves its own page (``serve``), the page shows its items
  and an answer there is written to the store like any other: the first answer
  in the store wins.

Fixed caps (docs/limits.md): ``MAX_BACKOFF``.
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

import anyio

from host_receiver.client._input_rounds import answering_input_request, resumed_by
from host_receiver.errors import (
    AlreadyAnswered,
    InvalidAnswer,
    StoreError,
    StoreUnreachable,
    UnknownItem,
    user_rejected,
)
from host_receiver.people.approval import Refuse
from host_receiver.people.shared import UNREACHABLE
from host_receiver.protocol.types import ElicitResult
from host_receiver.sanitize import safe_id, safe_logger, safe_text
from host_receiver.store import InboxItem, ItemStatus, Store
from host_receiver.web._inbox import _CONTEXT, EXPIRED, Item, _outcome
from host_receiver.web._items import Decision, Kind
from host_receiver.web._webinbox import WebInbox

__all__ = ["SESSION_ENDED", "UNREACHABLE", "StoreInbox", "default_host_name", "unreachable_store"]

logger = safe_logger("host_receiver.web")

#: Why a session-bound item leaves the inbox when its host stops or its lease runs out.
SESSION_ENDED = "the server's session ended"
#: Why an item leaves the inbox when the request it stands for was cancelled.
CANCELLED = "the request was cancelled"
#: The longest pause between two reads of a waiting item while the store is unreachable (seconds).
MAX_BACKOFF = 5.0


def default_host_name() -> str:
    """A host's default name in the store: this machine's name and the process id (``HOST:PID``)."""
    return f"{socket.gethostname()}:{os.getpid()}"


class StoreInbox(WebInbox):
    """A :class:`WebInbox` whose items wait in ``store`` (module rules).

    ``host`` names this process in the store; ``routed_to`` the people and teams who may answer
    (empty: everyone of the store); ``identify`` maps a connection's name to the server identity
    the store keeps; ``session`` is this host process's session; ``lease`` the renewal period.
    """

    def __init__(
        self,
        store: Store,
        *,
        host: str,
        session: str,
        routed_to: Sequence[str] = (),
        identify: Callable[[str], str] = str,
        lease: float = 10.0,
        timeout: float | None = 600.0,
        auth_delay: float = 1.0,
    ) -> None:
        super().__init__(timeout=timeout, auth_delay=auth_delay)
        self.store = store
        self.host = host
        self.session = session
        self.routed_to = tuple(routed_to)
        self.identify = identify
        self.lease = lease
        #: Whose remembered decisions apply to its servers (``people.shared.subjects``).
        self.decision_subjects: tuple[str, ...] = ()
        self._ending = False
        self._answers: dict[str, tuple[dict[str, Any], str]] = {}
        self._answered: dict[str, anyio.Event] = {}

    # --- the session ---------------------------------------------------------------

    async def keep_alive(self) -> None:
        """Each ``lease`` period: renew this session's claim on its items, and withdraw the items of
        sessions whose claim ran out (killed hosts). Runs until cancelled; a store error is logged.
        (Nothing to do when the store was unreachable as the host started.)"""
        if isinstance(self.store, _Unreachable):
            return
        while True:
            try:
                await self.store.renew_session(self.session, 3 * self.lease)
                await self.store.withdraw_expired_sessions(SESSION_ENDED)
            except StoreError as exc:
                logger.warning("could not renew this host's claim on its items: %s", exc)
            await anyio.sleep(self.lease)

    async def end_session(self) -> None:
        """Withdraw this session's pending items with :data:`SESSION_ENDED` (the host stops); once."""
        if self._ending or isinstance(self.store, _Unreachable):
            return
        self._ending = True
        with anyio.CancelScope(shield=True):
            try:
                await self.store.withdraw_session(self.session, SESSION_ENDED)
            except StoreError as exc:
                logger.warning("could not withdraw this host's items from the store: %s", exc)

    # --- answers from this host's own page -----------------------------------------------

    def answer(self, item_id: str, answer: dict[str, Any], *, by: str = "api") -> Item:
        """Check an answer given on this host's own page and hand it to the store (first wins)."""
        item = self._pending.get(item_id)
        if item is None or item_id in self._answers:
            known = item or next((i for i in self._history if i.id == item_id), None)
            if known is None:
                raise UnknownItem(f"no item {safe_id(item_id)}")
            raise AlreadyAnswered(item_id)
        item.decide(answer)  # InvalidAnswer: nothing changes
        self._answers[item_id] = (answer, by)
        self._answered[item_id].set()
        return item

    # --- the wait ------------------------------------------------------------------

    async def _wait(self, item: Item, on_timeout: Decision) -> Decision:
        call = answering_input_request()  # an input round of a kept call: the item outlives us
        try:
            await self.store.add_item(
                item_id=item.id,
                host=self.host,
                server_name=item.server,
                server_title=self._titles.get(item.server),
                server_identity=self.identify(item.server),
                kind=item.kind,
                payload=item.request,
                routed_to=self.routed_to,
                session=self.session,
                expires=item.expires,
                lease_seconds=None if call is not None else 3 * self.lease,
                call=call,
            )
        except StoreError as exc:
            logger.warning(
                "%s from %s: %s (%s)", _ended(item.kind), safe_text(item.server, 120), UNREACHABLE, exc
            )
            return await self._end(item, _unanswered(item.kind, UNREACHABLE), UNREACHABLE, "store")
        self._pending[item.id] = item
        self._answered[item.id] = anyio.Event()
        self._broadcast("added", self.item_json(item))
        try:
            stored = await self._await_store(item)
            if stored is None:  # no answer in time (or none the store could say)
                reason = self.expiry_reason()
                if not await self._close(item.id, "expired", reason):
                    with contextlib.suppress(StoreError):  # answered just before? its answer counts
                        stored = await self.store.item(item.id)
                if stored is None or stored.status == "pending":
                    return await self._end(item, on_timeout, reason, "timeout", outcome=EXPIRED)
            return await self._ending_of(item, stored)
        finally:
            self._answers.pop(item.id, None)
            self._answered.pop(item.id, None)
            if item.outcome is None and call is not None:  # the call stays kept: so does its item
                self._resolve(item, f"left for {resumed_by(call[0])}", "server")
            elif item.outcome is None:  # cancelled: the request, or the session
                if not self._ending:
                    await self._close(item.id, "withdrawn", CANCELLED)
                self._resolve(item, f"withdrawn: {SESSION_ENDED if self._ending else CANCELLED}", "server")

    async def _await_store(self, item: Item) -> InboxItem | None:
        """The item once it is no longer pending in the store (an answer from this host's page is
        written there first); None at the timeout. A store error: read again with backoff."""
        timeout = self.timeout.seconds if self.timeout is not None else math.inf
        with anyio.move_on_after(timeout):
            async with anyio.create_task_group() as group:
                found: list[InboxItem] = []

                async def from_store() -> None:
                    found.append(await self._wait_answer(item.id))
                    group.cancel_scope.cancel()

                async def from_page() -> None:
                    await self._answered[item.id].wait()
                    answer, by = self._answers[item.id]
                    try:
                        await self.store.answer(item.id, answer, by=None, address=f"{self.host} ({by})")
                    except AlreadyAnswered:
                        logger.info("item %s was answered elsewhere first", item.id)
                    except StoreError as exc:
                        logger.warning("the answer on this host's page could not be stored: %s", exc)
                        self._answers.pop(item.id, None)
                        self._answered[item.id] = anyio.Event()
                        await from_page()

                group.start_soon(from_store)
                group.start_soon(from_page)
            return found[0]
        return None

    async def _wait_answer(self, item_id: str) -> InboxItem:
        delay = 0.1
        while True:
            try:
                return await self.store.wait_answer(item_id)
            except StoreError as exc:
                logger.warning("waiting for item %s: %s; reading again in %g s", item_id, exc, delay)
                await anyio.sleep(delay)
                delay = min(delay * 2, MAX_BACKOFF)

    async def _ending_of(self, item: Item, stored: InboxItem) -> Decision:
        """What the server gets for ``item``, which the store says is no longer pending."""
        if stored.status == "answered" and stored.answer is not None:
            try:
                decision = item.decide(stored.answer)
            except InvalidAnswer as exc:
                reason = f"the answer in the store is not valid: {_problems(exc)}"
                return await self._end(item, _unanswered(item.kind, reason, cancel=True), reason, "store")
            item.decision = decision
            by = stored.answered_by or "api"
            self._resolve(item, _outcome(item.kind, decision, by), by)
            return decision
        reason = stored.reason or stored.status
        return await self._end(item, _unanswered(item.kind, reason, cancel=True), reason, "store")

    async def _end(
        self, item: Item, decision: Decision, reason: str, by: str, *, outcome: str | None = None
    ) -> Decision:
        """End ``item`` with ``decision``; the history says ``outcome`` (default: ``reason``). At
        the expiry, as in the one-process inbox, a form or link without a task fails with the
        reason, which no status message would carry (an input round's call ends with it)."""
        item.decision = decision
        self._resolve(item, outcome or reason, by)
        context = _CONTEXT.get()
        if (
            context is not None
            and outcome == EXPIRED
            and context.task_id is None
            and item.kind in ("form", "url")
        ):
            raise user_rejected(reason)
        if context is not None:
            with anyio.CancelScope(shield=True):
                await context.set_outcome_message(reason)
        return decision

    async def _close(self, item_id: str, status: ItemStatus, reason: str) -> bool:
        closed = False
        with anyio.CancelScope(shield=True):
            try:
                closed = await self.store.close_item(item_id, status, reason)
            except StoreError as exc:
                logger.warning("could not close item %s in the store: %s", item_id, exc)
        return closed


class _Unreachable:
    """A stand-in for a store that could not be reached when the host started: every operation
    raises :class:`StoreUnreachable` with ``why``."""

    def __init__(self, why: str) -> None:
        self.why = why

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        async def unreachable(*args: Any, **kwargs: Any) -> Any:
            raise StoreUnreachable(self.why)

        return unreachable


def unreachable_store(why: str) -> Store:
    """A :class:`Store` whose every operation raises :class:`StoreUnreachable` (``why``)."""
    return cast(Store, _Unreachable(why))


def _unanswered(kind: Kind, reason: str, *, cancel: bool = False) -> Decision:
    """A request that got no answer it can take: sampling refused with ``reason``; a form or link
    declined (the store was unreachable) or cancelled (``cancel``)."""
    if kind in ("sampling", "result"):
        return Refuse(reason)
    action: Any = "cancel" if cancel else "decline"
    return ElicitResult(action=action) if kind == "form" else action


def _ended(kind: Kind) -> str:
    return {"sampling": "sampling refused", "result": "sampling result refused"}.get(kind, f"{kind} declined")


def _problems(exc: InvalidAnswer) -> str:
    return "; ".join(f"{safe_text(k, 80)} {safe_text(v, 200)}" for k, v in exc.problems.items())
