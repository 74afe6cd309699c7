"""The HTTP+SSE transport of MCP 2024-11-05 (deprecated), client side, on httpx.

The fallback of a URL whose server predates Streamable HTTP (2026-07-28
streamable-http.mdx, "Backward Compatibility"): a ``Host`` tries it when a
Streamable HTTP POST gets 400, 404 or 405 without a modern JSON-RPC error
(:meth:`Host.connect_url <host_receiver.client.host.Host.connect_url>`).

Rules (2024-11-05 transports.mdx, "HTTP with SSE"):

- ``connect()`` GETs the URL with ``Accept: text/event-stream``; the first
  event must be ``endpoint``, whose data is the URL (relative to the SSE
  URL) every client message is POSTed to. It must have the SSE URL's origin
  (scheme, host, port): a server cannot send this client's messages,
  headers and credentials elsewhere. An error status (:class:`HttpStatusError`),
  another first event, another origin, or no event within ``timeout``'s
  connect time is a :class:`TransportError`, and no stream is handed out.
- Every later ``message`` event is one JSON-RPC message from the server, read
  through the shared SSE reader (:mod:`~host_receiver.transports._sse`,
  ``httpx-sse``) and bounded by ``max_message_size`` as on Streamable HTTP (an
  oversized one is judged by its head); other events are ignored.
- ``send`` POSTs one message as JSON to the endpoint; any 2xx is accepted
  (202), an error status is :class:`HttpStatusError`. Answers come on the SSE
  stream, so a silent server is not answered for by the medium.
- The server closing the SSE stream ends the connection (``receive`` raises
  ``anyio.EndOfStream``); a broken one raises :class:`TransportError`.
  Leaving ``connect()`` closes it. No session header, no resumption, no
  mirrored headers.
- ``headers`` and an ``httpx.Auth`` go on every request; the client is made
  as Streamable HTTP's is (the lean pool unless a proxy carries it, bodies inflated
  in bounded pieces: :mod:`host_receiver._net.body`).

Fixed caps (docs/limits.md): ``_INCOMING_BUFFER``, ``_STATUS_DETAIL``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from host_receiver._concurrency import background_task_group
from host_receiver._net.body import decoded
from host_receiver._net.pool import lean_transport_for
from host_receiver.errors import HttpStatusError, InvalidMessage, TransportError
from host_receiver.protocol._head import HEAD_LIMIT
from host_receiver.protocol.jsonrpc import Message, dumps_message
from host_receiver.sanitize import safe_logger, safe_text
from host_receiver.transports._http_exchange import (
    SSE,
    content_type,
    decode,
    oversized_answer,
    read_head,
    status_detail,
)
from host_receiver.transports._sse import Event, read_events
from host_receiver.transports.base import DEFAULT_MAX_MESSAGE_SIZE, MessageStream, StreamAttribute, Transport
from host_receiver.transports.http import DEFAULT_TIMEOUT

__all__ = ["SseTransport"]

logger = safe_logger(__name__)

#: Messages received and not yet taken by the session.
_INCOMING_BUFFER = 64
#: The most of an error status's body quoted in the error.
_STATUS_DETAIL = 500


class SseTransport(Transport):
    """The 2024-11-05 HTTP+SSE transport: a GET event stream at ``url`` and POSTs to the endpoint it names."""

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        auth: httpx.Auth | None = None,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    ) -> None:
        self.url = url
        self.headers = dict(headers or {})
        self.auth = auth
        self.timeout = timeout
        self.max_message_size = max(max_message_size, HEAD_LIMIT)

    def __repr__(self) -> str:
        return f"SseTransport({self.url!r})"

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[MessageStream]:
        client = httpx.AsyncClient(
            transport=lean_transport_for(self.url),
            headers=self.headers,
            auth=self.auth,
            timeout=self.timeout,
            follow_redirects=True,
        )
        incoming_in, incoming = anyio.create_memory_object_stream[Message | InvalidMessage](_INCOMING_BUFFER)
        async with client, client.stream("GET", self.url, headers={"accept": SSE}) as response:
            await _check(response, self.url)
            if content_type(response) != SSE:
                raise TransportError(
                    f"{self.url} answered GET with {content_type(response) or 'no content type'}"
                )
            events = read_events(decoded(response), self.max_message_size)
            endpoint = await self._endpoint(events)
            stream = _SseStream(client, endpoint, incoming)
            async with background_task_group() as tasks:
                tasks.start_soon(self._read, events, incoming_in, stream)
                try:
                    yield stream
                finally:
                    tasks.cancel_scope.cancel()

    async def _endpoint(self, events: AsyncIterator[Event]) -> httpx.URL:
        """The POST endpoint the first event names (module rules)."""
        first: Event | None = None
        with anyio.move_on_after(self.timeout.connect):
            first = await anext(events, None)
        if first is None or first.event != "endpoint" or not first.data:
            got = "nothing" if first is None else f"a {safe_text(first.event, 40)!r} event"
            raise TransportError(f"{self.url} sent {got} where the HTTP+SSE transport's endpoint event goes")
        base = httpx.URL(self.url)
        endpoint = base.join(first.data.strip())
        if (endpoint.scheme, endpoint.host, endpoint.port) != (base.scheme, base.host, base.port):
            raise TransportError(
                f"{self.url} named an endpoint of another origin ({safe_text(str(endpoint), 200)}); refused"
            )
        logger.debug("HTTP+SSE endpoint of %s: %s", self.url, endpoint)
        return endpoint

    async def _read(
        self,
        events: AsyncIterator[Event],
        incoming_in: MemoryObjectSendStream[Message | InvalidMessage],
        stream: _SseStream,
    ) -> None:
        """Deliver each ``message`` event until the server ends the stream (or it breaks)."""
        async with incoming_in:
            try:
                async for event in events:
                    if event.event != "message":
                        continue
                    data = event.data
                    limit = self.max_message_size
                    await incoming_in.send(
                        decode(data) if data is not None else oversized_answer(event.head, limit, None)
                    )
            except httpx.HTTPError as exc:
                stream.failure = TransportError(f"the event stream of {self.url} broke: {exc}")
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass  # the stream was closed: nobody receives any more


class _SseStream(MessageStream):
    """Sending is a POST to the endpoint; receiving is the event stream's messages."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        endpoint: httpx.URL,
        incoming: MemoryObjectReceiveStream[Message | InvalidMessage],
    ) -> None:
        self._client = client
        self._endpoint = endpoint
        self._incoming = incoming
        self._closed = False
        #: Why the event stream ended, when it broke.
        self.failure: TransportError | None = None

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        return {StreamAttribute.answers_every_request: lambda: False}

    async def send(self, message: Message) -> None:
        if self._closed:
            raise TransportError(f"the connection to {self._endpoint} is closed")
        try:
            async with self._client.stream(
                "POST",
                self._endpoint,
                content=dumps_message(message),
                headers={"content-type": "application/json"},
            ) as response:
                await _check(response, str(self._endpoint))
        except httpx.HTTPError as exc:
            raise TransportError(f"POST to {self._endpoint} failed: {exc}") from None

    async def receive(self) -> Message | InvalidMessage:
        try:
            return await self._incoming.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            if self.failure is not None and not self._closed:
                raise TransportError(str(self.failure)) from None
            raise anyio.EndOfStream from None

    async def aclose(self) -> None:
        self._closed = True
        self._incoming.close()


async def _check(response: httpx.Response, url: str) -> None:
    """An error status as :class:`HttpStatusError`, quoting the start of its body."""
    if response.status_code < 400:
        return
    body, _ = await read_head(response, _STATUS_DETAIL)
    detail = status_detail(response, body, _STATUS_DETAIL)
    raise HttpStatusError(f"HTTP {response.status_code} from {url}: {detail}", response.status_code)
