"""The browser step of the authorization code flow: a hook a host implements, and two of ours.

Rules:

- A :class:`Browser` opens a redirect target (:meth:`Browser.redirect`):
  an async context that yields a :class:`RedirectTarget` whose
  ``redirect_uri`` is known before the client registers and which, given
  the authorization URL, returns the query parameters of the redirect back
  to ``redirect_uri`` (``code``, ``state``, ``iss`` or ``error``). The flow
  checks everything in them; a browser only carries them.
- The flow offers the redirect URI it used before (``preferred``), so that a
  registered client stays valid; a browser may give another one, and the
  flow then registers again (or, for a pre-registered client, fails).
- :class:`SystemBrowser` listens on a loopback port (``127.0.0.1``; port 0
  picks a free one) for one GET of the redirect path, answers it with a short
  page, and opens the URL with :mod:`webbrowser` (it also shows the URL, for
  a browser that does not open). Other paths get 404. It waits at most
  ``timeout`` seconds.
- :class:`HeadlessBrowser` GETs the authorization URL itself, following no
  redirect, and takes the parameters from the ``Location`` of a 3xx answer
  that points to ``redirect_uri``; anything else (a login page) is an
  :class:`AuthorizationDenied` that says a person is needed. Nothing listens
  on its redirect URI.
- Neither logs the URLs' query strings (they hold ``state`` and the code);
  during the headless GET, ``code``, ``state`` and ``iss`` values are masked in
  httpx's and httpcore's records too (httpcore logs the ``Location`` header at
  DEBUG).

Fixed caps (docs/limits.md): ``_MAX_REQUEST``.
"""

from __future__ import annotations

import logging
import re
import sys
import webbrowser
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Protocol
from urllib.parse import parse_qsl, urljoin, urlsplit

import anyio
import anyio.abc
import anyio.to_thread
import h11
import httpx

from host_receiver.auth._quote import safe_url
from host_receiver.errors import AuthorizationDenied
from host_receiver.sanitize import safe_logger

__all__ = [
    "DEFAULT_HEADLESS_REDIRECT_URI",
    "Browser",
    "HeadlessBrowser",
    "RedirectTarget",
    "SystemBrowser",
]

logger = safe_logger("host_receiver.auth")

#: Where :class:`HeadlessBrowser` says the code should go (nothing listens there).
DEFAULT_HEADLESS_REDIRECT_URI = "http://127.0.0.1:33418/callback"
_CALLBACK_PATH = "/callback"
_MAX_REQUEST = 16 * 1024
_PAGE = (
    b"<!doctype html><html><head><meta charset='utf-8'><title>host-receiver</title></head>"
    b"<body><p>host-receiver received the authorization response. You can close this window.</p>"
    b"</body></html>"
)


class RedirectTarget(Protocol):
    """One redirect URI, ready to receive one authorization response."""

    @property
    def redirect_uri(self) -> str: ...

    async def authorize(self, authorization_url: str) -> Mapping[str, str]:
        """Send the user agent to ``authorization_url``; the redirect's query parameters."""
        ...


class Browser(Protocol):
    """The browser step (a host's own window, a device prompt, ...)."""

    def redirect(self, preferred: str | None) -> AbstractAsyncContextManager[RedirectTarget]:
        """A redirect target, on ``preferred`` when the browser can use it."""
        ...


def _same_endpoint(location: str, redirect_uri: str) -> bool:
    """Whether ``location`` goes to ``redirect_uri`` (scheme, host, port and path; the query aside)."""

    def key(url: str) -> tuple[str, str, int | None, str]:
        parts = urlsplit(url)
        return (parts.scheme.lower(), (parts.hostname or "").lower(), parts.port, parts.path or "/")

    try:
        return key(location) == key(redirect_uri)
    except ValueError:
        return False


# --- headless ------------------------------------------------------------------------


class _Redact(logging.Filter):
    """Masks ``state``, ``code`` and ``iss`` values in httpx's and httpcore's records (they log
    request URLs, and at DEBUG response headers: the ``Location`` that carries the code)."""

    loggers = ("httpx", "httpcore.http11", "httpcore.http2", "httpcore.connection")
    pattern = re.compile(r"(?<=[?&])(code|state|iss)=[^&'\"\s]*")

    def filter(self, record: logging.LogRecord) -> bool:
        if record.args:
            record.msg, record.args = record.getMessage(), ()
        if isinstance(record.msg, str):
            record.msg = self.pattern.sub(r"\1=***", record.msg)
        return True


class _HeadlessTarget:
    def __init__(self, redirect_uri: str, timeout: float) -> None:
        self.redirect_uri = redirect_uri
        self._timeout = timeout

    async def authorize(self, authorization_url: str) -> Mapping[str, str]:
        redact = _Redact()
        for name in redact.loggers:
            logging.getLogger(name).addFilter(redact)
        try:
            async with httpx.AsyncClient(timeout=self._timeout, follow_redirects=False) as http:
                response = await http.get(authorization_url)
        except httpx.HTTPError as exc:
            raise AuthorizationDenied(
                f"the authorization endpoint {safe_url(authorization_url)} could not be reached "
                f"({type(exc).__name__})"
            ) from None
        finally:
            for name in redact.loggers:
                logging.getLogger(name).removeFilter(redact)
        location = response.headers.get("location")
        if not response.is_redirect or not location:
            raise AuthorizationDenied(
                f"the authorization endpoint {safe_url(authorization_url)} answered HTTP "
                f"{response.status_code} instead of redirecting back: it wants a person to sign in; "
                "use the system browser (--auth-browser system)"
            )
        target = urljoin(authorization_url, location)
        if not _same_endpoint(target, self.redirect_uri):
            raise AuthorizationDenied(
                f"the authorization endpoint redirected to {safe_url(target)}, not to the redirect URI "
                "(a sign-in page?); use the system browser (--auth-browser system)"
            )
        return dict(parse_qsl(urlsplit(target).query, keep_blank_values=True))


class HeadlessBrowser:
    """Fetches the authorization URL itself (no person): for servers that grant at once, and tests."""

    def __init__(self, redirect_uri: str | None = None, *, timeout: float = 30.0) -> None:
        self.redirect_uri = redirect_uri  # None: the one used before, else DEFAULT_HEADLESS_REDIRECT_URI
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"HeadlessBrowser({self.redirect_uri!r})"

    @asynccontextmanager
    async def redirect(self, preferred: str | None) -> AsyncIterator[RedirectTarget]:
        yield _HeadlessTarget(self.redirect_uri or preferred or DEFAULT_HEADLESS_REDIRECT_URI, self.timeout)


# --- the system browser and a loopback listener ----------------------------------------


def _announce(url: str) -> None:
    print(
        "host-receiver: opening your browser to authorize; if it does not open, visit:\n  " + url,
        file=sys.stderr,
        flush=True,
    )


class _LoopbackTarget:
    def __init__(
        self,
        listener: anyio.abc.Listener[anyio.abc.SocketStream],
        redirect_uri: str,
        *,
        timeout: float,
        open_url: Callable[[str], object],
        announce: Callable[[str], None],
    ) -> None:
        self.redirect_uri = redirect_uri
        self._listener = listener
        self._path = urlsplit(redirect_uri).path or "/"
        self._timeout = timeout
        self._open_url = open_url
        self._announce = announce
        self._answer: dict[str, str] | None = None
        self._done = anyio.Event()

    async def authorize(self, authorization_url: str) -> Mapping[str, str]:
        with anyio.move_on_after(self._timeout):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self._listener.serve, self._handle, tasks)
                self._announce(authorization_url)
                await anyio.to_thread.run_sync(self._open_url, authorization_url, abandon_on_cancel=True)
                await self._done.wait()
                tasks.cancel_scope.cancel()
        if self._answer is None:
            raise AuthorizationDenied(
                f"no authorization response reached {self.redirect_uri} within {self._timeout:g} s"
            )
        return self._answer

    async def _handle(self, stream: anyio.abc.SocketStream) -> None:
        async with stream:
            with anyio.move_on_after(10):
                await self._exchange(stream)

    async def _exchange(self, stream: anyio.abc.SocketStream) -> None:
        connection = h11.Connection(h11.SERVER, max_incomplete_event_size=_MAX_REQUEST)
        while True:
            event = connection.next_event()
            if event is h11.NEED_DATA:
                try:
                    data = await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    return
                connection.receive_data(data)
                continue
            if not isinstance(event, h11.Request):
                return
            target = urlsplit(event.target.decode("ascii", "replace"))
            if event.method != b"GET" or target.path != self._path or self._done.is_set():
                await self._respond(stream, connection, 404, b"not found")
                return
            self._answer = dict(parse_qsl(target.query, keep_blank_values=True))
            await self._respond(stream, connection, 200, _PAGE)
            self._done.set()
            return

    async def _respond(
        self, stream: anyio.abc.SocketStream, connection: h11.Connection, status: int, body: bytes
    ) -> None:
        headers = [
            (b"content-type", b"text/html; charset=utf-8"),
            (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"no-store"),
            (b"connection", b"close"),
        ]
        try:
            await stream.send(connection.send(h11.Response(status_code=status, headers=headers)) or b"")
            await stream.send(connection.send(h11.Data(data=body)) or b"")
            await stream.send(connection.send(h11.EndOfMessage()) or b"")
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, h11.LocalProtocolError):
            pass


class SystemBrowser:
    """Opens the system browser and takes the code on a loopback redirect listener."""

    def __init__(
        self,
        redirect_uri: str | None = None,
        *,
        timeout: float = 300.0,
        open_url: Callable[[str], object] = webbrowser.open,
        announce: Callable[[str], None] = _announce,
    ) -> None:
        self.redirect_uri = redirect_uri
        self.timeout = timeout
        self.open_url = open_url
        self.announce = announce

    def __repr__(self) -> str:
        return f"SystemBrowser({self.redirect_uri!r})"

    @asynccontextmanager
    async def redirect(self, preferred: str | None) -> AsyncIterator[RedirectTarget]:
        wanted = self.redirect_uri or preferred
        listener: anyio.abc.Listener[anyio.abc.SocketStream] | None = None
        uri = wanted
        if wanted is not None:
            parts = urlsplit(wanted)
            try:
                listener = await anyio.create_tcp_listener(
                    local_host=parts.hostname or "127.0.0.1", local_port=parts.port or 80
                )
            except OSError:
                if self.redirect_uri is not None:
                    raise AuthorizationDenied(
                        f"cannot listen on the redirect URI {safe_url(wanted)}"
                    ) from None
                logger.info("the earlier redirect port is busy; using a new one")
        if listener is None:
            listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
            port = listener.extra(anyio.abc.SocketAttribute.local_port)
            uri = f"http://127.0.0.1:{port}{_CALLBACK_PATH}"
        assert uri is not None
        async with listener:
            yield _LoopbackTarget(
                listener, uri, timeout=self.timeout, open_url=self.open_url, announce=self.announce
            )
