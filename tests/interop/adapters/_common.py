"""What the adapter drivers share: one receiver with scripted people in the loop, and what they saw.

The drivers (``mcp1_driver.py``, ``mcp2_driver.py``, ``fastmcp_driver.py``) run
inside an adapter venv (``.peers/adapter-*``, made by ``.ci/install-adapters``),
connect a real client library plus its adapter to a real peer server, run a
list of scenarios and print one JSON object: per scenario, what the server
reported it received, plus what the host side saw (:class:`Script`'s views
and cancellations, the audit lines).

:class:`Script` is both the sampling approver and the elicitation UI, and it
decides by the text it is shown, so one receiver serves every scenario:

- sampling: a last message containing ``refuse`` is refused (-1); ``hold``
  waits until cancelled (noted in ``cancelled``); anything else is approved,
  and the offline echo provider answers ``echo: <text>``;
- forms: a message containing ``decline`` is declined; ``hold`` waits until
  cancelled; anything else is accepted with the defaults, required strings
  ``"Ada"``, integers 36, booleans true;
- a text that also contains ``once`` is refused, declined or held only the
  first time it is seen, and approved or accepted afterwards;
- URLs: accepted, and "opened" by :meth:`Script.open_url` (noted, never opened).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio

from host_receiver import (
    Approve,
    ElicitationService,
    FormView,
    Receiver,
    ReceiverConfig,
    Refuse,
    SamplingRequestView,
    SamplingResultView,
    SamplingService,
    Send,
    UrlAnswer,
    UrlView,
)
from host_receiver.protocol.types import ElicitResult, ElicitValue
from providers import Config, SamplingLimits, build_registry

#: Short polls keep the peers' polling loops quick; distinct ttls show which one was granted.
CONFIG = ReceiverConfig(poll_interval_ms=50, default_ttl_ms=90_000, max_ttl_ms=120_000, page_size=2)
FILL: dict[str, ElicitValue] = {"string": "Ada", "integer": 36, "number": 36, "boolean": True}


@dataclass
class Script:
    """The approver and the form UI of every scenario (rules in the module docstring)."""

    views: list[dict[str, Any]] = field(default_factory=list)
    texts: set[str] = field(default_factory=set)
    cancelled: list[dict[str, Any]] = field(default_factory=list)
    holding: list[dict[str, Any]] = field(default_factory=list)
    opened: list[str] = field(default_factory=list)
    _changed: anyio.Event | None = None

    async def review_request(self, view: SamplingRequestView) -> Approve | Refuse:
        text = " ".join(getattr(m.content, "text", "") for m in view.params.messages[-1:])
        seen, first = self._saw("sampling", view.server, view.task_id, text)
        if "refuse" in text and first:
            return Refuse()
        if "hold" in text and first:
            await self._hold(seen)
        return Approve()

    async def review_result(self, view: SamplingResultView) -> Send:
        return Send()

    async def fill_form(self, view: FormView) -> ElicitResult:
        seen, first = self._saw("form", view.server, view.task_id, view.message)
        if "decline" in view.message and first:
            return ElicitResult(action="decline")
        if "hold" in view.message and first:
            await self._hold(seen)
        content = dict(view.schema.defaults())
        for f in view.schema.fields:
            if f.required and f.name not in content and f.kind in FILL:
                content[f.name] = FILL[f.kind]
        return ElicitResult(action="accept", content=content)

    async def consent_url(self, view: UrlView) -> UrlAnswer:
        self._saw("url", view.server, view.task_id, view.message)
        return "accept"

    def open_url(self, url: str) -> bool:
        """The host's browser (ElicitationService's ``opener``): notes the URL, opens nothing."""
        self.opened.append(url)
        return True

    async def wait_held(self, task_id: str | None = None) -> dict[str, Any]:
        """Return the held view of ``task_id`` (any, for None) once its work is surely in progress."""
        return await self._first(self.holding, lambda seen: task_id is None or seen["task_id"] == task_id)

    async def wait_cancelled(self, text: str) -> dict[str, Any]:
        """Return the held view showing ``text`` once its work has been cancelled."""
        return await self._first(self.cancelled, lambda seen: seen["text"] == text)

    async def _first(
        self, views: list[dict[str, Any]], match: Callable[[dict[str, Any]], bool]
    ) -> dict[str, Any]:
        """The first of ``views`` that ``match`` accepts, waiting for :meth:`_hold` to add it."""
        while True:
            for seen in views:
                if match(seen):
                    return seen
            if self._changed is None or self._changed.is_set():
                self._changed = anyio.Event()
            await self._changed.wait()

    def _saw(self, kind: str, server: str, task_id: str | None, text: str) -> tuple[dict[str, Any], bool]:
        """Note a view; whether its rule applies (always, or the first time for a ``once`` text)."""
        seen = {"kind": kind, "server": server, "task_id": task_id, "text": text}
        self.views.append(seen)
        first = "once" not in text or text not in self.texts
        self.texts.add(text)
        return seen, first

    async def _hold(self, seen: dict[str, Any]) -> None:
        self._note(self.holding, seen)
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self._note(self.cancelled, seen)
            raise

    def _note(self, views: list[dict[str, Any]], seen: dict[str, Any]) -> None:
        views.append(seen)
        if self._changed is not None:
            self._changed.set()


class Audit(logging.Handler):
    """Keeps every line of the ``host_receiver.audit`` log."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@dataclass
class Host:
    """One receiver and what its people and its audit log saw."""

    receiver: Receiver
    script: Script
    audit: Audit

    def seen(self) -> dict[str, Any]:
        script = self.script
        return {
            "views": script.views,
            "cancelled": script.cancelled,
            "opened": script.opened,
            "audit": self.audit.lines,
        }


#: The roots every driver's receiver offers.
ROOTS = ["file:///srv/notes"]


@asynccontextmanager
async def host(
    config: ReceiverConfig = CONFIG, limits: SamplingLimits | None = None, roots: list[str] | None = ROOTS
) -> AsyncIterator[Host]:
    """A receiver on the offline echo provider (within ``limits``), with :class:`Script` deciding,
    offering ``roots`` (None: no roots)."""
    script = Script()
    audit = Audit()
    logger = logging.getLogger("host_receiver.audit")
    logger.setLevel(logging.INFO)
    logger.addHandler(audit)
    registry = build_registry(provider="echo", config=Config(limits=limits or SamplingLimits()), environ={})
    receiver = Receiver(
        sampling=SamplingService(registry, script),
        elicitation=ElicitationService(script, opener=script.open_url),
        config=config,
        roots=roots,
    )
    try:
        async with registry:
            yield Host(receiver, script, audit)
    finally:
        logger.removeHandler(audit)


def report_of(text: str) -> Any:
    """A peer's JSON report (or the raw text when it is not JSON)."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def error_of(exc: BaseException) -> dict[str, Any]:
    """An exception a client raised, as data: its type, message and JSON-RPC code if it has one."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    error = getattr(exc, "error", None)
    return {
        "type": type(exc).__name__,
        "message": str(exc),
        "code": getattr(error, "code", getattr(exc, "code", None)),
    }


Scenario = Callable[[], Awaitable[Any]]
#: A driver's scenarios: given its arguments and the host, what each one reported.
Scenarios = Callable[[argparse.Namespace, Host], Awaitable[dict[str, Any]]]


async def run(scenarios: Mapping[str, Scenario]) -> dict[str, Any]:
    """Run each scenario in order; an exception is recorded as its outcome, not raised."""
    out: dict[str, Any] = {}
    for name, scenario in scenarios.items():
        try:
            out[name] = await scenario()
        except Exception as exc:
            out[name] = {"raised": error_of(exc)}
    return out


def parser(doc: str | None, url: str) -> argparse.ArgumentParser:
    """A driver's command line: ``--server PYTHON SCRIPT`` (stdio) or ``--url URL`` (``url`` says which)."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--server", nargs=2, metavar=("PYTHON", "SCRIPT"), help="start the peer over stdio")
    where.add_argument("--url", help=url)
    return parser


def main(args: argparse.Namespace, scenarios: Scenarios, **options: Any) -> None:
    """Run ``scenarios`` with a :func:`host` of ``options`` (a minute at most); print one JSON object."""

    async def drive() -> dict[str, Any]:
        with anyio.fail_after(60):
            async with host(**options) as h:
                out = await scenarios(args, h)
        return {"scenarios": out, "host": h.seen()}

    json.dump(anyio.run(drive), sys.stdout, sort_keys=True, default=str)
    sys.stdout.write("\n")
