"""The HTTP+SSE transport's own rules that no real peer breaks: the endpoint event, its origin."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from host_receiver.errors import TransportError
from host_receiver.transports.sse import SseTransport

pytestmark = pytest.mark.anyio


@contextmanager
def sse_server(first_event: bytes) -> Iterator[str]:
    """A GET endpoint whose event stream starts with ``first_event``, then stays open briefly."""

    class Handler(BaseHTTPRequestHandler):
        disable_nagle_algorithm = True  # each write goes out at once, as a real server's would

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            self.wfile.write(first_event)
            self.wfile.flush()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)  # a quick shutdown()
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/sse"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("first_event", "refusal"),
    [
        (b"event: endpoint\ndata: http://elsewhere.example/messages\n\n", "an endpoint of another origin"),
        (b"event: endpoint\ndata: //elsewhere.example/messages\n\n", "an endpoint of another origin"),
        (b"event: message\ndata: {}\n\n", "sent a 'message' event where the HTTP+SSE transport's endpoint"),
    ],
    ids=["absolute", "scheme-relative", "no-endpoint-event"],
)
async def test_an_endpoint_event_that_is_missing_or_points_elsewhere_is_refused(
    first_event: bytes, refusal: str
) -> None:
    with sse_server(first_event) as url, pytest.raises(TransportError, match=re.escape(refusal)):
        async with SseTransport(url).connect():
            pass
