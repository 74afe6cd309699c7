"""The transport of :mod:`providers.backends._calls` for an SDK built on ``httpx2`` (``anthropic`` 2.x).

``httpx2`` is a fork of httpx under another name: an SDK on it takes only an
``httpx2`` client. :func:`httpx2_client` is an ordinary one whose transport,
:class:`Httpx2Bridge`, hands every request to the httpx transport of
:func:`providers.backends._client.call_transport`, so the pool, the size cap and the
read-timeout rule are the same as for every other provider. Exceptions come
back as ``httpx2``'s of the same name, which the SDK retries as its own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import httpx2

from ._calls import LiveCalls
from ._client import call_transport
from ._settings import HttpTransport

__all__ = ["Httpx2Bridge", "httpx2_client"]


def httpx2_client(base_url: str, transport: HttpTransport, calls: LiveCalls) -> httpx2.AsyncClient:
    """An ``httpx2`` client for an SDK built on it, sending through :func:`call_transport`."""
    bridge = Httpx2Bridge(call_transport(base_url, transport, calls))
    return httpx2.AsyncClient(transport=bridge, follow_redirects=True)


class Httpx2Bridge(httpx2.AsyncBaseTransport):
    """An ``httpx2`` transport that sends every request through an httpx transport of ours."""

    def __init__(self, transport: httpx.AsyncBaseTransport) -> None:
        self._transport = transport
        #: The last URL sent, as text and parsed (a provider posts to one URL, call after call).
        self._last = ("", httpx.URL())

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        # The request as httpx2 made it: its headers (``Host`` and ``Content-Length`` included)
        # and its body as they are, given as a stream so that httpx adds and copies nothing.
        sent = httpx.Request(
            request.method,
            self._url(request.url),
            headers=request.headers.raw,
            stream=httpx.ByteStream(await request.aread()),
            extensions=request.extensions,
        )
        try:
            response = await self._transport.handle_async_request(sent)
        except httpx.HTTPError as exc:
            raise _as_httpx2(exc) from exc
        return httpx2.Response(
            response.status_code,
            headers=response.headers.raw,
            stream=_Body(response),
            extensions={k: v for k, v in response.extensions.items() if k != "network_stream"},
        )

    def _url(self, url: httpx2.URL) -> httpx.URL:
        """``url`` as httpx's, parsed again only when it is not the last one."""
        text = str(url)
        if text != self._last[0]:
            self._last = (text, httpx.URL(text))
        return self._last[1]

    async def aclose(self) -> None:
        await self._transport.aclose()


class _Body(httpx2.AsyncByteStream):
    """An httpx response's body as an ``httpx2`` byte stream (its errors as ``httpx2``'s)."""

    def __init__(self, response: httpx.Response) -> None:
        self._response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.aiter_raw():
                yield chunk
        except httpx.HTTPError as exc:
            raise _as_httpx2(exc) from exc

    async def aclose(self) -> None:
        await self._response.aclose()


def _as_httpx2(exc: httpx.HTTPError) -> Exception:
    """``exc`` as the ``httpx2`` exception of the same name (the fork keeps the hierarchy)."""
    kind = getattr(httpx2, type(exc).__name__, None)
    if not (isinstance(kind, type) and issubclass(kind, Exception)):
        kind = httpx2.TransportError if isinstance(exc, httpx.TransportError) else httpx2.HTTPError
    return kind(str(exc))
