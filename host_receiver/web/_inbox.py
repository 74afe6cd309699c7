"""The inbox itself: the hooks put items in, answers take them out, listeners hear both.

(About 520 lines, one idea: each hook call is one item that ends once, by an
answer, its expiry or its withdrawal, and everyone who listens hears of it.)

:class:`Inbox` is what :class:`~host_receiver.web.WebInbox` serves.

Rules:

- Each hook call is one pending item; it waits until the first answer
  (:meth:`Inbox.answer`, synchronous: on one event loop the first wins and
  a later one is :class:`AlreadyAnswered`), until ``timeout`` passes (the
  item ends with the outcome ``expired``, never ``refused``, and the server is
  told "no answer within 10m: expired, nobody refused", the duration as given:
  sampling and its result are refused with it; a form or link of a task is
  cancelled with it as the task's status message; a form or link without a
  task, a 2026-07-28 input round among them, ends with it as the error -1, so
  the call ends), or until its work is cancelled (the item is withdrawn).
  Every end is one history entry with its outcome, when, and the audit line
  written to ``host_receiver.audit``.
- For work run through :meth:`Inbox.watch` (the ready handlers are), the
  task's ``statusMessage`` reads "waiting for an answer in the web inbox"
  wherever the services would say "Waiting for the user to ..." (set as the
  work starts, so a server's first poll sees it); at expiry it is the reason,
  which a form's or link's task keeps once it completes (``cancel``).
- With a notifier (:class:`~host_receiver.notify.Notifier`), each item's
  events become notices: ``item.waiting`` as it comes, ``item.reminder``
  every ``remind_every`` seconds while it waits, ``item.escalated`` (to the
  escalation channels) once after ``escalate_after``, then ``item.expired``
  or ``item.answered``; the link is ``{public_url or origin}/items/{id}``.
  Queuing never waits: a request is never held up by a channel.
- Listeners (:meth:`Inbox.events`) get a snapshot first, then every item
  added or resolved, in order; one that falls behind by a full buffer is
  dropped (its stream ends; a page reconnects and gets a new snapshot).
  :meth:`Inbox.close` ends every stream for good (:attr:`Inbox.closed`).

Fixed caps (docs/limits.md): ``HISTORY``, ``BUFFER``.
"""

from __future__ import annotations

import math
import secrets
import socket
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, Protocol, TypeVar

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from host_receiver._concurrency import background_task_group
from host_receiver.errors import AlreadyAnswered, UnknownItem, user_rejected
from host_receiver.handlers import ElicitationService, ModelRouter, SamplingService
from host_receiver.notify import Duration, Notice, Notifier
from host_receiver.notify import Event as NoticeEvent
from host_receiver.people.approval import (
    Approve,
    FormView,
    LinkDone,
    Refuse,
    RequestDecision,
    ResultDecision,
    SamplingRequestView,
    SamplingResultView,
    Send,
    UrlAnswer,
    UrlView,
)
from host_receiver.people.policies import ModelAllowList, RememberDecisions
from host_receiver.protocol.types import ElicitResult
from host_receiver.receiver import _audit
from host_receiver.receiver.work import ElicitationHandler, SamplingHandler, WorkContext
from host_receiver.sanitize import safe_id, safe_text
from host_receiver.web import _items
from host_receiver.web._items import Decision, Kind

#: The ``statusMessage`` of a task whose request waits in the inbox.
WAITING = "waiting for an answer in the web inbox"
#: The outcome of an item nobody answered in time (``refused`` is a person's answer).
EXPIRED = "expired"
#: How the sampling and elicitation services' status messages begin while they ask a person.
_PERSON_ASKED = "Waiting for the user"
#: How many answered items the history keeps.
HISTORY = 100
#: Events a listener may fall behind by before it is dropped.
BUFFER = 256

_CONTEXT: ContextVar[WorkContext | None] = ContextVar("host_receiver_web_context", default=None)
_P = TypeVar("_P", contravariant=True)
_R = TypeVar("_R")
_R_co = TypeVar("_R_co", covariant=True)
Event = tuple[str, dict[str, Any]]


@dataclass(eq=False)
class Item:
    """One request waiting for, or answered by, a person."""

    id: str
    kind: Kind
    server: str
    task_id: str | None
    request: dict[str, Any]
    decide: Callable[[dict[str, Any]], Decision]
    created: float
    expires: float | None
    decision: Decision | None = None
    outcome: str | None = None
    answered: float | None = None
    audit: str | None = None
    #: Who ended it: ``page``, ``api`` (an answer), ``timeout``, or ``server`` (withdrawn).
    by: str | None = None
    done: anyio.Event = field(default_factory=anyio.Event)


class _Accepts(Protocol[_P, _R_co]):
    def accept(self, params: _P, server: str) -> Callable[[WorkContext], Awaitable[_R_co]]: ...


class _InboxContext(WorkContext):
    """A work context whose "Waiting for the user to ..." status (the services say so just
    before they ask) reads :data:`WAITING`: the first poll after the task starts sees it too."""

    __slots__ = ()

    @classmethod
    def of(cls, context: WorkContext) -> _InboxContext:
        watched = cls.__new__(cls)
        for name in WorkContext.__slots__:
            setattr(watched, name, getattr(context, name))
        return watched

    async def set_status_message(self, message: str) -> None:
        await super().set_status_message(WAITING if message.startswith(_PERSON_ASKED) else message)


class _Watched(Generic[_P, _R]):
    """A handler whose work the inbox can tell the requestor about (its status message)."""

    def __init__(self, inner: _Accepts[_P, _R]) -> None:
        self.inner = inner

    def accept(self, params: _P, server: str) -> Callable[[WorkContext], Awaitable[_R]]:
        work = self.inner.accept(params, server)

        async def watched(context: WorkContext) -> _R:
            context = _InboxContext.of(context)
            token = _CONTEXT.set(context)
            try:
                return await work(context)
            finally:
                _CONTEXT.reset(token)

        return watched


class Inbox:
    """The hooks of a person who answers from a web page: the items, the answers, the listeners."""

    def __init__(
        self,
        *,
        timeout: float | Duration | None,
        auth_delay: float,
        notifier: Notifier | None = None,
        notify_content: bool = False,
        remind_every: float | None = None,
        escalate_after: float | None = None,
        host: str | None = None,
        signed_links: bool = False,
        link_ttl: float = 3600.0,
    ) -> None:
        #: How long an item waits for an answer (None: until it is answered or withdrawn).
        self.timeout = Duration.of(timeout) if isinstance(timeout, int | float) else timeout
        #: Where notices of items go (None: nowhere); the host runs it (``async with notifier``).
        self.notifier = notifier
        #: Whether a notice holds the request's content (cut, escaped), not just who asks for what.
        self.notify_content = notify_content
        #: Seconds between reminders of a pending item, and before it is escalated (None: never).
        self.remind_every = remind_every
        self.escalate_after = escalate_after
        #: The host's name in notices.
        self.host = host if host is not None else socket.gethostname()
        #: The inbox's address in links (None: :attr:`origin`, once served).
        self.public_url: str | None = None
        #: Whether a link signs its holder in for its one item (for ``link_ttl`` seconds, until answered).
        self.signed_links = signed_links
        self.link_ttl = link_ttl
        self._link_tokens: dict[str, tuple[str, float]] = {}  # token -> (item id, good until)
        self._item_links: dict[str, str] = {}  # item id -> its token
        #: How long a request with a wrong or missing credential waits before its 401.
        self.auth_delay = auth_delay
        #: The secret of the inbox's URL and of ``Authorization: Bearer``.
        self.token = secrets.token_urlsafe(32)
        self._pending: dict[str, Item] = {}
        self._history: deque[Item] = deque(maxlen=HISTORY)
        self._titles: dict[str, str] = {}
        self._listeners: set[MemoryObjectSendStream[Event]] = set()
        self._closed = False
        #: Set when it serves itself: where it listens (``http(s)://host:port``).
        self.origin: str | None = None
        #: Set when it serves itself: the ``Host`` headers taken (None: any, the mounting app checks).
        self.allowed_hosts: set[str] | None = None

    # --- for a host ---------------------------------------------------------------

    def sampling(self, router: ModelRouter) -> SamplingHandler:
        """A sampling handler asking here, remembering answers per server and keeping to allow-lists."""
        return self.watch(SamplingService(router, RememberDecisions(ModelAllowList(self))))

    def elicitation(self) -> ElicitationHandler:
        """An elicitation handler asking here (a consented link is opened by the person's browser)."""
        return self.watch(ElicitationService(self, opener=self.opens_nothing))

    @staticmethod
    def opens_nothing(url: str) -> None:
        """The opener of the inbox's elicitation: the person opens a link from the page, the host
        nothing (None: the service says so instead of claiming the host opened it)."""
        return None

    def watch(self, handler: _Accepts[_P, _R]) -> _Watched[_P, _R]:
        """``handler``, whose task says "waiting for an answer in the web inbox" while it asks here."""
        return _Watched(handler)

    def describe_server(self, server: str, title: str) -> None:
        """Show ``title`` (the server's own name or title) with the host's name for ``server``."""
        self._titles[server] = title
        self._broadcast("snapshot", self.state())

    # --- the hooks ----------------------------------------------------------------

    async def review_request(self, view: SamplingRequestView) -> RequestDecision:
        request = _items.sampling_request(view)
        item = self._item(
            "sampling", view.server, view.task_id, request, _decider(_items.sampling_decision, view)
        )
        decision = await self._wait(item, Refuse(self.expiry_reason()))
        assert isinstance(decision, Approve | Refuse)
        return decision

    async def review_result(self, view: SamplingResultView) -> ResultDecision:
        request = _items.sampling_result(view)
        item = self._item(
            "result", view.server, view.task_id, request, _decider(_items.result_decision, view)
        )
        decision = await self._wait(item, Refuse(self.expiry_reason()))
        assert isinstance(decision, Send | Refuse)
        return decision

    async def fill_form(self, view: FormView) -> ElicitResult:
        item = self._item(
            "form", view.server, view.task_id, _items.form(view), _decider(_items.form_answer, view)
        )
        decision = await self._wait(item, ElicitResult(action="cancel"))
        assert isinstance(decision, ElicitResult)
        return decision

    async def consent_url(self, view: UrlView) -> UrlAnswer:
        item = self._item("url", view.server, view.task_id, _items.url(view), _items.url_answer)
        decision = await self._wait(item, "cancel")
        assert decision in ("accept", "decline", "cancel")
        return decision

    async def link_done(self, view: UrlView) -> LinkDone:
        """A request waits for the link ``view`` (opened): a "Link to finish" card, Done or Give up.
        Withdrawn when the server says the link is complete first."""
        item = self._item("done", view.server, view.task_id, _items.url(view), _items.link_done_answer)
        decision = await self._wait(item, "cancel")
        assert decision in ("done", "cancel")
        return decision

    # --- answers --------------------------------------------------------------------

    def answer(self, item_id: str, answer: dict[str, Any], *, by: str = "api") -> Item:
        """Answer a pending item; raises UnknownItem, AlreadyAnswered or InvalidAnswer (nothing changes)."""
        item = self._pending.get(item_id)
        if item is None:
            known = next((i for i in self._history if i.id == item_id), None)
            if known is None:
                raise UnknownItem(f"no item {safe_id(item_id)}")
            raise AlreadyAnswered(item_id)
        decision = item.decide(answer)
        item.decision = decision
        self._resolve(item, _outcome(item.kind, decision, by), by)
        return item

    def get(self, item_id: str) -> Item:
        item = self._pending.get(item_id) or next((i for i in self._history if i.id == item_id), None)
        if item is None:
            raise UnknownItem(f"no item {safe_id(item_id)}")
        return item

    def state(self) -> dict[str, Any]:
        """Every pending item (oldest first) and the history (newest first), as the API shows them."""
        return {
            "pending": [self.item_json(i) for i in self._pending.values()],
            "history": [self.item_json(i) for i in reversed(self._history)],
        }

    def item_json(self, item: Item) -> dict[str, Any]:
        title = self._titles.get(item.server)
        return {
            "id": item.id,
            "kind": item.kind,
            "server": _items.label(item.server),
            "serverTitle": _items.label(title) if title else None,
            "taskId": _items.label(item.task_id) if item.task_id else None,
            "created": _iso(item.created),
            "expires": _iso(item.expires) if item.expires is not None else None,
            "status": "pending" if item.outcome is None else "resolved",
            "outcome": item.outcome,
            "answered": _iso(item.answered) if item.answered is not None else None,
            "audit": item.audit,
            "answeredBy": item.by,
            "request": item.request,
        }

    @asynccontextmanager
    async def events(self) -> AsyncIterator[MemoryObjectReceiveStream[Event]]:
        """A listener's stream: a snapshot, then ``added`` and ``resolved`` items (module rules)."""
        send, receive = anyio.create_memory_object_stream[Event](BUFFER)
        send.send_nowait(("snapshot", self.state()))
        if self._closed:
            send.close()
        else:
            self._listeners.add(send)
        try:
            async with receive:
                yield receive
        finally:
            self._listeners.discard(send)
            send.close()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` ended the listeners' streams (the server is stopping)."""
        return self._closed

    def close(self) -> None:
        """End every listener's stream (the server is stopping)."""
        self._closed = True
        for listener in self._listeners:
            listener.close()
        self._listeners.clear()

    # --- inside ---------------------------------------------------------------------

    def _item(
        self,
        kind: Kind,
        server: str,
        task_id: str | None,
        request: dict[str, Any],
        decide: Callable[[dict[str, Any]], Decision],
    ) -> Item:
        now = time.time()
        expires = now + self.timeout.seconds if self.timeout is not None else None
        return Item(secrets.token_urlsafe(9), kind, server, task_id, request, decide, now, expires)

    def expiry_reason(self) -> str:
        """What the server is told when nobody answers in time: "no answer within 10m: expired,
        nobody refused" (the duration as given)."""
        return f"no answer within {self.timeout}: {EXPIRED}, nobody refused"

    def link(self, item_id: str) -> str | None:
        """The address of one item's page, or None when the inbox has none yet: sign-in needed, or
        with ``signed_links`` a token in its fragment that signs in for that item alone."""
        base = self.public_url or self.origin
        if not base:
            return None
        address = f"{base.rstrip('/')}/items/{item_id}"
        if not self.signed_links or item_id not in self._pending:
            return address
        token = self._item_links.get(item_id)
        if token is None:
            token = self._item_links[item_id] = secrets.token_urlsafe(32)
            self._link_tokens[token] = (item_id, time.time() + self.link_ttl)
        return f"{address}#link={token}"

    def redeem_link(self, item_id: str, token: str) -> float | None:
        """Until when a session made with link ``token`` may see item ``item_id``; None when the
        token is not that pending item's, or its time is up."""
        held = self._link_tokens.get(token)
        if held is None or held[0] != item_id or item_id not in self._pending:
            return None
        if time.time() >= held[1]:
            self._forget_link(item_id)
            return None
        return held[1]

    def _forget_link(self, item_id: str) -> None:
        token = self._item_links.pop(item_id, None)
        if token is not None:
            self._link_tokens.pop(token, None)

    def _notify(self, item: Item, event: NoticeEvent, *, number: int = 0, escalate: bool = False) -> None:
        if self.notifier is None:
            return
        title = self._titles.get(item.server)
        server = _items.label(item.server) + (f" ({_items.label(title)})" if title else "")
        content = _items.excerpt(item.kind, item.request) if self.notify_content else None
        notice = Notice(
            event, item.id, item.kind, server, _items.label(self.host), item.created, item.expires,
            self.link(item.id), content, number or None, time.time(),
        )  # fmt: skip
        self.notifier.notify(notice, escalate=escalate)

    async def _follow_up(self, item: Item) -> None:
        """Remind every ``remind_every`` seconds and escalate once after ``escalate_after``."""
        start = anyio.current_time()
        remind, escalate = self.remind_every, self.escalate_after
        next_reminder = start + remind if remind else math.inf
        escalation = start + escalate if escalate else math.inf
        number = 0
        while next_reminder < math.inf or escalation < math.inf:
            due = min(next_reminder, escalation)
            await anyio.sleep(max(0.0, due - anyio.current_time()))
            if due == escalation:
                self._notify(item, "item.escalated", escalate=True)
                escalation = math.inf
            else:
                number += 1
                self._notify(item, "item.reminder", number=number)
                next_reminder += remind or math.inf

    async def _wait(self, item: Item, on_timeout: Decision) -> Decision:
        self._pending[item.id] = item
        self._broadcast("added", self.item_json(item))
        self._notify(item, "item.waiting")
        async with background_task_group() as follow:
            if self.notifier is not None and (self.remind_every or self.escalate_after):
                follow.start_soon(self._follow_up, item)
            return await self._wait_for_answer(item, on_timeout)

    async def _wait_for_answer(self, item: Item, on_timeout: Decision) -> Decision:
        context = _CONTEXT.get()
        try:
            with anyio.move_on_after(self.timeout.seconds if self.timeout is not None else math.inf):
                await item.done.wait()
            if item.decision is None:
                item.decision = on_timeout
                self._resolve(item, EXPIRED, "timeout")
                reason = self.expiry_reason()
                if context is not None and context.task_id is not None:
                    await context.set_outcome_message(reason)
                elif context is not None and item.kind in ("form", "url"):
                    # No task keeps a status message: the error carries the reason (an input
                    # round's call ends with it).
                    raise user_rejected(reason)
        finally:
            if item.outcome is None:
                self._resolve(item, "withdrawn: the request was cancelled", "server")
        return item.decision

    def _resolve(self, item: Item, outcome: str, by: str) -> None:
        self._pending.pop(item.id, None)
        self._forget_link(item.id)  # a signed link stops working once its item has ended
        item.outcome, item.answered, item.by = outcome, time.time(), by
        task = item.task_id or "-"
        item.audit = (
            f"inbox answered requestor={safe_text(item.server, 120)} task={safe_text(task, 120)} "
            f"item={item.id} kind={item.kind} by={by} outcome={outcome}"
        )
        _audit.audit.info("%s", item.audit)
        self._history.append(item)
        item.done.set()
        self._broadcast("resolved", self.item_json(item))
        if by in ("page", "api", "link"):
            self._notify(item, "item.answered")
        elif by == "timeout":
            self._notify(item, "item.expired")

    def _broadcast(self, event: str, data: dict[str, Any]) -> None:
        for listener in list(self._listeners):
            try:
                listener.send_nowait((event, data))
            except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._listeners.discard(listener)
                listener.close()


_V = TypeVar("_V")


def _decider(
    decide: Callable[[_V, dict[str, Any]], Decision], view: _V
) -> Callable[[dict[str, Any]], Decision]:
    """What an answer to the item of ``view`` means."""
    return lambda answer: decide(view, answer)


def _outcome(kind: Kind, decision: Decision, by: str) -> str:
    """The history's word for ``decision``, answered ``by`` the page or the API: a link is
    "opened" only when the page's Open (a link the person's browser follows) answered it."""
    if isinstance(decision, Approve):
        scope = {"once": "approved once", "session": "approved for this session", "always": "always approved"}
        edited = any(x is not None for x in (decision.system_prompt, decision.messages, decision.max_tokens))
        return scope.get(decision.remember, "approved") + (", edited" if edited else "")
    if isinstance(decision, Refuse):
        return "refused from now on" if decision.remember == "never" else "refused"
    if isinstance(decision, Send):
        return "sent" if decision.result is None else "sent, edited"
    if kind == "done":
        return "done" if decision == "done" else "given up"
    action = decision.action if isinstance(decision, ElicitResult) else decision
    accepted = "opened" if kind == "url" and by == "page" else "accepted"
    return {"accept": accepted, "decline": "declined", "cancel": "cancelled"}[action]


def _iso(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
