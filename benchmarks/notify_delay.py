"""From an inbox item's creation to its notification sent: the delay a person waits for.

``.venv/bin/python -m benchmarks.notify_delay [--items N] [--backend asyncio|trio]``

A :class:`~host_receiver.web.WebInbox` with a :class:`~host_receiver.notify.Notifier`
and one signed webhook channel to a loopback HTTP server (the standard
library's, in a thread of its own). Each item is a form the inbox is asked to
fill, one after the other: the clock starts as the hook is called and stops as
the receiver has read the whole POST of its ``item.waiting``; the item is
then answered (its ``item.answered`` POST is waited for too, not timed), so
every item meets an idle channel. Printed: p50 and p99 in milliseconds over
``--items`` (after 20 for warm-up). Measured, not asserted.
"""

from __future__ import annotations

import argparse
import base64
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio

from host_receiver.notify import Notifier, WebhookChannel
from host_receiver.web import WebInbox
from tests.web.conftest import form_view

SECRET = "whsec_" + base64.b64encode(b"benchmark-secret-24-bytes").decode()
WARM_UP = 20


class _Receiver:
    """A loopback webhook endpoint noting when each POST arrived whole (perf_counter)."""

    def __init__(self) -> None:
        self.arrivals: list[float] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", "0")))
                receiver.arrivals.append(time.perf_counter())
                self.send_response(204)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"webhook+http://127.0.0.1:{self.server.server_address[1]}/hook"

    async def until(self, count: int) -> None:
        while len(self.arrivals) < count:  # noqa: ASYNC110 (a server thread fills it)
            await anyio.sleep(0.0005)


async def measure(items: int) -> list[float]:
    receiver = _Receiver()
    notifier = Notifier([WebhookChannel(receiver.url, SECRET, label="bench")])
    inbox = WebInbox(timeout=60, notifier=notifier, host="bench")
    inbox.public_url = "http://inbox.test"
    delays: list[float] = []
    async with notifier, anyio.create_task_group() as group:
        for number in range(items + WARM_UP):
            seen = len(receiver.arrivals)
            started = time.perf_counter()
            group.start_soon(inbox.fill_form, form_view())
            await receiver.until(seen + 1)
            if number >= WARM_UP:
                delays.append((receiver.arrivals[seen] - started) * 1000)
            inbox.answer(inbox.state()["pending"][0]["id"], {"action": "decline"})
            await receiver.until(seen + 2)
    receiver.server.shutdown()
    return delays


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=500)
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    args = parser.parse_args()
    delays = anyio.run(measure, args.items, backend=args.backend)
    cuts = statistics.quantiles(delays, n=100)
    print(
        f"creation -> notification sent ({args.items} items, {args.backend}): "
        f"p50 {cuts[49]:.2f} ms, p99 {cuts[98]:.2f} ms"
    )


if __name__ == "__main__":
    main()
