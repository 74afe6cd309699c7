"""Remembered sampling decisions kept in the shared store: :class:`SharedRememberDecisions`.

The twin of :class:`~host_receiver.people.policies.RememberDecisions` for a fleet:
the same hook, the same scopes, rate limit and cap on waiting requests, but an
answer's "session", "always" and "never" are kept in the store
(:meth:`~host_receiver.store.Store.remember`) per server identity and per
subject (the people and teams the host's items are routed to: ``person:NAME``,
``team:NAME``, or ``everyone``), so they apply to every host of the store routed
there.

Rules:

- ``always`` approves and ``never`` refuses on every host with one of the
  subjects; ``session`` (and a refusal for the session) holds only for the host
  session that kept it. A refusal anywhere wins over an approval.
- A refusal for the session is kept as ``never`` bound to the session.
- The store unreachable when a request comes: it is refused with
  :data:`UNREACHABLE`; unreachable when an answer is to be kept: the answer
  stands for this request and is not remembered (logged).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from host_receiver.errors import StoreError
from host_receiver.people.approval import (
    Approve,
    Refuse,
    RequestDecision,
    ResultDecision,
    SamplingApprover,
    SamplingRequestView,
    SamplingResultView,
)
from host_receiver.people.policies import DEFAULT_REMEMBERED_PER_MINUTE, RememberDecisions, Verdict
from host_receiver.sanitize import safe_logger
from host_receiver.store import Store
from host_receiver.store import Verdict as Kept

__all__ = ["EVERYONE", "UNREACHABLE", "SharedRememberDecisions"]

logger = safe_logger("host_receiver.people.shared")

#: Why a request that needs a person is refused while the store cannot be reached.
UNREACHABLE = "the approval store is unreachable"
#: The subject of a host whose items are routed to everyone of the store.
EVERYONE = "everyone"


class SharedRememberDecisions(RememberDecisions):
    """:class:`RememberDecisions` over ``shared`` (module rules); ``subjects`` say whose decisions
    apply (see :func:`subjects`), ``session`` is this host's session."""

    def __init__(
        self,
        inner: SamplingApprover,
        shared: Store,
        *,
        subjects: Sequence[str],
        session: str,
        identify: Callable[[str], str] = str,
        remembered_per_minute: int | None = DEFAULT_REMEMBERED_PER_MINUTE,
    ) -> None:
        super().__init__(inner, identify=identify, remembered_per_minute=remembered_per_minute)
        self.shared = shared
        self.subjects = tuple(subjects) or (EVERYONE,)
        self.session = session

    async def remembered(self, server: str) -> Verdict | None:
        """What the store remembers for ``server`` and these subjects (this session's or lasting)."""
        kept = await self.shared.decisions(self.identify(server), self.subjects)
        verdicts = [d.verdict for d in kept if d.session is None or d.session == self.session]
        if "never" in verdicts:
            return "refuse"
        return "approve" if verdicts else None

    async def forget(self, server: str) -> None:
        """Ask again next time, on every host of these subjects."""
        for subject in self.subjects:
            await self.shared.forget(self.identify(server), subject)

    async def review_request(self, view: SamplingRequestView) -> RequestDecision:
        try:
            return await super().review_request(view)
        except StoreError as exc:
            logger.warning("sampling refused: %s (%s)", UNREACHABLE, exc)
            return Refuse(UNREACHABLE)

    async def review_result(self, view: SamplingResultView) -> ResultDecision:
        try:
            return await super().review_result(view)
        except StoreError as exc:
            logger.warning("sampling result refused: %s (%s)", UNREACHABLE, exc)
            return Refuse(UNREACHABLE)

    async def _remember(self, key: str, decision: RequestDecision) -> None:
        approve = isinstance(decision, Approve)
        kept: Kept | None = None
        session: str | None = None
        if decision.remember == "session":
            kept, session = ("session" if approve else "never"), self.session
        elif decision.remember == "always" and approve:
            kept = "always"
        elif decision.remember in ("always", "never") and not approve:
            kept = "never"
        if kept is None:
            return
        try:
            for subject in self.subjects:
                await self.shared.remember(key, subject, kept, session=session)
        except StoreError as exc:
            logger.warning("the answer holds for this request but is not remembered: %s", exc)


def subjects(names: Sequence[str], people: Sequence[str]) -> tuple[str, ...]:
    """The decision subjects of a host routed to ``names`` (``--for``): ``person:NAME`` for a name
    of ``people``, ``team:NAME`` for any other; ``everyone`` when ``names`` is empty."""
    if not names:
        return (EVERYONE,)
    return tuple(f"person:{n}" if n in people else f"team:{n}" for n in dict.fromkeys(names))
