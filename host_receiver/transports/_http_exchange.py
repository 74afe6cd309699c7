"""What one Streamable HTTP connection's parts share: the client, the session, the messages in.

The posting (:mod:`host_receiver.transports.http`), the legacy resumption
(:mod:`~host_receiver.transports._http_resume`) and the GET stream
(:mod:`~host_receiver.transports._http_listen`) each open requests, read SSE
events and deliver messages through one :class:`Exchange`. The rules are
:mod:`host_receiver.transports.http`'s.

Fixed caps (docs/limits.md): ``_INCOMING_BUFFER``, ``_STATUS_DETAIL``, ``_END_AFTER_ANSWER``.
"""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

import anyio
import httpx

from host_receiver._net.body import MAX_ERROR_BODY, decoded
from host_receiver.errors import HttpStatusError, InvalidMessage, RpcError, SessionExpired, TransportError
from host_receiver.protocol.jsonrpc import ErrorResponse, Message, Response, decode_message, oversized
from host_receiver.protocol.types import RequestId
from host_receiver.sanitize import safe_logger, safe_text
from host_receiver.transports._sse import Event, read_events

__all__ = ["CONNECTION_CLOSED", "Cursor", "Exchange", "HttpSettings", "challenge_driven"]

logger = safe_logger(__name__)

#: Error code delivered to a request whose answer stream broke for good.
CONNECTION_CLOSED = -32000
POST_ACCEPT = "application/json, text/event-stream"
SSE = "text/event-stream"
_INCOMING_BUFFER = 64
#: The most of an error status's body read for its JSON-RPC error.
#: The most of an error status's body quoted in :class:`HttpStatusError`.
_STATUS_DETAIL = 500
#: Seconds an SSE answer is read on after the answer for its end, so that its connection goes
#: back to the pool (a stream closed before its end closes its connection).
_END_AFTER_ANSWER = 0.5
#: Statuses that ask for a credential (a 403 may ask for more scope): the client's auth answers them.
_CHALLENGED = frozenset({401, 403})
_AUTHORIZATION = "authorization"


def challenge_driven(auth: httpx.Auth | None) -> bool:
    """Whether ``auth`` promises to change a request only by its credential headers
    (``Authorization``, and ``DPoP`` beside it), and only once it holds a credential or a
    response challenged it: its class sets ``challenge_driven = True``
    (:class:`host_receiver.auth.OAuth` does). A request such an auth left bare and the
    server answered shows that no credential is needed so far."""
    return auth is not None and getattr(type(auth), "challenge_driven", False) is True


class HttpSettings(Protocol):
    """What the parts read of the settings of :class:`~host_receiver.transports.http.HttpTransport`."""

    url: str
    headers: dict[str, str]
    default_retry: float
    max_reconnects: int
    close_timeout: float
    max_message_size: int


@dataclass
class Cursor:
    """Where one SSE stream stands: last event id, the server's retry, events seen."""

    retry: float
    last_event_id: str = ""
    events: int = 0


class Exchange:
    """One connection's client, MCP session and queue of messages in, and how it fails.

    ``direct``: the lean pool of a client made by the transport. Requests then go straight to
    it (``handle_async_request``), with the client's headers and timeouts merged once per
    session shape: what ``AsyncClient`` does per request (merging, its cookie jar on every
    response, its response wrapping) is skipped. A response that sets a cookie or redirects
    hands the connection to the client for good (a redirected request is sent again through
    it, as httpx sends a 307's body again), so cookies and redirects work as before.

    ``probe``: the client has a challenge-driven auth (:func:`challenge_driven`). Requests go
    through the client until one is answered (not 401 or 403) that the auth left bare: the
    server needs no credential so far, and later requests go direct. A direct request answered
    401 or 403, or any request the auth put a credential on, hands the connection to the client
    for good (the refused request is sent again through it, where the auth answers the
    challenge).
    """

    def __init__(
        self,
        config: HttpSettings,
        client: httpx.AsyncClient,
        *,
        direct: httpx.AsyncBaseTransport | None = None,
        probe: bool = False,
    ) -> None:
        self.config = config
        self._client = client
        self._direct = None if probe else direct
        self._direct_once_unchallenged = direct if probe else None
        self._challengeable = probe  # a 401 or 403 is the auth's to answer
        self._extensions = {"timeout": client.timeout.as_dict()}
        self._shapes: dict[tuple[str, bool, str | None, str | None], httpx.Headers] = {}
        self.session_id: str | None = None
        self.protocol_version: str | None = None  # a legacy agreement's: sent on every request
        self.failure: TransportError | None = None
        self._incoming_in, self.incoming = anyio.create_memory_object_stream[Message | InvalidMessage](
            _INCOMING_BUFFER
        )
        self._closed = False

    def open(
        self,
        method: str,
        *,
        body: bytes | None = None,
        last_event_id: str = "",
        extra: dict[str, str] | None = None,
    ) -> AbstractAsyncContextManager[httpx.Response]:
        """Send one HTTP request with the connection's headers (and ``extra``), streaming its answer."""
        headers = self._headers(method, body is not None)
        if last_event_id or extra:
            headers = headers.copy()
            if last_event_id:
                headers["last-event-id"] = last_event_id
            if extra:
                headers.update(extra)
        if self._direct is not None:
            return self._send_direct(self._direct, method, body, headers)
        if self._direct_once_unchallenged is not None:
            return self._probe(method, body, headers)
        return self._client.stream(method, self._endpoint, content=body, headers=headers)

    def _headers(self, method: str, has_body: bool) -> httpx.Headers:
        """The client's headers and the connection's for one shape of request, merged once."""
        key = (method, has_body, self.session_id, self.protocol_version)
        headers = self._shapes.get(key)
        if headers is None:
            headers = httpx.Headers()
            if self._direct is not None:  # what httpx's client and request would add
                headers["host"] = self._endpoint.netloc.decode("ascii")
                headers.update(self._client.headers)
            headers.update(self.config.headers)
            headers["accept"] = SSE if method == "GET" else POST_ACCEPT
            if has_body:
                headers["content-type"] = "application/json"
            if self.session_id is not None:
                headers["mcp-session-id"] = self.session_id
            if self.protocol_version is not None:
                headers["mcp-protocol-version"] = self.protocol_version
            self._shapes[key] = headers
        return headers

    @asynccontextmanager
    async def _send_direct(
        self, transport: httpx.AsyncBaseTransport, method: str, body: bytes | None, headers: httpx.Headers
    ) -> AsyncIterator[httpx.Response]:
        """One request straight to the pool; through the client once a cookie or redirect needs it."""
        request = httpx.Request(
            method,
            self._endpoint,
            headers=headers,
            stream=httpx.ByteStream(body or b""),
            extensions=self._extensions,
        )
        if body is not None:
            request.headers["content-length"] = str(len(body))
        response = await transport.handle_async_request(request)
        response.request = request
        try:
            if "set-cookie" in response.headers:
                self._client.cookies.extract_cookies(response)
                self._to_client()
            again = response.has_redirect_location or (
                self._challengeable and response.status_code in _CHALLENGED
            )
            if again:  # the client follows the redirect, or its auth answers the challenge
                self._to_client()
                await response.aclose()
            else:
                yield response
        finally:
            await response.aclose()
        if again:
            async with self._client.stream(method, self._endpoint, content=body, headers=headers) as resent:
                yield resent

    @asynccontextmanager
    async def _probe(
        self, method: str, body: bytes | None, headers: httpx.Headers
    ) -> AsyncIterator[httpx.Response]:
        """One request through the client; later ones go direct if the auth left it bare and it
        was not refused, and through the client for good if the auth put a credential on it."""
        async with self._client.stream(method, self._endpoint, content=body, headers=headers) as response:
            if _AUTHORIZATION in response.request.headers:
                self._to_client()
            elif response.status_code not in _CHALLENGED and self._direct_once_unchallenged is not None:
                self._direct, self._direct_once_unchallenged = self._direct_once_unchallenged, None
                self._shapes.clear()
            yield response

    def _to_client(self) -> None:
        """Send every later request through the client (its cookie jar, its redirects)."""
        self._direct_once_unchallenged = None
        if self._direct is not None:
            logger.debug(
                "%s set a cookie, redirected or asked for a credential: requests go through httpx's client",
                self.config.url,
            )
            self._direct = None
            self._shapes.clear()

    @cached_property
    def _endpoint(self) -> httpx.URL:
        """The endpoint, parsed once (httpx parses a string URL again for every request)."""
        return httpx.URL(self.config.url)

    async def read_events(
        self, response: httpx.Response, cursor: Cursor, *, answer_to: RequestId | None
    ) -> bool:
        """Deliver the messages of an SSE stream; True once ``answer_to`` is answered.

        After the answer the stream is read on to its end for at most
        ``_END_AFTER_ANSWER`` seconds (the server should end it there), and
        what else comes is dropped: a stream read to its end leaves its
        connection to the next request, where one closed unread would close it.
        """
        if content_type(response) != SSE:
            raise TransportError(f"expected an event stream from {self.config.url}")
        limit = self.config.max_message_size
        events = read_events(decoded(response), limit)
        async for event in events:
            cursor.events += 1
            if event.id:
                cursor.last_event_id = event.id
            if event.retry is not None:
                cursor.retry = event.retry / 1000
            if event.event != "message" or event.data == "":
                continue  # the priming event: an id and no data
            data = event.data
            message = decode(data) if data is not None else oversized_answer(event.head, limit, answer_to)
            await self.deliver(message)
            if answer_to is not None and answers(message, answer_to):
                await _read_to_end(events)
                return True
        return False

    def fail(self, failure: TransportError) -> None:
        """End the stream: ``receive`` drains what came before, then raises ``failure``."""
        if self.failure is None:
            self.failure = failure
            self._incoming_in.close()

    def raise_failure(self) -> None:
        if self.failure is not None:
            raise type(self.failure)(str(self.failure))

    @property
    def closed(self) -> bool:
        """Whether the connection was closed (its DELETE may still be on its way)."""
        return self._closed

    def check_open(self) -> None:
        """Raise the failure that ended the connection, or TransportError once it was closed."""
        self.raise_failure()
        if self._closed:
            raise TransportError(f"the connection to {self.config.url} is closed")

    async def check(self, response: httpx.Response, body: bytes | None = None) -> None:
        """Remember the session id; turn an HTTP error status into TransportError.

        ``body``: what of an error status's body was read already (it is quoted).
        """
        session_id = response.headers.get("mcp-session-id")
        if session_id and self.session_id is None:
            if all(0x21 <= ord(char) <= 0x7E for char in session_id):
                self.session_id = session_id
            else:
                logger.warning("ignored a session id with characters outside visible ASCII")
        status = response.status_code
        if status < 400:
            return
        sent_session = response.request.headers.get("mcp-session-id")
        if status == 404 and sent_session:
            self.fail(
                SessionExpired(
                    f"the server ended MCP session {sent_session} (HTTP 404); open a new connection"
                )
            )
            self.raise_failure()
        if body is None:
            body, _ = await read_head(response, _STATUS_DETAIL)
        detail = status_detail(response, body[:_STATUS_DETAIL], _STATUS_DETAIL)
        raise HttpStatusError(f"HTTP {status} from {self.config.url}: {detail}", status)

    async def deliver_error(self, response: httpx.Response, request_id: RequestId) -> None:
        """Deliver the JSON-RPC error an error status carries, as the answer to ``request_id``.

        When the body is no JSON-RPC error, or a 404 ends the legacy session,
        :meth:`check` raises what happened instead.
        """
        body = None
        legacy_end = response.status_code == 404 and response.request.headers.get("mcp-session-id")
        if not legacy_end and content_type(response) == "application/json":
            body, whole = await read_head(response, MAX_ERROR_BODY)
            answer = decode(body) if whole else None
            if isinstance(answer, ErrorResponse):
                await self.deliver(ErrorResponse(request_id, answer.error))
                return
        await self.check(response, body)

    async def deliver(self, message: Message | InvalidMessage) -> None:
        """Hand ``message`` to ``receive``: at once while the queue has room (no turn of the event
        loop between a message read and the session taking it), else once it has."""
        try:
            try:
                self._incoming_in.send_nowait(message)
            except anyio.WouldBlock:
                await self._incoming_in.send(message)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            logger.debug("dropped a message that arrived after the stream closed")

    async def end_session(self) -> None:
        """Stop sending and delivering, and DELETE the session if the server still has it (once)."""
        already, self._closed = self._closed, True
        self._incoming_in.close()
        if already or self.session_id is None or self.failure is not None:
            return
        with anyio.move_on_after(self.config.close_timeout):
            try:
                async with self.open("DELETE") as response:
                    logger.debug("DELETE of the session answered %d", response.status_code)
            except httpx.HTTPError as exc:
                logger.debug("DELETE of the session failed: %s", exc)


async def _read_to_end(events: AsyncIterator[Event]) -> None:
    """The rest of an answered stream, dropped, for at most ``_END_AFTER_ANSWER`` seconds."""
    dropped = 0
    with anyio.move_on_after(_END_AFTER_ANSWER) as scope:
        async for event in events:
            dropped += event.event == "message" and event.data != ""
    if dropped:
        logger.debug("dropped %d messages that followed the answer on its stream", dropped)
    if scope.cancelled_caught:
        logger.debug("an answered stream did not end within %s s: closed", _END_AFTER_ANSWER)


_HIDDEN = re.compile(r"<(script|style)\b.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_TITLE = re.compile(r"<title\b[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]*>")


def status_detail(response: httpx.Response, body: bytes, limit: int) -> str:
    """What an error status's ``body`` says, on one line, safe to show: an HTML page by its title
    (else its text without tags), any text with its whitespace folded; the reason phrase when the
    body says nothing."""
    text = body.decode(errors="replace")
    if content_type(response) in ("text/html", "application/xhtml+xml") or text.lstrip().startswith("<"):
        title = _TITLE.search(text)
        text = html.unescape(_TAG.sub(" ", title[1] if title else _HIDDEN.sub(" ", text)))
    return safe_text(" ".join(text.split()) or response.reason_phrase, limit)


def content_type(response: httpx.Response) -> str:
    value = str(response.headers.get("content-type", ""))
    return value.partition(";")[0].strip().lower()


def decode(data: bytes | str) -> Message | InvalidMessage:
    try:
        return decode_message(data)
    except InvalidMessage as invalid:
        return invalid


async def read_head(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    """The body, and True; or, when it is longer than ``limit`` bytes, its first ``limit`` and False.

    What lies beyond the limit is not read: closing the response drops it.
    """
    body = bytearray()
    async for chunk in decoded(response):
        if len(body) + len(chunk) > limit:
            body += chunk[: limit - len(body)]
            return bytes(body), False
        body += chunk
    return bytes(body), True


def oversized_answer(head: bytes, limit: int, answer_to: RequestId | None) -> InvalidMessage:
    """A message over ``limit`` judged by its head; on the answer to ``answer_to``, one whose id
    cannot be read is taken as that answer (the module rules of ``http``)."""
    invalid = oversized(head, limit)
    if answer_to is None or invalid.request_id is not None:
        return invalid
    return InvalidMessage(invalid.code, invalid.message, request_id=answer_to, respond=False)


def answers(message: Message | InvalidMessage, request_id: RequestId) -> bool:
    """Whether ``message`` is the answer to ``request_id`` (a broken answer fails that request)."""
    if isinstance(message, InvalidMessage):
        return not message.respond and message.request_id == request_id
    return isinstance(message, Response | ErrorResponse) and message.id == request_id


def closed(request_id: RequestId, reason: str) -> ErrorResponse:
    """The error a request gets when its answer stream broke for good."""
    return ErrorResponse(request_id, RpcError(CONNECTION_CLOSED, f"Connection closed: {reason}"))
