"""A 2026-07-28 server of the tasks extension that sends ``notifications/tasks``, on stdio or HTTP.

Usage: python task_news_server.py --record FILE [--mode notify|drop|decline|quiet] [--port 0]

Without ``--port`` it speaks newline-delimited JSON on stdin/stdout; with it,
Streamable HTTP at ``http://127.0.0.1:PORT/mcp`` (it prints ``LISTENING
<url>`` once the socket accepts). Every message the client sends is appended
to ``--record`` as one JSON line, for the test to validate.

- ``server/discover`` advertises the tasks extension; ``tools/list`` lists
  ``deploy``.
- ``tools/call`` of ``deploy`` creates a task (``working``, ``pollIntervalMs``
  60 s in ``notify`` mode, 100 ms in ``drop`` mode) and answers it;
  ``tasks/get`` answers the task's state (a task id it never made is taken as
  made now, with a ttl of a minute: a server that says a resumed task is
  younger than the client knows it is), ``tasks/cancel`` acks.
- ``subscriptions/listen`` answers on its own stream (the POST's SSE answer,
  or stdout): ``notifications/subscriptions/acknowledged`` listing the task
  ids it asked for, then ``notifications/tasks`` about them, each tagged with
  the listen request's id.
- ``notify``: once a subscription to a task is acknowledged, the task moves
  to ``working`` ("building") and then ``completed``; each state is notified
  twice (a repeated notification), and the task is never finished any other
  way, so a client sees its end only through the notifications (polls would
  come once a minute).
- ``drop``: each subscription is acknowledged, then its stream ends (HTTP:
  the connection closes without an answer; stdio: ``notifications/cancelled``
  naming the listen request, as a server tears a subscription down) and no
  notification is ever sent; the task
  completes one second after it was created, seen only by polling.
- ``decline``: as ``drop``, but each subscription is acknowledged without
  the task (the server sends no notifications about it) and stays open until
  the client closes it.
- ``quiet``: as ``drop``, but each subscription is acknowledged with the task
  and stays open, silent: the completion is never notified (a stream gone
  quiet without ending).
"""

from __future__ import annotations

import argparse
import json
import queue
import sys
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

TASKS = "io.modelcontextprotocol/tasks"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
DONE = {"content": [{"type": "text", "text": "deployed"}], "isError": False}


def now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


class Server:
    """The tasks and subscriptions, shared by both transports."""

    def __init__(self, mode: str, record: Path) -> None:
        self.mode = mode
        self.record_path = record
        self.lock = threading.Lock()
        self.tasks: dict[str, dict[str, Any]] = {}
        self.subscriptions: dict[Any, tuple[list[str], queue.Queue[dict[str, Any] | None]]] = {}

    def record(self, message: dict[str, Any]) -> None:
        with self.lock, self.record_path.open("a") as out:
            out.write(json.dumps(message) + "\n")

    def answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The result of a request (subscriptions/listen apart)."""
        if method == "server/discover":
            return {
                "resultType": "complete",
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}, "extensions": {TASKS: {}}},
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "task-news", "version": "1"}},
            }
        if method == "tools/list":
            return {
                "resultType": "complete",
                "tools": [{"name": "deploy", "inputSchema": {"type": "object"}}],
            }
        if method == "tools/call":
            return {"resultType": "task", **self.create()}
        if method == "tasks/get":
            with self.lock:
                task = self.tasks.setdefault(params["taskId"], self.new_task(params["taskId"], 60_000))
                return {"resultType": "complete", **task}
        if method == "tasks/cancel":
            return {"resultType": "complete"}
        raise KeyError(method)

    def new_task(self, task_id: str, ttl_ms: int) -> dict[str, Any]:
        stamp, poll = now(), 60_000 if self.mode == "notify" else 100
        return {"taskId": task_id, "status": "working", "createdAt": stamp, "lastUpdatedAt": stamp,
                "ttlMs": ttl_ms, "pollIntervalMs": poll}  # fmt: skip

    def create(self) -> dict[str, Any]:
        with self.lock:
            task_id = f"T{len(self.tasks) + 1}"
            task = self.new_task(task_id, 600_000)
            self.tasks[task_id] = task
        if self.mode != "notify":
            threading.Thread(target=self.finish_later, args=(task_id,), daemon=True).start()
        return dict(task)

    def finish_later(self, task_id: str) -> None:
        time.sleep(1.0)
        self.update(task_id, status="completed", result=DONE, publish=False)

    def update(self, task_id: str, *, publish: bool = True, **changes: Any) -> None:
        with self.lock:
            task = self.tasks[task_id]
            task.update(changes, lastUpdatedAt=now())
            state = dict(task)
        if publish:
            for _ in range(2):  # every notification twice: the client must not show it twice
                self.publish(state)

    def publish(self, task: dict[str, Any]) -> None:
        with self.lock:
            listeners = [q for ids, q in self.subscriptions.values() if task["taskId"] in ids]
        for listener in listeners:
            listener.put(task)

    def run_task(self, task_id: str) -> None:
        time.sleep(0.2)
        self.update(task_id, status="working", statusMessage="building")
        time.sleep(0.2)
        self.update(task_id, status="completed", statusMessage="done", result=DONE)

    def subscribe(self, request_id: Any, params: dict[str, Any]) -> tuple[dict[str, Any], queue.Queue[Any]]:
        """The acknowledgement of a new subscription, and the queue its notifications come through."""
        asked = params.get("notifications", {}).get("taskIds", [])
        with self.lock:
            honored = [t for t in asked if t in self.tasks and self.mode != "decline"]
            events: queue.Queue[dict[str, Any] | None] = queue.Queue()
            self.subscriptions[request_id] = (honored, events)
        if self.mode == "notify":
            for task_id in honored:
                threading.Thread(target=self.run_task, args=(task_id,), daemon=True).start()
        ack = {"notifications": {"taskIds": honored}, "_meta": {SUBSCRIPTION_ID: request_id}}
        return {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": ack}, events

    def unsubscribe(self, request_id: Any) -> None:
        with self.lock:
            gone = self.subscriptions.pop(request_id, None)
        if gone is not None:
            gone[1].put(None)

    def notification(self, request_id: Any, task: dict[str, Any]) -> dict[str, Any]:
        params = {**task, "_meta": {SUBSCRIPTION_ID: request_id}}
        return {"jsonrpc": "2.0", "method": "notifications/tasks", "params": params}


def serve_stdio(server: Server) -> None:
    out_lock = threading.Lock()

    def write(message: dict[str, Any]) -> None:
        with out_lock:
            sys.stdout.write(json.dumps(message) + "\n")
            sys.stdout.flush()

    def stream(request_id: Any, events: queue.Queue[dict[str, Any] | None]) -> None:
        if server.mode == "drop":
            time.sleep(0.1)
            server.unsubscribe(request_id)
            ended = {"requestId": request_id, "reason": "the server tears the subscription down"}
            write({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": ended})
            return
        while (task := events.get()) is not None:
            write(server.notification(request_id, task))

    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        server.record(message)
        method, params = message.get("method"), message.get("params") or {}
        if "id" not in message:
            if method == "notifications/cancelled":
                server.unsubscribe(params.get("requestId"))
            continue
        if method == "subscriptions/listen":
            ack, events = server.subscribe(message["id"], params)
            write(ack)
            threading.Thread(target=stream, args=(message["id"], events), daemon=True).start()
            continue
        try:
            write({"jsonrpc": "2.0", "id": message["id"], "result": server.answer(str(method), params)})
        except KeyError:
            write({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "no"}})


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    @property
    def app(self) -> Server:
        return self.server.app  # type: ignore[attr-defined,no-any-return]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
        self.app.record(body)
        method, params = body.get("method"), body.get("params") or {}
        if "id" not in body:
            self.send_response(202)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        if method == "subscriptions/listen":
            self.listen(body["id"], params)
            return
        try:
            answer: dict[str, Any] = {
                "jsonrpc": "2.0",
                "id": body["id"],
                "result": self.app.answer(method, params),
            }
            status = 200
        except KeyError:
            answer, status = (
                {"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32601, "message": "no"}},
                404,
            )
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def listen(self, request_id: Any, params: dict[str, Any]) -> None:
        ack, events = self.app.subscribe(request_id, params)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            self.event(ack)
            if self.app.mode == "drop":
                time.sleep(0.1)
                return  # the stream drops: no answer
            while True:
                try:
                    task = events.get(timeout=0.2)
                except queue.Empty:
                    self.wfile.write(b":\n\n")  # keep-alive; fails once the client has gone
                    self.wfile.flush()
                    continue
                if task is None:
                    return
                self.event(self.app.notification(request_id, task))
        except OSError:
            pass
        finally:
            self.app.unsubscribe(request_id)

    def event(self, message: dict[str, Any]) -> None:
        self.wfile.write(f"event: message\ndata: {json.dumps(message)}\n\n".encode())
        self.wfile.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--record", type=Path, required=True)
    parser.add_argument("--mode", choices=("notify", "drop", "decline", "quiet"), default="notify")
    parser.add_argument("--port", type=int)
    args = parser.parse_args()
    server = Server(args.mode, args.record)
    if args.port is None:
        serve_stdio(server)
        return
    httpd = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    httpd.daemon_threads = True
    httpd.app = server  # type: ignore[attr-defined]
    print(f"LISTENING http://127.0.0.1:{httpd.server_address[1]}/mcp", flush=True)
    httpd.serve_forever()


if __name__ == "__main__":
    main()
