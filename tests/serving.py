"""A stdlib ``socketserver`` served from a background thread, and stopped at once.

``serve_forever(poll)`` looks for ``shutdown()`` every ``poll`` seconds, so that each stop waited
up to that long (0.02 s, in about 300 teardowns of the inner loop); :class:`ServerThread` waits on
the listening socket and on a wake-up socket together, and :meth:`ServerThread.stop` wakes it.
"""

from __future__ import annotations

import selectors
import socket
import socketserver
import threading


class ServerThread:
    """Serves ``server``'s requests from a daemon thread between :meth:`start` and :meth:`stop`."""

    def __init__(self, server: socketserver.TCPServer) -> None:
        self.server = server
        self._lock = threading.Lock()
        self._wake: tuple[socket.socket, socket.socket] | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        with self._lock:
            self._wake = socket.socketpair()
            self._thread = threading.Thread(target=self._serve, args=(self._wake[0],), daemon=True)
            self._thread.start()

    def _serve(self, wake: socket.socket) -> None:
        self.server.timeout = 0  # handle_request() takes the ready connection and never blocks
        with selectors.DefaultSelector() as selector:
            selector.register(self.server.socket, selectors.EVENT_READ)
            selector.register(wake, selectors.EVENT_READ)
            while not any(key.fileobj is wake for key, _ in selector.select()):
                self.server.handle_request()
                self.server.service_actions()

    def stop(self, timeout: float = 5.0) -> None:
        """End the serving thread (requests being answered in their own threads go on), so that the
        server may be closed; from any thread, any number of times."""
        with self._lock:
            wake, thread, self._wake, self._thread = self._wake, self._thread, None, None
        if wake is None or thread is None:
            return
        wake[1].send(b"\0")
        thread.join(timeout)
        for end in wake:
            end.close()
