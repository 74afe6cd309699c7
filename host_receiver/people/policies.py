"""Ready sampling policies that wrap another approver: memory, model allow-lists, rate limits.

(About 490 lines, one idea: ready approvers that wrap another, and the server identities
their memory is kept under.)

Each policy is a :class:`~host_receiver.people.approval.SamplingApprover` around an
inner one (a person at a terminal, another policy), so they stack::

    approver = RateLimit(RememberDecisions(ModelAllowList(TerminalApprover(console))),
                         RateLimits(requests_per_minute=10, tokens_per_hour=50_000))

Rules:

- :class:`RememberDecisions` remembers an answer per server for the scope the
  person chose (``Approve``/``Refuse`` ``remember=``):

  ============  =====================  ==================================
  scope         Approve                Refuse
  ============  =====================  ==================================
  ``once``      ask again next time    ask again next time
  ``session``   approve until exit     refuse until exit
  ``always``    approve, saved         refuse, saved
  ``never``     (as ``once``)          refuse, saved ("never allow")
  ============  =====================  ==================================

  A remembered approval also sends results without review; a remembered
  refusal answers -1 at once. Saved decisions live in ``decisions.json`` in
  host-receiver's directory of the user's config directory
  (:func:`host_receiver.paths.user_config_dir`), or where ``$HOST_RECEIVER_DECISIONS``
  or the ``path`` argument says. A decision is kept under the server's
  identity, which ``identify`` makes of the connection's name (by default the
  name itself): the CLI gives the server's real identity, never a file name
  (:func:`stdio_identity`: the resolved executable, every argument, the
  working directory and the SHA-256 of the file it runs; :func:`http_identity`:
  the URL's origin, path and query), so a decision made for one server never
  applies to another, nor to the same command once the file it runs changed:
  that asks again, with one warning saying the server changed. A file written
  under older keys (version 1: bare server names; version 2: no query, no
  hash) is dropped, with one warning. A decisions file that is not the user's,
  or that group or others may use, is not read (nor written): every request is
  asked, with a warning giving the ``chmod`` that fixes it
  (:func:`~host_receiver.paths.private_file_problem`).
- :class:`ModelAllowList` refuses (-1) a request whose chosen or edited model
  is not on the server's allow-list (by default the one the router reports).
- :class:`RateLimit` counts per server, before anyone is asked: requests in
  the last minute, and tokens in the last hour (a request costs its estimated
  input tokens plus the ``maxTokens`` finally granted, an upper bound of what
  the model may produce). Over a limit it answers at once with JSON-RPC
  -32600, the code the receiver uses for its other policy limits; the message
  names the limit and when to retry, ``data`` carries ``limit``, ``max``
  and ``retryAfterSeconds``. Nothing is queued.
- Back-pressure in :class:`RememberDecisions`: approvals by a remembered
  answer (session or always) are rate-limited per server,
  ``remembered_per_minute`` (default :data:`DEFAULT_REMEMBERED_PER_MINUTE`;
  None: no limit), refused over it as :class:`RateLimit` refuses. Requests
  waiting for a person (asked now, or queued behind the server's question
  being asked) are capped per server at ``max_waiting`` (default
  :data:`~host_receiver.people.approval.DEFAULT_MAX_WAITING`); one more is refused at
  once with -32600 saying so (:func:`~host_receiver.people.approval.too_many_waiting`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
import time
from collections import deque
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import anyio

from host_receiver._identity import http_identity as http_identity  # its home before 0.3
from host_receiver._identity import stdio_identity as stdio_identity  # its home before 0.3
from host_receiver._identity import unhashed
from host_receiver.errors import INVALID_REQUEST, RpcError
from host_receiver.paths import private_file_problem, user_config_dir
from host_receiver.people.approval import (
    DEFAULT_MAX_WAITING,
    Approve,
    Refuse,
    RequestDecision,
    ResultDecision,
    SamplingApprover,
    SamplingRequestView,
    SamplingResultView,
    Send,
    too_many_waiting,
)
from host_receiver.sanitize import safe_logger
from providers import estimate_input_tokens

logger = safe_logger("host_receiver.people.policies")

DECISIONS_ENV = "HOST_RECEIVER_DECISIONS"
#: Sampling requests per minute one server may have approved by a remembered answer.
DEFAULT_REMEMBERED_PER_MINUTE = 60
Verdict = Literal["approve", "refuse"]


def decisions_path(path: str | os.PathLike[str] | None = None) -> Path:
    """Where saved decisions live: ``path``, else ``$HOST_RECEIVER_DECISIONS``, else the config dir."""
    if path is not None:
        return Path(path)
    if os.environ.get(DECISIONS_ENV):
        return Path(os.environ[DECISIONS_ENV])
    return user_config_dir() / "decisions.json"


def decision_id(identity: str) -> str:
    """The short id ``host-receiver decisions`` shows for a saved decision."""
    return hashlib.sha256(identity.encode()).hexdigest()[:8]


class DecisionStore:
    """The "always" and "never" answers per server identity, in a small JSON file.

    The file is read once, on first use; every change re-reads it and writes it
    back atomically (temporary file, then rename), off the event loop. An
    unreadable file counts as empty and is logged, never fatal; a file of an
    older format (keys that were bare server names, or identities without a
    query or a hash) is replaced by an empty one, with one warning. A file that
    is not the user's own, or that group or others may use, counts as empty and
    is never written (:meth:`problem`).
    """

    VERSION = 3

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = decisions_path(path)
        self._cache: dict[str, Verdict] | None = None

    async def get(self, server: str) -> Verdict | None:
        """The saved answer for ``server`` (an identity), if any."""
        return (await self._all()).get(server)

    async def changed(self, server: str) -> str | None:
        """The saved identity of the same command as ``server`` whose file has changed since, if any."""
        base = unhashed(server)
        if base == server:
            return None
        return next((k for k in await self._all() if k != server and unhashed(k) == base), None)

    async def set(self, server: str, verdict: Verdict | None) -> None:
        """Save ``verdict`` for ``server`` (None forgets it); a decision saved for the same command
        with another file hash is replaced."""
        self._cache = await anyio.to_thread.run_sync(self._update, server, verdict)

    async def _all(self) -> dict[str, Verdict]:
        if self._cache is None:
            self._cache = await anyio.to_thread.run_sync(self.saved)
        return self._cache

    def problem(self) -> str | None:
        """Why the file must not be used (not the user's, or open to group or others), if so (blocking)."""
        return private_file_problem(self.path, "the decisions file")

    def saved(self) -> dict[str, Verdict]:
        """Every saved decision, by identity (blocking: read from the file now)."""
        problem = self.problem()
        if problem is not None:
            logger.warning("%s; until then every sampling request is asked", problem)
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, RecursionError) as exc:
            logger.warning("ignoring unreadable decisions file %s: %s", self.path, type(exc).__name__)
            return {}
        servers = data.get("servers") if isinstance(data, dict) else None
        if not isinstance(servers, dict):
            logger.warning("ignoring decisions file %s: no 'servers' object", self.path)
            return {}
        if data.get("version") != self.VERSION:
            why = (
                "they were kept by server name, which another server can share"
                if data.get("version") == 1
                else "they were kept without a URL's query or the hash of the file a server runs, "
                "so they held for another tenant or a rewritten server"
            )
            logger.warning(
                "dropped %d saved sampling decision(s) of %s: %s; you will be asked again",
                len(servers),
                self.path,
                why,
            )
            self._write({})
            return {}
        return {k: v for k, v in servers.items() if isinstance(k, str) and v in ("approve", "refuse")}

    def forget(self, identities: Collection[str]) -> dict[str, Verdict]:
        """Remove the saved decisions of ``identities`` (blocking); the ones left."""
        current = {k: v for k, v in self.saved().items() if k not in identities}
        self._write(current)
        self._cache = current
        return current

    def _update(self, server: str, verdict: Verdict | None) -> dict[str, Verdict]:
        current = self.saved()
        base = unhashed(server)
        if base != server:  # the same command with a file since changed: this one replaces it
            current = {k: v for k, v in current.items() if k == server or unhashed(k) != base}
        if verdict is None:
            current.pop(server, None)
        else:
            current[server] = verdict
        self._write(current)
        return current

    def _write(self, decisions: Mapping[str, Verdict]) -> None:
        problem = self.problem()
        if problem is not None:
            logger.warning("not saving the sampling decision: %s", problem)
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"version": self.VERSION, "servers": decisions}, indent=2, sort_keys=True)
        fd, tmp = tempfile.mkstemp(prefix=".decisions-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                file.write(text + "\n")
            os.replace(tmp, self.path)
        except BaseException:
            os.unlink(tmp)
            raise


class RememberDecisions:
    """Asks ``inner`` only when no remembered answer applies (scopes in the module docstring).

    ``identify`` maps a connection's name to the identity decisions are kept
    under (default: the name); ``max_waiting`` caps one server's requests
    waiting for a person, ``remembered_per_minute`` its requests approved by a
    remembered answer (None: no cap, no limit).
    """

    def __init__(
        self,
        inner: SamplingApprover,
        store: DecisionStore | None = None,
        *,
        identify: Callable[[str], str] = str,
        max_waiting: int | None = DEFAULT_MAX_WAITING,
        remembered_per_minute: int | None = DEFAULT_REMEMBERED_PER_MINUTE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.inner = inner
        self.store = store if store is not None else DecisionStore()
        self.identify = identify
        self.max_waiting = max_waiting
        self._session: dict[str, Verdict] = {}
        self._locks: dict[str, anyio.Lock] = {}
        self._told_changed: set[str] = set()
        self._waiting: dict[str, int] = {}
        self._remembered_rate = _RememberedRate(
            _Approves(), RateLimits(requests_per_minute=remembered_per_minute), clock=clock
        )

    async def remembered(self, server: str) -> Verdict | None:
        """What is remembered for ``server``: this session's answer first, then the saved one."""
        key = self.identify(server)
        verdict = self._session.get(key) or await self.store.get(key)
        if verdict is None and key not in self._told_changed:
            before = await self.store.changed(key)
            if before is not None:
                self._told_changed.add(key)
                logger.warning(
                    "the server %s changed since its saved decision (the file it runs is not the same: "
                    "%s, then %s): asking again",
                    unhashed(key),
                    before.rpartition(" [")[2].rstrip("]"),
                    key.rpartition(" [")[2].rstrip("]"),
                )
        return verdict

    async def forget(self, server: str) -> None:
        """Ask again next time, in this session and later ones."""
        key = self.identify(server)
        self._session.pop(key, None)
        await self.store.set(key, None)

    async def review_request(self, view: SamplingRequestView) -> RequestDecision:
        key = self.identify(view.server)
        verdict = await self.remembered(view.server)
        if verdict is None:
            waiting = self._waiting.get(key, 0)
            if self.max_waiting is not None and waiting >= self.max_waiting:
                raise too_many_waiting(view.server, "sampling requests", self.max_waiting)
            self._waiting[key] = waiting + 1
            try:
                # One question per server at a time, so that a second request waits for
                # the answer to the first and then obeys it instead of asking again.
                async with self._locks.setdefault(key, anyio.Lock()):
                    verdict = await self.remembered(view.server)
                    if verdict is None:
                        decision = await self.inner.review_request(view)
                        await self._remember(key, decision)
                        return decision
            finally:
                self._waiting[key] -= 1
                if not self._waiting[key]:
                    del self._waiting[key]
        if verdict == "approve":
            return await self._remembered_rate.review_request(view)
        return Refuse(f"Sampling requests from {view.server!r} are refused (remembered decision)")

    async def review_result(self, view: SamplingResultView) -> ResultDecision:
        if await self.remembered(view.server) == "approve":
            return Send()
        return await self.inner.review_result(view)

    async def _remember(self, key: str, decision: RequestDecision) -> None:
        verdict: Verdict = "approve" if isinstance(decision, Approve) else "refuse"
        scope = decision.remember
        if scope == "session":
            self._session[key] = verdict
        elif scope == "always" or (scope == "never" and verdict == "refuse"):
            self._session[key] = verdict
            await self.store.set(key, verdict)


class ModelAllowList:
    """Refuses requests whose chosen or edited model is not allowed for the server.

    ``allowed`` maps server names (``"*"`` for the others) to model ids; without
    it, the list the model router gives in the view applies.
    """

    def __init__(self, inner: SamplingApprover, allowed: Mapping[str, Collection[str]] | None = None) -> None:
        self.inner = inner
        self.allowed = allowed

    def allowed_for(self, view: SamplingRequestView) -> Collection[str]:
        if self.allowed is None:
            return view.allowed_models
        if view.server in self.allowed:
            return self.allowed[view.server]
        return self.allowed.get("*", view.allowed_models)

    async def review_request(self, view: SamplingRequestView) -> RequestDecision:
        allowed = self.allowed_for(view)
        if view.model not in allowed:
            return Refuse(self._refusal(view.server, view.model, allowed))
        decision = await self.inner.review_request(view)
        if isinstance(decision, Approve) and decision.model is not None and decision.model not in allowed:
            return Refuse(self._refusal(view.server, decision.model, allowed))
        return decision

    async def review_result(self, view: SamplingResultView) -> ResultDecision:
        return await self.inner.review_result(view)

    @staticmethod
    def _refusal(server: str, model: str, allowed: Collection[str]) -> str:
        shown = ", ".join(sorted(allowed)) or "none"
        return f"Model {model!r} is not allowed for {server!r} (allowed: {shown})"


@dataclass(frozen=True, slots=True)
class RateLimits:
    """How much sampling one server may ask for (None: no limit)."""

    requests_per_minute: int | None = None
    tokens_per_hour: int | None = None


@dataclass(slots=True)
class _Charge:
    at: float
    tokens: int


@dataclass(slots=True)
class _Usage:
    requests: deque[float]
    charges: deque[_Charge]


class RateLimit:
    """Refuses at once, with -32600, a server that goes over its limits (rules above)."""

    MINUTE = 60.0
    HOUR = 3600.0
    #: What is counted, and the limit's name in an error's ``data``.
    COUNTED = "sampling requests"
    PER_MINUTE = "requests_per_minute"

    def __init__(
        self,
        inner: SamplingApprover,
        limits: RateLimits,
        *,
        overrides: Mapping[str, RateLimits] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.inner = inner
        self.limits = limits
        self.overrides = dict(overrides or {})
        self.clock = clock
        self._usage: dict[str, _Usage] = {}

    def limits_for(self, server: str) -> RateLimits:
        return self.overrides.get(server, self.limits)

    async def review_request(self, view: SamplingRequestView) -> RequestDecision:
        limits = self.limits_for(view.server)
        usage = self._usage.setdefault(view.server, _Usage(deque(), deque()))
        now = self.clock()
        _drop_before(usage.requests, now - self.MINUTE)
        while usage.charges and usage.charges[0].at <= now - self.HOUR:
            usage.charges.popleft()
        input_tokens = estimate_input_tokens(view.params)
        cost = input_tokens + view.params.max_tokens
        if limits.requests_per_minute is not None and len(usage.requests) >= limits.requests_per_minute:
            wait = usage.requests[0] + self.MINUTE - now
            raise _limit_error(
                f"{view.server!r} may make {limits.requests_per_minute} {self.COUNTED} per minute",
                self.PER_MINUTE,
                limits.requests_per_minute,
                wait,
            )
        if limits.tokens_per_hour is not None:
            self._check_tokens(view.server, usage, limits.tokens_per_hour, cost, now)
        usage.requests.append(now)
        charge = _Charge(now, cost)
        usage.charges.append(charge)
        try:
            decision = await self.inner.review_request(view)
        except BaseException:
            charge.tokens = 0
            raise
        if isinstance(decision, Refuse):
            charge.tokens = 0
        elif decision.max_tokens is not None:
            charge.tokens = input_tokens + decision.max_tokens
        return decision

    async def review_result(self, view: SamplingResultView) -> ResultDecision:
        return await self.inner.review_result(view)

    def _check_tokens(self, server: str, usage: _Usage, budget: int, cost: int, now: float) -> None:
        name = f"{server!r} may use {budget} tokens per hour"
        if cost > budget:
            raise _limit_error(
                f"{name}; this request alone needs up to {cost}", "tokens_per_hour", budget, None
            )
        used = sum(c.tokens for c in usage.charges)
        if used + cost <= budget:
            return
        # Wait until enough of the oldest charges leave the hour window.
        freed, wait = 0, 0.0
        for charge in usage.charges:
            freed += charge.tokens
            wait = charge.at + self.HOUR - now
            if used - freed + cost <= budget:
                break
        remaining = max(budget - used, 0)
        raise _limit_error(
            f"{name}; this request needs up to {cost} and {remaining} remain",
            "tokens_per_hour",
            budget,
            wait,
        )


class _Approves:
    """Approves every request: what a remembered approval stands for, behind its rate limit."""

    async def review_request(self, view: SamplingRequestView) -> RequestDecision:
        return Approve()

    async def review_result(self, view: SamplingResultView) -> ResultDecision:
        return Send()


class _RememberedRate(RateLimit):
    """The rate limit of approvals by a remembered answer (:class:`RememberDecisions`)."""

    COUNTED = "sampling requests approved by a remembered answer"
    PER_MINUTE = "remembered_per_minute"


def _drop_before(times: deque[float], cutoff: float) -> None:
    while times and times[0] <= cutoff:
        times.popleft()


def _limit_error(what: str, limit: str, maximum: int, retry_after: float | None) -> RpcError:
    data: dict[str, object] = {"limit": limit, "max": maximum}
    message = f"Rate limit: {what}"
    if retry_after is not None:
        seconds = max(math.ceil(retry_after), 1)
        data["retryAfterSeconds"] = seconds
        message += f"; try again in {_duration(seconds)}"
    return RpcError(INVALID_REQUEST, message, data)


def _duration(seconds: int) -> str:
    if seconds < 120:
        return f"{seconds} s"
    return f"{math.ceil(seconds / 60)} min"
