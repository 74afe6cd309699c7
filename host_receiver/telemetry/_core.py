"""The core of telemetry: loading the API, whether anything records, the tracer, the meter and its
instruments, and the span every part records through.

Rules:

* Only ``opentelemetry-api`` is imported, the first time a :class:`Telemetry`
  is made, and only if it is installed (the ``otel`` extra): without it every
  method does nothing and costs a function call. With the API and no SDK
  (the API's own providers: its proxies, its no-ops) nothing is built either;
  whether an SDK is set is looked at once a second at most
  (``SDK_LOOK_EVERY``), so one set up later records from then on.
* A Telemetry holds one tracer and one meter (:class:`_Core`, the base of
  :class:`Telemetry` whose parts add the spans of one concern each): from the
  providers a host passes, or the global ones. Every instrument is made here,
  in one place, when the Telemetry is made.
* Names a server chose (tools, prompts) go through :func:`safe_text`, cut to
  :data:`NAME_LIMIT`; only the first :data:`DISTINCT_NAMES` distinct ones of a
  Telemetry name spans and label metrics, later ones are ``_OTHER`` (a hostile
  server cannot blow up cardinality).

Fixed caps (docs/limits.md): ``NAME_LIMIT``, ``DISTINCT_NAMES``, ``SDK_LOOK_EVERY``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from importlib import metadata
from types import SimpleNamespace
from typing import Any, TypeVar

from host_receiver.errors import RpcError
from host_receiver.sanitize import safe_text

#: The cut of a server-chosen name in a span name or an attribute.
NAME_LIMIT = 64
#: Distinct server-chosen names one Telemetry puts in span names and metric labels.
DISTINCT_NAMES = 256
_OTHER = "_OTHER"
_SCOPE = "host-receiver"
#: Seconds between two looks at whether an SDK was set up globally (while none is).
SDK_LOOK_EVERY = 1.0


@cache
def _api() -> SimpleNamespace | None:
    """The OpenTelemetry API's modules, or None when it is not installed."""
    try:
        from opentelemetry import context, metrics, propagate, trace
    except ImportError:
        return None
    return SimpleNamespace(context=context, metrics=metrics, propagate=propagate, trace=trace)


def _records(provider: object) -> bool:
    """Whether a tracer or meter provider can record: not one of the API's own (proxies, no-ops)."""
    return not type(provider).__module__.startswith(("opentelemetry.trace", "opentelemetry.metrics"))


def _version() -> str:
    try:
        return metadata.version("host-receiver")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a bare tree
        return "0"


#: The telemetry of the connection whose work runs in this context (a :class:`Telemetry`, the only
#: kind of :class:`_Core` ever made; read through ``telemetry.current``).
_CURRENT: ContextVar[_Core | None] = ContextVar("host_receiver_telemetry", default=None)


def _error_type(exc: BaseException) -> str:
    if isinstance(exc, RpcError):
        return str(exc.code)
    if isinstance(exc, TimeoutError):
        return "timeout"
    return type(exc).__qualname__


class _Span:
    """One span being recorded (None when nothing records it: no API, no SDK, or not sampled;
    what would be set on it is then not even made), and its duration for a metric."""

    def __init__(self, span: Any) -> None:
        self.span = span if span is not None and span.is_recording() else None
        self.started = time.perf_counter()
        self.error: str | None = None

    def set(self, key: str, value: Any) -> None:
        if self.span is not None:
            self.span.set_attribute(key, value)

    def fail(self, exc: BaseException) -> None:
        """Mark the span failed with ``error.type`` (the JSON-RPC code, ``timeout`` or the type)
        and, for a JSON-RPC error, its code and its message (sanitised)."""
        self.error = _error_type(exc)
        if self.span is None:
            return
        api = _api()
        assert api is not None
        self.span.set_attribute("error.type", self.error)
        description = None
        if isinstance(exc, RpcError):
            self.span.set_attribute("rpc.response.status_code", str(exc.code))
            description = safe_text(exc.message)
        self.span.set_status(api.trace.StatusCode.ERROR, description)

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def status(self, status: str, message: str | None = None) -> None:
        """A task's status change, as a ``task.status`` event on this span."""
        if self.span is not None:
            attributes = {"host_receiver.task.status": safe_text(status, NAME_LIMIT)}
            if message:
                attributes["host_receiver.task.status_message"] = safe_text(message)
            self.span.add_event("task.status", attributes)


_S = TypeVar("_S", bound=_Span)


def _cancelled(exc: BaseException) -> bool:
    return not isinstance(exc, Exception)


class _Core:
    """The tracer, the meter and its instruments (made once, here), whether anything records, and
    the span helpers each part of :class:`Telemetry` builds on."""

    #: What ``host_receiver.receiver.tasks.active`` and ``.finished`` observe (the work part's).
    _observe_active: Callable[[Any], list[Any]]
    _observe_finished: Callable[[Any], list[Any]]

    def __init__(self, *, tracer_provider: Any = None, meter_provider: Any = None) -> None:
        self._names: dict[str, None] = {}
        #: Tasks not finished, by method, and tasks finished, by method and status: counted here,
        #: observed by the meter when it collects (nothing per task reaches the SDK).
        self._active: dict[str, int] = {}
        self._finished: dict[tuple[str, str], int] = {}
        api = _api()
        self._installed = api is not None
        #: Providers given, or an SDK seen globally: recording for good (an SDK is never unset).
        self._recording = api is not None and (tracer_provider is not None or meter_provider is not None)
        self._looked_at = -math.inf
        if api is None:
            return
        version = _version()
        self._tracer = api.trace.get_tracer(_SCOPE, version, tracer_provider=tracer_provider)
        meter = api.metrics.get_meter(_SCOPE, version, meter_provider=meter_provider)
        seconds = {"unit": "s"}
        self._mcp_client = meter.create_histogram(
            "mcp.client.operation.duration", description="MCP requests the host sent", **seconds
        )
        self._mcp_server = meter.create_histogram(
            "mcp.server.operation.duration", description="MCP requests the host answered", **seconds
        )
        self._mcp_session = meter.create_histogram(
            "mcp.client.session.duration", description="MCP connections, open to closed", **seconds
        )
        self._genai_duration = meter.create_histogram(
            "gen_ai.client.operation.duration", description="Provider calls", **seconds
        )
        self._genai_tokens = meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}", description="Tokens per provider call"
        )
        meter.create_observable_up_down_counter(
            "host_receiver.receiver.tasks.active",
            [self._observe_active],
            unit="{task}",
            description="Tasks the host runs, not yet finished",
        )
        meter.create_observable_counter(
            "host_receiver.receiver.tasks.finished",
            [self._observe_finished],
            unit="{task}",
            description="Tasks the host ran, by final status",
        )
        self._person_wait = meter.create_histogram(
            "host_receiver.person.wait.duration", description="Time waiting for a person", **seconds
        )

    @property
    def recording(self) -> bool:
        """Whether anything can record: providers were given, or an SDK's are set globally.

        The API's own providers (its proxies until an SDK is set, its no-ops) record
        nothing, so nothing is built for them: with the API and no SDK the host pays
        about what it pays without the API. The global providers are looked at once
        every ``SDK_LOOK_EVERY`` seconds at most: an SDK set up after the telemetry was
        made records from then on.
        """
        if self._recording or not self._installed:
            return self._recording
        now = time.monotonic()
        if now - self._looked_at < SDK_LOOK_EVERY:
            return False
        self._looked_at = now
        api = _api()
        assert api is not None
        tracers, meters = api.trace.get_tracer_provider(), api.metrics.get_meter_provider()
        self._recording = _records(tracers) or _records(meters)
        return self._recording

    # --- shared -----------------------------------------------------------------

    def name(self, value: object) -> str:
        """A server-chosen name made safe and bounded, or ``_OTHER`` past the distinct-name cap."""
        text = safe_text(value, NAME_LIMIT)
        if text in self._names:
            return text
        if len(self._names) >= DISTINCT_NAMES:
            return _OTHER
        self._names[text] = None
        return text

    @contextmanager
    def _activated(self, span: Any) -> Iterator[None]:
        """``span`` current (when recording) and this telemetry current, for the block."""
        mine = _CURRENT.set(self)
        token = None
        if span is not None:
            api = _api()
            assert api is not None
            token = api.context.attach(api.trace.set_span_in_context(span))
        try:
            yield
        finally:
            if token is not None:
                api = _api()
                assert api is not None
                api.context.detach(token)
            _CURRENT.reset(mine)

    @contextmanager
    def _span(
        self,
        name: str,
        kind: str,
        attributes: Mapping[str, Any],
        *,
        parent: Any = None,
        link: Any = None,
    ) -> Iterator[_Span]:
        """A span current for the block; an exception marks it failed (cancellation does not)."""
        with self._recorded(self._start(name, kind, attributes, parent, link), _Span) as span:
            yield span

    def _start(
        self,
        name: str,
        kind: str,
        attributes: Mapping[str, Any],
        parent: Any,
        link: Any,
        start_time: int | None = None,
    ) -> Any:
        if not self.recording:
            return None
        api = _api()
        assert api is not None
        found = [api.trace.Link(link)] if link is not None and link.is_valid else None
        return self._tracer.start_span(
            name,
            context=parent,
            kind=getattr(api.trace.SpanKind, kind),
            attributes=attributes,
            links=found,
            start_time=start_time,
        )

    @contextmanager
    def _recorded(self, raw: Any, kind: type[_S]) -> Iterator[_S]:
        span = kind(raw)
        try:
            with self._activated(raw):
                yield span
        except BaseException as exc:
            if not _cancelled(exc):
                span.fail(exc)
            raise
        finally:
            if raw is not None:
                raw.end()
