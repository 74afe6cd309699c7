"""HTTP+SSE (2024-11-05) as the fallback of a Streamable HTTP URL, for every client connection.

Rules (2026-07-28 streamable-http.mdx, "Backward Compatibility"):

- A Streamable HTTP connection whose handshake gets HTTP 400, 404 or 405
  (:data:`OLD_SERVER`) without a modern JSON-RPC error (its server predates
  Streamable HTTP) falls back to the HTTP+SSE transport at the same URL,
  with the same headers, auth and size limit, and the ``initialize``
  handshake; unless the protocol is pinned to 2026-07-28, when it never
  falls back. A server that serves neither fails with both answers named.
- ``ClientConnection.connect`` and a ``Host`` alike fall back. The memory of
  URLs found to serve only HTTP+SSE is the caller's: a ``Host`` keeps one
  per host (a URL it found goes straight to HTTP+SSE next time, and is tried
  afresh, and forgotten, if that fails); a lone connection has none, as it
  connects once and nothing outlives it to remember (no process-wide state).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import TypeVar

from host_receiver.client.options import AUTO, ConnectionOptions
from host_receiver.errors import HttpStatusError, TransportError
from host_receiver.protocol.versions import LATEST_LEGACY_VERSION, LEGACY_VERSIONS
from host_receiver.sanitize import safe_logger
from host_receiver.transports.base import Transport
from host_receiver.transports.http import HttpTransport
from host_receiver.transports.sse import SseTransport

__all__ = ["OLD_SERVER", "as_sse", "falling_back"]

logger = safe_logger("host_receiver.client.connection")

#: The statuses of a Streamable HTTP POST that may mean a server of the HTTP+SSE transport.
OLD_SERVER = frozenset({400, 404, 405})

Connection = TypeVar("Connection")
#: Opens a connection over a transport, given the version its origin agreed on before (if known).
Opener = Callable[[Transport, str | None], AbstractAsyncContextManager[Connection]]


@asynccontextmanager
async def falling_back(
    transport: Transport,
    options: ConnectionOptions,
    open_over: Opener[Connection],
    *,
    known_version: str | None,
    label: str,
    sse_urls: set[str] | None,
) -> AsyncIterator[Connection]:
    """The connection ``open_over(transport, known_version)`` opens, or the HTTP+SSE one it falls
    back to (rules above); ``sse_urls``: the URLs the caller found to serve only HTTP+SSE, kept up
    to date (None: none remembered). ``label`` names the server in logs."""
    legacy_allowed = options.protocol == AUTO or options.protocol in LEGACY_VERSIONS
    if not (isinstance(transport, HttpTransport) and legacy_allowed):
        async with open_over(transport, known_version) as connection:
            yield connection
        return
    async with AsyncExitStack() as stack:
        opened: Connection | None = None
        if sse_urls is not None and transport.url in sse_urls:
            try:  # as it was found before
                opened = await stack.enter_async_context(open_over(as_sse(transport), LATEST_LEGACY_VERSION))
            except TransportError as exc:
                logger.info(
                    "%s: the HTTP+SSE transport it used before failed (%s); trying afresh", label, exc
                )
                sse_urls.discard(transport.url)
        if opened is None:
            try:
                opened = await stack.enter_async_context(open_over(transport, known_version))
            except HttpStatusError as refused:
                if refused.status not in OLD_SERVER:
                    raise
                logger.info(
                    "%s: Streamable HTTP got HTTP %d; trying the HTTP+SSE transport", label, refused.status
                )
                try:
                    opened = await stack.enter_async_context(
                        open_over(as_sse(transport), LATEST_LEGACY_VERSION)
                    )
                except TransportError as exc:
                    again = isinstance(exc, HttpStatusError) and exc.status == refused.status
                    why = f" (HTTP {refused.status} there too)" if again else f": {exc}"
                    raise HttpStatusError(
                        f"{refused}; nor does it serve the HTTP+SSE transport{why}", refused.status
                    ) from None
                if sse_urls is not None:
                    sse_urls.add(transport.url)
        yield opened


def as_sse(http: HttpTransport) -> SseTransport:
    """The HTTP+SSE transport at ``http``'s URL, with its headers, auth and size limit."""
    return SseTransport(
        http.url, headers=http.headers, auth=http.auth, max_message_size=http.max_message_size
    )
