"""What the notification tests share: loopback receivers (HTTP for webhooks and Apprise's json://,
SMTP for its mailto://) that record what comes and answer as a test scripts them."""

from __future__ import annotations

import base64
import json
import logging
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
import pytest
from aiosmtpd.controller import Controller

from tests.serving import ServerThread

#: A Standard Webhooks secret (whsec_ and base64 of 24 bytes).
SECRET = "whsec_" + base64.b64encode(b"host-receiver-test-secret").decode()


@dataclass
class Received:
    """One request the receiver took: its lowercase headers and body."""

    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class HttpReceiver:
    """A loopback HTTP server: each POST answers with the next scripted action (200 when none left):
    a status, ``"slow"`` (answers after ``slow_s``, or at :meth:`let_go`), or ``"refuse"`` (hangs up,
    then stops listening, so later connections are refused)."""

    script: list[int | str] = field(default_factory=list)
    slow_s: float = 2.0
    received: list[Received] = field(default_factory=list)

    def __post_init__(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True  # the body does not wait for the client's delayed ACK

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = self.rfile.read(length)
                receiver.received.append(Received({k.lower(): v for k, v in self.headers.items()}, body))
                action = receiver.script.pop(0) if receiver.script else 200
                if action == "refuse":
                    self.close_connection = True
                    threading.Thread(target=receiver.stop).start()
                    return
                if action == "slow":
                    receiver._let_go.wait(receiver.slow_s)
                    action = 200
                assert isinstance(action, int)
                self.send_response(action)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._let_go = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._serving = ServerThread(self._server)  # stopped at once, without a shutdown poll
        self._serving.start()
        self._stopped = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def let_go(self) -> None:
        """Answer the ``"slow"`` requests now (those held and those to come)."""
        self._let_go.set()

    def stop(self) -> None:
        self.let_go()
        if not self._stopped:
            self._stopped = True
            self._serving.stop()
            self._server.server_close()

    async def wait_for(self, count: int, timeout: float = 10.0) -> list[Received]:
        """The first ``count`` requests, once they have come (polled: a thread fills the list)."""
        with anyio.fail_after(timeout):
            while len(self.received) < count:  # noqa: ASYNC110 (a server thread fills it)
                await anyio.sleep(0.02)
        return self.received[:count]


class GiveUps(logging.Handler):
    """Notes the notifier's give-up lines, and wakes :meth:`wait` at the first."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []
        self._came: anyio.Event | None = None  # made in the test's event loop

    def emit(self, record: logging.LogRecord) -> None:
        if "given up" in record.getMessage():
            self.lines.append(record.getMessage())
            if self._came is not None:
                self._came.set()

    async def wait(self, timeout: float = 10.0) -> None:
        if self.lines:
            return
        self._came = anyio.Event()
        with anyio.fail_after(timeout):
            await self._came.wait()


@pytest.fixture
def give_ups() -> Iterator[GiveUps]:
    handler = GiveUps()
    logger = logging.getLogger("host_receiver.notify")
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)


@pytest.fixture
def http_receiver() -> Iterator[HttpReceiver]:
    receiver = HttpReceiver()
    yield receiver
    receiver.stop()


class _Mailbox:
    def __init__(self) -> None:
        self.messages: list[Message] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append(message_from_bytes(envelope.content))
        return "250 OK"


@dataclass
class SmtpServer:
    """A loopback SMTP server (aiosmtpd) keeping every message."""

    port: int
    mailbox: _Mailbox

    async def wait_for(self, count: int, timeout: float = 10.0) -> list[Message]:
        with anyio.fail_after(timeout):
            while len(self.mailbox.messages) < count:  # noqa: ASYNC110 (aiosmtpd's thread fills it)
                await anyio.sleep(0.02)
        return self.mailbox.messages[:count]


@pytest.fixture
def smtp_server() -> Iterator[SmtpServer]:
    with socket.socket() as probe:  # aiosmtpd's controller needs a port of its own choosing
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    mailbox = _Mailbox()
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    yield SmtpServer(port, mailbox)
    controller.stop()
