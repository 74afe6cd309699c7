"""OpenTelemetry traces and metrics, per the semantic conventions for MCP and GenAI (docs/observability.md).

(About 840 lines, one idea: every span, attribute and instrument host-receiver
emits, and the rules that keep them safe, in one place.)

Rules:

* Only ``opentelemetry-api`` is imported, the first time a :class:`Telemetry`
  is made, and only if it is installed (the ``otel`` extra): without it every
  method here does nothing and costs a function call. With the API and no SDK
  (the API's own providers: its proxies, its no-ops) nothing is built either;
  whether an SDK is set is looked at once a second at most
  (``SDK_LOOK_EVERY``), so one set up later records from then on.
* A :class:`Telemetry` holds one tracer and one meter: from the providers a
  host passes (``ConnectionOptions(telemetry=Telemetry(tracer_provider=...,
  meter_provider=...))``), or the global ones (:func:`default_telemetry`).
  What a connection does runs with its telemetry current (:func:`current`),
  so the receiver, the handlers and the providers' call path, which know no
  connection, record through the same one.
* MCP: :meth:`Telemetry.client_call` is the CLIENT span of one request the
  host sends, with ``traceparent``/``tracestate`` injected into
  ``params._meta``; :meth:`Telemetry.server_call` the SERVER span of one it
  receives, whose parent is the context in its ``params._meta`` (absent or
  malformed: the ambient context, never an error), started late with its
  arrival as its start: an answer given at once (a task created, ``tasks/get``)
  is sent before the SDK sees the span. :meth:`Telemetry.notified` is the span
  of a notification sent (CLIENT, context injected) or received (SERVER).
  :meth:`Telemetry.logical_call`
  is one 2026-07-28 call across its input rounds and its task,
  :meth:`Telemetry.task` the work of a task the host runs, linked to the
  request that created it, :meth:`Telemetry.person` the wait for a person
  (its outcome, never the content; nothing when a policy decides alone).
  Tasks by state are counted here and observed by the meter when it collects.
* GenAI: :meth:`Telemetry.chat` is the CLIENT span of one provider call
  (``chat {model}``); a backend tells it what only the wire says (response
  id, model, token usage) through :func:`report_reply`. Prompt, system
  instructions and reply are recorded only when
  ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``. No key,
  token or header is ever recorded: nothing here is given one.
* Names a server chose (tools, prompts) go through :func:`safe_text`, cut to
  :data:`NAME_LIMIT`; only the first :data:`DISTINCT_NAMES` distinct ones of a
  Telemetry name spans and label metrics, later ones are ``_OTHER`` (a hostile
  server cannot blow up cardinality).

Fixed caps (docs/limits.md): ``NAME_LIMIT``, ``DISTINCT_NAMES``, ``SDK_LOOK_EVERY``.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from importlib import metadata
from types import SimpleNamespace
from typing import Any, TypeVar
from urllib.parse import urlsplit

from host_receiver.errors import RpcError
from host_receiver.protocol.types import CreateMessageResult, SamplingRequest, dump
from host_receiver.sanitize import safe_text

__all__ = [
    "CAPTURE_CONTENT",
    "DISTINCT_NAMES",
    "NAME_LIMIT",
    "ChatCall",
    "ClientCall",
    "Person",
    "ServerCall",
    "TaskTrace",
    "Telemetry",
    "current",
    "default_telemetry",
    "facts",
    "network",
    "note_request_id",
    "report_reply",
]

#: The environment variable that turns on recording prompts and replies (GenAI conventions).
CAPTURE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
#: The cut of a server-chosen name in a span name or an attribute.
NAME_LIMIT = 64
#: Distinct server-chosen names one Telemetry puts in span names and metric labels.
DISTINCT_NAMES = 256
_OTHER = "_OTHER"
_SCOPE = "host-receiver"
#: The methods (requests and notifications) of both eras' schemas, named as they are; any other
#: goes through ``Telemetry.name``.
_METHODS = frozenset(
    {
        "initialize", "ping", "server/discover", "tools/list", "tools/call", "prompts/list", "prompts/get",
        "resources/list", "resources/templates/list", "resources/read", "resources/subscribe",
        "resources/unsubscribe", "completion/complete", "logging/setLevel", "sampling/createMessage",
        "elicitation/create", "roots/list", "tasks/get", "tasks/result", "tasks/list", "tasks/cancel",
        "tasks/update", "notifications/initialized", "notifications/cancelled", "notifications/progress",
        "notifications/message", "notifications/tasks/status", "notifications/tools/list_changed",
        "notifications/prompts/list_changed", "notifications/resources/list_changed",
        "notifications/resources/updated", "notifications/roots/list_changed",
        "notifications/elicitation/complete",
    }
)  # fmt: skip
#: The methods whose ``uri`` is ``mcp.resource.uri``.
_WITH_URI = frozenset(
    {"resources/read", "resources/subscribe", "resources/unsubscribe", "notifications/resources/updated"}
)
#: ``gen_ai.provider.name`` of a provider's vendor, where the conventions name it otherwise.
_PROVIDER_NAMES = {"google": "gcp.gemini", "gemini": "gcp.gemini"}
#: Seconds between two looks at whether an SDK was set up globally (while none is).
SDK_LOOK_EVERY = 1.0
#: The keys of ``params._meta`` that carry the trace context (W3C Trace Context and Baggage).
_CONTEXT_KEYS = ("traceparent", "tracestate", "baggage")
_T = TypeVar("_T")
#: A request received: its method, params, JSON-RPC id and the connection's :func:`facts`.
_Request = tuple[str, "dict[str, Any] | None", object, Mapping[str, Any]]


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


#: The telemetry of the connection whose work runs in this context.
_CURRENT: ContextVar[Telemetry | None] = ContextVar("host_receiver_telemetry", default=None)
#: The CLIENT span of the request being sent in this context (for its JSON-RPC id).
_SENDING: ContextVar[ClientCall | None] = ContextVar("host_receiver_sending", default=None)
#: The request being answered in this context (for the link of a task it creates).
_SERVING: ContextVar[ServerCall | None] = ContextVar("host_receiver_serving", default=None)
#: The GenAI call running in this context (for what the backend reports).
_CHAT: ContextVar[ChatCall | None] = ContextVar("host_receiver_chat", default=None)


def current() -> Telemetry:
    """The telemetry of the work running in this context (outside a connection's: the global one)."""
    return _CURRENT.get() or default_telemetry()


@cache
def default_telemetry() -> Telemetry:
    """The Telemetry on the global tracer and meter providers (one per process)."""
    return Telemetry()


def note_request_id(request_id: object) -> None:
    """Record the JSON-RPC id of the request being sent on its CLIENT span (the session calls it)."""
    sending = _SENDING.get()
    if sending is not None:
        _SENDING.set(None)
        sending.set("jsonrpc.request.id", str(request_id))


def report_reply(
    *,
    response_id: object = None,
    response_model: object = None,
    input_tokens: object = None,
    output_tokens: object = None,
) -> None:
    """What a backend's reply says (its id, model, token usage), for the GenAI call in this context."""
    chat = _CHAT.get()
    if chat is None:
        return
    if isinstance(response_id, str) and response_id:
        chat.set("gen_ai.response.id", safe_text(response_id, NAME_LIMIT))
    if isinstance(response_model, str) and response_model:
        chat.response_model = safe_text(response_model, NAME_LIMIT)
    if type(input_tokens) is int and input_tokens >= 0:
        chat.input_tokens = input_tokens
    if type(output_tokens) is int and output_tokens >= 0:
        chat.output_tokens = output_tokens


def network(transport: str | None, url: str | None) -> dict[str, Any]:
    """A connection's ``network.transport`` and, from its URL, ``server.address`` and ``server.port``."""
    found: dict[str, Any] = {}
    if transport is not None:
        found["network.transport"] = transport
    where = urlsplit(url) if url else None
    if where is not None and where.hostname:
        found["server.address"] = where.hostname
        found["server.port"] = where.port or (443 if where.scheme == "https" else 80)
    return found


def facts(version: str, network: Mapping[str, Any], session_id: str | None) -> dict[str, Any]:
    """What every MCP span of one connection says of it: the protocol version, its
    :func:`network` attributes, the session id (cut)."""
    found: dict[str, Any] = {"mcp.protocol.version": version, **network}
    if session_id:
        found["mcp.session.id"] = safe_text(session_id, NAME_LIMIT)
    return found


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


class ClientCall(_Span):
    """The CLIENT span of one request the host sends; ``params`` carry its trace context."""

    params: dict[str, Any] | None

    def result(self, result: Mapping[str, Any]) -> None:
        """A ``tools/call`` result with ``isError`` is ``error.type=tool_error``."""
        if result.get("isError") is True:
            self.error = "tool_error"
            self.set("error.type", "tool_error")


class ServerCall(_Span):
    """The SERVER span of one request the host receives: made current while it is answered.

    The SDK's span is started late, with the request's arrival as its start time:
    when the answer is awaited (:meth:`answered`), or, for an answer given at
    once, when it has been sent (:meth:`stop` when the answer is ready, then
    :meth:`end`), so that nothing of the span's cost delays that answer.
    """

    def __init__(self, telemetry: Telemetry, request: _Request | None) -> None:
        super().__init__(None)
        self._telemetry = telemetry
        self._request = request
        self._arrived = time.time_ns()
        self._stopped: tuple[int, float] | None = None
        self._attributes: dict[str, Any] = {}

    def open(self) -> None:
        """Start the span now (once), from the request's arrival."""
        if self._request is not None:
            request, self._request = self._request, None
            self.span, self._attributes = self._telemetry._server_span(request, self._arrived)

    def context(self) -> Any:
        """The span's context (for a link), or None when nothing is recorded."""
        return self.span.get_span_context() if self.span is not None else None

    @contextmanager
    def active(self) -> Iterator[None]:
        """Run the block with this span current (once started; it stays open)."""
        serving = _SERVING.set(self)
        try:
            with self._telemetry._activated(self.span):
                yield
        finally:
            _SERVING.reset(serving)

    def stop(self) -> None:
        """The answer is ready: its end time (recorded by :meth:`end`)."""
        if self._stopped is None:
            self._stopped = (time.time_ns(), self.elapsed())

    def end(self, error: BaseException | None = None) -> None:
        """Record the span (started now if it was not) and its duration."""
        self.stop()
        assert self._stopped is not None
        ended, elapsed = self._stopped
        self.open()
        if error is not None and not _cancelled(error):
            self.fail(error)
        if self.span is not None:
            self.span.end(end_time=ended)
            self._telemetry._mcp_server.record(elapsed, self._telemetry._labels(self._attributes, self.error))

    async def answered(self, answer: Awaitable[_T]) -> _T:
        """Await ``answer`` with this span current, then end it."""
        self.open()
        with self.active():
            try:
                result = await answer
            except BaseException as exc:
                self.end(exc)
                raise
        self.end()
        return result


class Person(_Span):
    """The wait for a person: ``outcome`` is what they chose, never what they wrote."""

    outcome = "cancelled"

    def chose(self, outcome: str) -> None:
        self.outcome = outcome


class ChatCall(_Span):
    """The CLIENT span of one provider call; the backend reports usage through :func:`report_reply`."""

    response_model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    capture = False

    def result(self, result: CreateMessageResult) -> None:
        """What the result says (model, finish reason) and, on opt-in, the reply itself."""
        if self.span is None:
            return
        if self.response_model is None:
            self.response_model = safe_text(result.model, NAME_LIMIT)
        reason = result.stop_reason
        if reason is not None:
            self.set("gen_ai.response.finish_reasons", [safe_text(reason, NAME_LIMIT)])
        if self.capture:
            content = dump(result)["content"]
            message = {"role": "assistant", "parts": _parts(content), "finish_reason": reason}
            self.set("gen_ai.output.messages", json.dumps([message]))


_S = TypeVar("_S", bound=_Span)


class TaskTrace:
    """A task the host runs: the request that created it, and its work's span once it runs."""

    def __init__(self, telemetry: Telemetry, method: str, task_id: str, link: Any) -> None:
        self.telemetry = telemetry
        self._method = method
        self._task_id = task_id
        self._link = link
        self._span: _Span | None = None

    @contextmanager
    def running(self) -> Iterator[None]:
        """The task's work as one span (linked to its creating request), current while it runs."""
        telemetry = self.telemetry
        attributes = {"mcp.method.name": self._method, "host_receiver.task.id": self._task_id}
        link = self._link.context() if isinstance(self._link, ServerCall) else self._link
        with telemetry._span(f"task {self._method}", "INTERNAL", attributes, link=link) as span:
            self._span = span
            self.status("working")
            try:
                yield
            finally:
                self._span = None

    def status(self, status: str, message: str | None = None) -> None:
        """A status change, as an event on the work's span (when it runs)."""
        if self._span is not None:
            self._span.status(status, message)


def _cancelled(exc: BaseException) -> bool:
    return not isinstance(exc, Exception)


class Telemetry:
    """One tracer and one meter: from the providers given, or the global ones (rules above)."""

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

    def _parent(self, params: Mapping[str, Any] | None) -> Any:
        """The context in ``params._meta`` (W3C Trace Context), or None for the ambient one."""
        meta = params.get("_meta") if isinstance(params, Mapping) else None
        if not isinstance(meta, Mapping):
            return None
        carrier = {k: v for k in _CONTEXT_KEYS if isinstance(v := meta.get(k), str) and len(v) <= 512}
        if "traceparent" not in carrier:
            return None
        api = _api()
        assert api is not None
        extracted = api.propagate.extract(carrier)
        return extracted if api.trace.get_current_span(extracted).get_span_context().is_valid else None

    def _mcp(
        self, method: str, params: Mapping[str, Any] | None, facts: Mapping[str, Any]
    ) -> tuple[str, dict[str, Any]]:
        """The span name and attributes of one MCP request (``{method} {target}``)."""
        method = method if method in _METHODS else self.name(method)
        attributes = {"mcp.method.name": method, **facts}
        name = method
        target = params.get("name") if isinstance(params, Mapping) else None
        if method in ("tools/call", "prompts/get") and isinstance(target, str):
            bounded = self.name(target)
            key = "gen_ai.tool.name" if method == "tools/call" else "gen_ai.prompt.name"
            attributes[key] = bounded
            if method == "tools/call":
                attributes["gen_ai.operation.name"] = "execute_tool"
            if bounded != _OTHER:
                name = f"{method} {bounded}"
        uri = params.get("uri") if isinstance(params, Mapping) else None
        if method in _WITH_URI and isinstance(uri, str):
            attributes["mcp.resource.uri"] = safe_text(uri, 256)
        return name, attributes

    @staticmethod
    def _labels(attributes: Mapping[str, Any], error: str | None) -> dict[str, Any]:
        keep = ("mcp.method.name", "mcp.protocol.version", "gen_ai.tool.name", "gen_ai.prompt.name")
        labels = {k: attributes[k] for k in keep if k in attributes}
        if error is not None:
            labels["error.type"] = error
        return labels

    # --- MCP ----------------------------------------------------------------------

    @contextmanager
    def client_call(
        self, method: str, params: dict[str, Any] | None, facts: Mapping[str, Any]
    ) -> Iterator[ClientCall]:
        """The CLIENT span of one request; send ``call.params`` (its ``_meta`` carries the context)."""
        on = self.recording
        name, attributes = self._mcp(method, params, facts) if on else (method, {})
        raw = self._start(name, "CLIENT", attributes, None, None) if on else None
        with self._recorded(raw, ClientCall) as call:
            call.params = params
            if raw is not None:
                api = _api()
                assert api is not None
                carrier: dict[str, str] = {}
                api.propagate.inject(carrier)
                if carrier:
                    meta = (params or {}).get("_meta")
                    call.params = {
                        **(params or {}),
                        "_meta": {**(meta if isinstance(meta, dict) else {}), **carrier},
                    }
            sending = _SENDING.set(call)
            try:
                yield call
            finally:
                _SENDING.reset(sending)
                if on:
                    self._mcp_client.record(call.elapsed(), self._labels(attributes, call.error))

    def server_call(
        self,
        method: str,
        params: dict[str, Any] | None,
        request_id: object,
        facts: Callable[[], Mapping[str, Any]],
    ) -> ServerCall:
        """The SERVER span of one request received (:class:`ServerCall`: ``answered``, or ``stop``
        when the answer is ready and ``end`` once it is sent); ``facts``, the connection's, are
        asked for only when something records."""
        return ServerCall(self, (method, params, request_id, facts()) if self.recording else None)

    def _server_span(self, request: _Request, arrived: int) -> tuple[Any, dict[str, Any]]:
        """The SDK's SERVER span of ``request``, started at ``arrived``, and its attributes."""
        method, params, request_id, facts = request
        name, attributes = self._mcp(method, params, facts)
        if request_id is not None:
            attributes["jsonrpc.request.id"] = (
                str(request_id) if type(request_id) is int else safe_text(request_id, NAME_LIMIT)
            )
        api = _api()
        assert api is not None
        parent = self._parent(params)
        link = api.trace.get_current_span().get_span_context() if parent is not None else None
        return self._start(name, "SERVER", attributes, parent, link, arrived), attributes

    @contextmanager
    def logical_call(
        self, method: str, params: Mapping[str, Any], facts: Mapping[str, Any]
    ) -> Iterator[_Span]:
        """One 2026-07-28 call across its rounds and its task: each round's CLIENT span is a child,
        the task's status changes are events (:meth:`_Span.status`)."""
        name, attributes = self._mcp(method, params, facts)
        with self._span(name, "INTERNAL", attributes) as call:
            yield call

    def notified(
        self,
        method: str,
        params: dict[str, Any] | None,
        sent: bool,
        facts: Callable[[], Mapping[str, Any]],
    ) -> dict[str, Any] | None:
        """The span of one notification: sent, a CLIENT span whose context is injected into
        ``params._meta`` (the params to send are returned); received, a SERVER span whose parent
        is the context in its ``_meta``. Nothing is made unless a span records (no SDK: the
        params as they are); ``facts`` are the connection's, asked for only then."""
        if not self.recording:
            return params
        api = _api()
        assert api is not None
        parent = None if sent else self._parent(params)
        link = api.trace.get_current_span().get_span_context() if parent is not None else None
        found = [api.trace.Link(link)] if link is not None and link.is_valid else None
        kind = api.trace.SpanKind.CLIENT if sent else api.trace.SpanKind.SERVER
        name = method if method in _METHODS else self.name(method)
        span = self._tracer.start_span(name, context=parent, kind=kind, links=found)
        if not span.is_recording():
            return params
        span.set_attributes(self._mcp(method, params, facts())[1])
        if sent:
            carrier: dict[str, str] = {}
            api.propagate.inject(carrier, context=api.trace.set_span_in_context(span))
            meta = (params or {}).get("_meta")
            params = {**(params or {}), "_meta": {**(meta if isinstance(meta, dict) else {}), **carrier}}
        span.end()
        return params

    def session_ended(self, seconds: float, facts: Mapping[str, Any]) -> None:
        """Record one connection's life (``mcp.client.session.duration``)."""
        if self.recording:
            keep = ("mcp.protocol.version", "network.transport", "server.address", "server.port")
            self._mcp_session.record(seconds, {k: facts[k] for k in keep if k in facts})

    # --- the host's own work ----------------------------------------------------------

    def task(self, method: str, task_id: str) -> TaskTrace:
        """A task created now (linked to the request being answered in this context)."""
        link: Any = None
        if self._installed:  # counted even before an SDK is set: it may be set while tasks run
            self._active[method] = self._active.get(method, 0) + 1
        if self.recording:
            # The request's SERVER span, recorded once its answer is sent, is read when the work runs.
            link = _SERVING.get()
            if link is None:
                api = _api()
                assert api is not None
                link = api.trace.get_current_span().get_span_context()
        return TaskTrace(self, method, task_id, link)

    def task_finished(self, method: str, status: str) -> None:
        """A task left the live states (``status``: its final one, or ``expired``)."""
        if self._installed:
            self._active[method] -= 1
            key = (method, status)
            self._finished[key] = self._finished.get(key, 0) + 1

    def _observe_active(self, options: Any) -> list[Any]:
        """``host_receiver.receiver.tasks.active`` when the meter collects (in its own thread: copies)."""
        api = _api()
        assert api is not None
        return [api.metrics.Observation(n, {"mcp.method.name": m}) for m, n in self._active.copy().items()]

    def _observe_finished(self, options: Any) -> list[Any]:
        """``host_receiver.receiver.tasks.finished`` when the meter collects."""
        api = _api()
        assert api is not None
        return [
            api.metrics.Observation(n, {"mcp.method.name": method, "host_receiver.task.status": status})
            for (method, status), n in self._finished.copy().items()
        ]

    @contextmanager
    def person(self, step: str, asked: bool) -> Iterator[Person]:
        """The wait for a person at ``step`` (approval, review, form, url_consent); set the outcome.

        When no person is ``asked`` (a policy decides), nothing is recorded.
        """
        if not (asked and self.recording):
            yield Person(None)
            return
        attributes = {"host_receiver.person.step": step}
        with self._recorded(
            self._start(f"person {step}", "INTERNAL", attributes, None, None), Person
        ) as wait:
            try:
                yield wait
            except TimeoutError:
                wait.chose("timed_out")
                raise
            finally:
                wait.set("host_receiver.person.outcome", wait.outcome)
                if self.recording:
                    labels = {**attributes, "host_receiver.person.outcome": wait.outcome}
                    self._person_wait.record(wait.elapsed(), labels)

    # --- GenAI ---------------------------------------------------------------------------

    @contextmanager
    def chat(
        self,
        *,
        vendor: str | None,
        model: str,
        request: SamplingRequest,
        address: str | None = None,
        port: int | None = None,
    ) -> Iterator[ChatCall]:
        """The CLIENT span of one provider call (``chat {model}``) for ``request``.

        ``vendor`` is the provider's (``Provider.vendor``): its
        ``gen_ai.provider.name`` is the conventions' name for it, ``_OTHER`` for none.
        Messages and system prompt are recorded only on opt-in (:data:`CAPTURE_CONTENT`).
        """
        if not self.recording:
            yield ChatCall(None)
            return
        model = safe_text(model, NAME_LIMIT)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": _PROVIDER_NAMES.get(vendor or "", vendor or _OTHER),
            "gen_ai.request.model": model,
            "gen_ai.request.max_tokens": request.max_tokens,
        }
        if request.temperature is not None:
            attributes["gen_ai.request.temperature"] = request.temperature
        if request.stop_sequences:
            attributes["gen_ai.request.stop_sequences"] = [
                safe_text(stop, NAME_LIMIT) for stop in request.stop_sequences
            ]
        if address:
            attributes["server.address"] = address
            if port is not None:
                attributes["server.port"] = port
        capture = os.environ.get(CAPTURE_CONTENT, "").strip().lower() == "true"
        if capture:
            wire = dump(request)
            messages = [{"role": m.get("role"), "parts": _parts(m.get("content"))} for m in wire["messages"]]
            attributes["gen_ai.input.messages"] = json.dumps(messages)
            if request.system_prompt:
                instructions = [{"type": "text", "content": request.system_prompt}]
                attributes["gen_ai.system_instructions"] = json.dumps(instructions)
        raw = self._start(f"chat {model}", "CLIENT", attributes, None, None)
        with self._recorded(raw, ChatCall) as call:
            call.capture = capture
            mine = _CHAT.set(call)
            try:
                yield call
            finally:
                _CHAT.reset(mine)
                self._chat_done(call, attributes)

    def _chat_done(self, call: ChatCall, attributes: Mapping[str, Any]) -> None:
        if call.response_model is not None:
            call.set("gen_ai.response.model", call.response_model)
        usage = (("input", call.input_tokens), ("output", call.output_tokens))
        for kind, count in usage:
            if count is not None:
                call.set(f"gen_ai.usage.{kind}_tokens", count)
        if not self.recording:
            return
        keep = ("gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model", "server.address")
        labels = {k: attributes[k] for k in keep if k in attributes}
        if call.response_model is not None:
            labels["gen_ai.response.model"] = call.response_model
        if call.error is not None:
            labels["error.type"] = call.error
        self._genai_duration.record(call.elapsed(), labels)
        for kind, count in usage:
            if count is not None:
                self._genai_tokens.record(count, {**labels, "gen_ai.token.type": kind})


def _parts(content: object) -> list[dict[str, Any]]:
    """MCP content blocks as the GenAI conventions' message parts."""
    blocks: Sequence[object] = content if isinstance(content, list) else [content]
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append({"type": "text", "content": block.get("text")})
        elif kind == "tool_use":
            parts.append(
                {
                    "type": "tool_call",
                    "id": block.get("id"),
                    "name": block.get("name"),
                    "arguments": block.get("input"),
                }
            )
        elif kind == "tool_result":
            parts.append(
                {
                    "type": "tool_call_response",
                    "id": block.get("toolUseId"),
                    "response": _parts(block.get("content")),
                }
            )
        else:
            parts.append({"type": "blob", "modality": kind, "mime_type": block.get("mimeType")})
    return parts
