"""Where notifications go: a signed webhook (Standard Webhooks) or any Apprise URL.

Rules:

- ``webhook+http://`` and ``webhook+https://`` URLs are :class:`WebhookChannel`:
  a JSON POST of one event, signed per Standard Webhooks (``webhook-id`` the
  notice's idempotency key, ``webhook-timestamp``, ``webhook-signature``
  ``v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`` keyed by the
  base64-decoded secret after ``whsec_``). It is an untrusted endpoint: each
  attempt is bounded by :data:`ATTEMPT_TIMEOUT`, no redirect is followed, and
  at most :data:`MAX_RESPONSE` bytes of the answer are read. It goes straight
  through the lean pool (no proxy, no httpx client: httpx logs each URL). 5xx, 408, 429, a
  timeout or a failed connection may be retried; another status is final.
- Any other URL is an Apprise URL (:class:`AppriseChannel`, the ``notify``
  extra; ``apprise`` is imported only when such a URL is given). Apprise is
  synchronous: each send runs in a worker thread, as plain text (its
  ``TEXT`` body format: no Markdown, mrkdwn or HTML of the server's is
  interpreted by the channel).
- A channel URL holds secrets: it is never logged, shown or put in an
  exception; :func:`redact` is what is shown ("slack://… (channel 2)"). While
  Apprise works for a channel (taking its URL, sending), the records of Apprise
  and of the HTTP libraries it sends through have every piece of its URL
  written ``…``.

Fixed caps (docs/limits.md): ``ATTEMPT_TIMEOUT``, ``MAX_RESPONSE``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import importlib
import json
import logging
import re
import time
from collections.abc import AsyncIterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol, cast

import anyio
import anyio.to_thread
import httpx

from host_receiver._net.pool import LeanTransport
from host_receiver.errors import ChannelError, DeliveryFailed
from host_receiver.notify._events import Notice, message

#: Seconds one delivery attempt may take.
ATTEMPT_TIMEOUT = 10.0
#: Bytes of a webhook's answer read (the rest is not).
MAX_RESPONSE = 64 * 1024
#: The environment variable holding the webhooks' ``whsec_`` secret.
SECRET_ENV = "HOST_RECEIVER_WEBHOOK_SECRET"
_WEBHOOK = ("webhook+http://", "webhook+https://")
_RETRIED_STATUS = frozenset({408, 425, 429})


class Channel(Protocol):
    """One destination of notifications."""

    #: What logs and messages show of it (never its URL).
    label: str
    #: Whether several notices go out as one message (a person's channel) or one by one (a webhook).
    batches: bool

    async def send(self, notices: Sequence[Notice]) -> None:
        """Deliver ``notices`` (one, unless :attr:`batches`); raise DeliveryFailed when not delivered."""
        ...

    async def aclose(self) -> None:
        """Release what it holds (its HTTP connections)."""
        ...


def redact(url: str, number: int) -> str:
    """What may be shown of channel ``number``'s ``url``: its scheme only."""
    scheme = url.split("://", 1)[0] if "://" in url else "?"
    shown = scheme if scheme.replace("+", "").replace("-", "").isalnum() and len(scheme) <= 20 else "?"
    return f"{shown}://… (channel {number})"


def channel_for(url: str, number: int, *, environ: dict[str, str]) -> Channel:
    """The channel of ``url`` (the ``number``-th given); ChannelError says what is wrong, redacted."""
    label = redact(url, number)
    if "://" not in url:
        raise ChannelError(f"{label}: not a URL (webhook+https://..., or an Apprise URL like mailto://...)")
    if url.lower().startswith(_WEBHOOK):
        secret = environ.get(SECRET_ENV)
        if not secret:
            raise ChannelError(f"{label}: a webhook needs its signing secret in ${SECRET_ENV} (whsec_...)")
        return WebhookChannel(url, secret, label=label)
    return AppriseChannel(url, label=label)


def webhook_key(secret: str) -> bytes:
    """The HMAC key of a ``whsec_`` secret; ChannelError when it is not base64."""
    try:
        key = base64.b64decode(secret.removeprefix("whsec_"), validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if not key:
        raise ChannelError(f"${SECRET_ENV} is not a whsec_ secret (whsec_ and base64)")
    return key


def sign(key: bytes, message_id: str, timestamp: int, body: bytes) -> str:
    """The Standard Webhooks ``webhook-signature`` of one message."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


class WebhookChannel:
    """A Standard Webhooks endpoint: one signed JSON POST per event."""

    batches = False

    def __init__(self, url: str, secret: str, *, label: str, timeout: float = ATTEMPT_TIMEOUT) -> None:
        self.label = label
        self.timeout = timeout
        self._url = url.split("+", 1)[1]
        try:
            parsed = httpx.URL(self._url)
        except httpx.InvalidURL:
            parsed = None
        if parsed is None or parsed.scheme not in ("http", "https") or not parsed.host:
            raise ChannelError(f"{label}: not a URL a webhook can be posted to")
        self._key = webhook_key(secret)
        # The pool itself, not an httpx client: httpx logs every request's URL, and this one is a secret.
        self._transport = LeanTransport()

    async def send(self, notices: Sequence[Notice]) -> None:
        for notice in notices:
            await self._post(notice)

    async def _post(self, notice: Notice) -> None:
        body = json.dumps(notice.payload(), ensure_ascii=False, separators=(",", ":")).encode()
        timestamp = int(time.time())
        headers = {
            "content-type": "application/json",
            "webhook-id": notice.key,
            "webhook-timestamp": str(timestamp),
            "webhook-signature": sign(self._key, notice.key, timestamp, body),
        }
        request = httpx.Request("POST", self._url, content=body, headers=headers)
        request.extensions["timeout"] = dict.fromkeys(("connect", "read", "write", "pool"), self.timeout)
        try:
            with anyio.fail_after(self.timeout):
                response = await self._transport.handle_async_request(request)
                try:
                    read = 0
                    async for chunk in cast(AsyncIterable[bytes], response.stream):
                        read += len(chunk)
                        if read >= MAX_RESPONSE:
                            break
                finally:
                    await response.aclose()
        except (TimeoutError, httpx.TimeoutException):
            raise DeliveryFailed(f"no answer within {self.timeout:g} s", retry=True) from None
        except (httpx.HTTPError, OSError) as exc:
            raise DeliveryFailed(f"the connection failed ({type(exc).__name__})", retry=True) from None
        status = response.status_code
        if status >= 500 or status in _RETRIED_STATUS:
            raise DeliveryFailed(f"HTTP {status}", retry=True)
        if not 200 <= status < 300:
            raise DeliveryFailed(f"HTTP {status}", retry=False)

    async def aclose(self) -> None:
        await self._transport.aclose()


class AppriseChannel:
    """Any Apprise URL (e-mail, Slack, Teams, ntfy, ``json://``...): plain text, in a worker thread."""

    batches = True

    def __init__(self, url: str, *, label: str, timeout: float = ATTEMPT_TIMEOUT) -> None:
        self.label = label
        self.timeout = timeout
        try:
            apprise: Any = importlib.import_module("apprise")
        except ModuleNotFoundError:
            raise ChannelError(
                f"{label}: Apprise URLs need the notify extra: pip install 'host-receiver[notify]'"
            ) from None
        self._apprise = apprise
        self._redacting = _Redacting(url)
        self._target = apprise.Apprise()
        with self._redacting.installed():
            taken = self._target.add(url)
        if not taken:
            raise ChannelError(f"{label}: Apprise does not take this URL (see its list of services)")

    async def send(self, notices: Sequence[Notice]) -> None:
        title, body = message(notices)
        text = self._apprise.NotifyFormat.TEXT
        try:
            with anyio.fail_after(self.timeout):
                sent = await anyio.to_thread.run_sync(self._notify, title, body, text, abandon_on_cancel=True)
        except TimeoutError:
            raise DeliveryFailed(f"no answer within {self.timeout:g} s", retry=True) from None
        if not sent:
            raise DeliveryFailed("Apprise could not send it", retry=True)

    def _notify(self, title: str, body: str, body_format: Any) -> bool:
        """Apprise's send (in a worker thread), its loggers redacting this channel's URL meanwhile."""
        with self._redacting.installed():
            return bool(self._target.notify(body=body, title=title, body_format=body_format))

    async def aclose(self) -> None:
        return None


#: The loggers of Apprise and what it sends through, which write URLs (paths, hosts) as they are
#: (a logger's filters do not see its children's records: each is named).
_LIBRARY_LOGGERS = ("apprise", "urllib3", "urllib3.connectionpool", "urllib3.util.retry", "requests")
_PIECES = re.compile(r"[/:@?&=#,;+ ]")


class _Redacting(logging.Filter):
    """Writes ``…`` for every piece of one channel URL (its user, password, host, path segments and
    query values) in the records of Apprise and the libraries it sends through."""

    def __init__(self, url: str) -> None:
        super().__init__()
        rest = url.split("://", 1)[-1]
        pieces = {p for p in _PIECES.split(rest) if len(p) >= 4} | {rest}
        self._pieces = sorted(pieces, key=len, reverse=True)

    @contextmanager
    def installed(self) -> Iterator[None]:
        """On the libraries' loggers for a block (Apprise's work for this channel)."""
        for name in _LIBRARY_LOGGERS:
            logging.getLogger(name).addFilter(self)
        try:
            yield
        finally:
            for name in _LIBRARY_LOGGERS:
                logging.getLogger(name).removeFilter(self)

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        for piece in self._pieces:
            text = text.replace(piece, "…")
        record.msg, record.args = text, None
        return True
