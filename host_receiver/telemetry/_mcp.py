"""The MCP spans: requests sent and received, notifications, logical calls, session durations.

Per the semantic conventions for MCP (docs/observability.md):
:meth:`_Mcp.client_call` is the CLIENT span of one request the host sends,
with ``traceparent``/``tracestate`` injected into ``params._meta``;
:meth:`_Mcp.server_call` the SERVER span of one it receives, whose parent is
the context in its ``params._meta`` (absent or malformed: the ambient context,
never an error), started late with its arrival as its start: an answer given
at once (a task created, ``tasks/get``) is sent before the SDK sees the span.
:meth:`_Mcp.notified` is the span of a notification sent (CLIENT, context
injected) or received (SERVER). :meth:`_Mcp.logical_call` is one 2026-07-28
call across its input rounds and its task. :func:`network` and :func:`facts`
say what every span of one connection says of it; :func:`note_request_id`
puts the JSON-RPC id on the span of the request being sent.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar
from urllib.parse import urlsplit

from host_receiver.sanitize import safe_text
from host_receiver.telemetry._core import _OTHER, NAME_LIMIT, _api, _cancelled, _Core, _Span

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
#: The keys of ``params._meta`` that carry the trace context (W3C Trace Context and Baggage).
_CONTEXT_KEYS = ("traceparent", "tracestate", "baggage")
_T = TypeVar("_T")
#: A request received: its method, params, JSON-RPC id and the connection's :func:`facts`.
_Request = tuple[str, "dict[str, Any] | None", object, Mapping[str, Any]]
#: The CLIENT span of the request being sent in this context (for its JSON-RPC id).
_SENDING: ContextVar[ClientCall | None] = ContextVar("host_receiver_sending", default=None)
#: The request being answered in this context (for the link of a task it creates).
_SERVING: ContextVar[ServerCall | None] = ContextVar("host_receiver_serving", default=None)


def note_request_id(request_id: object) -> None:
    """Record the JSON-RPC id of the request being sent on its CLIENT span (the session calls it)."""
    sending = _SENDING.get()
    if sending is not None:
        _SENDING.set(None)
        sending.set("jsonrpc.request.id", str(request_id))


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

    def __init__(self, telemetry: _Mcp, request: _Request | None) -> None:
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


class _Mcp(_Core):
    """The MCP part of :class:`Telemetry`: the spans of the requests and notifications of a
    connection, and its duration."""

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
