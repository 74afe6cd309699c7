"""A tiny MCP server over stdio written with the standard library alone, for failure tests.

The SDK peers are well-behaved; this one misbehaves on purpose. Run it with any
Python 3.11 (the project's own interpreter is fine: it imports nothing else):

    python tests/interop/peers/raw_server.py --mode MODE [--record FILE]

Modes:
- ``garbage``: before answering ``initialize`` and around every answer, prints
  frames that are not valid messages (not JSON, an array, JSON-RPC 1.0, a
  response to an id never sent, a request whose method is a number). Otherwise
  it behaves. Tools: ``echo(text)``; ``sample(prompt)`` sends a plain
  ``sampling/createMessage`` to the client and returns its result;
  ``replies()`` returns every response the client has sent so far (to check
  what the client answered to the malformed request with id ``"bad-1"``).
- ``die``: tool ``start_task(prompt)`` sends a task-augmented sampling request
  and returns the client's ``CreateTaskResult``; tool ``die()`` exits at once
  (status 3) without answering, whatever the client is still doing for it.
- ``sample-then-exit``: after ``notifications/initialized`` it sends a
  task-augmented sampling request, waits on ``tasks/result``, sends a plain
  form elicitation, writes both outcomes as JSON to ``--record``, and exits 0.
- ``exit-after-init``: exits 0 right after ``notifications/initialized``.

Logs go to stderr; stdout is the protocol channel.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from typing import Any

PROTOCOL_VERSION = "2025-11-25"
GARBAGE = (
    "this is not json",
    "[1, 2, 3]",
    '{"jsonrpc": "1.0", "id": 99, "method": "ping"}',
    '{"jsonrpc": "2.0", "id": 424242, "result": {}}',
    '{"jsonrpc": "2.0", "id": "bad-1", "method": 42}',
    '{"jsonrpc": "2.0"',
)
TOOLS = [
    {"name": name, "inputSchema": {"type": "object"}, "description": description}
    for name, description in (
        ("echo", "Returns its text argument."),
        ("sample", "Asks the client for a plain sampling/createMessage."),
        ("replies", "Every response the client has sent so far."),
        ("start_task", "Starts a sampling task and returns the CreateTaskResult."),
        ("die", "Exits abruptly, without answering."),
    )
]


class Server:
    """Reads JSON lines from stdin, answers what it must, and sends its own requests."""

    def __init__(self, mode: str, record: str | None) -> None:
        self.mode = mode
        self.record = record
        self.ids = itertools.count(1)
        self.replies: list[dict[str, Any]] = []

    # --- wire ------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    def garbage(self) -> None:
        if self.mode == "garbage":
            for line in GARBAGE:
                sys.stdout.write(line + "\n")
            sys.stdout.write("\n")  # a blank line, which is no frame at all
            sys.stdout.flush()

    def read(self) -> dict[str, Any]:
        line = sys.stdin.readline()
        if not line:
            sys.exit(0)  # the client closed stdin
        message: dict[str, Any] = json.loads(line)
        return message

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request; serve the client meanwhile; return the response (result or error)."""
        request_id = next(self.ids)
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        while True:
            message = self.read()
            if "method" not in message:
                self.replies.append(message)
                if message.get("id") == request_id:
                    return message
                continue
            self.handle(message)

    # --- serving ---------------------------------------------------------------

    def serve(self) -> None:
        self.garbage()
        while True:
            message = self.read()
            if "method" in message:
                self.handle(message)
            else:
                self.replies.append(message)

    def handle(self, message: dict[str, Any]) -> None:
        method, request_id = message["method"], message.get("id")
        if request_id is None:
            if method == "notifications/initialized":
                self.initialized()
            return
        if method == "initialize":
            self.garbage()
            result: dict[str, Any] = {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": f"raw-{self.mode}", "version": "0"},
            }
        elif method == "ping":
            result = {}
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call":
            result = self.call_tool(message["params"]["name"], message["params"].get("arguments") or {})
        else:
            self.send(
                {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}}
            )
            return
        self.garbage()
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def initialized(self) -> None:
        if self.mode == "exit-after-init":
            sys.exit(0)
        if self.mode == "sample-then-exit":
            outcome: dict[str, Any] = {}
            created = self.request("sampling/createMessage", sampling_params("from raw_server", task=True))
            outcome["created"] = created
            if "result" in created:
                task_id = created["result"]["task"]["taskId"]
                outcome["result"] = self.request("tasks/result", {"taskId": task_id})
            outcome["elicit"] = self.request(
                "elicitation/create",
                {
                    "mode": "form",
                    "message": "Pick a colour",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"colour": {"type": "string", "default": "blue"}},
                    },
                },
            )
            if self.record:
                with open(self.record, "w", encoding="utf-8") as out:
                    json.dump(outcome, out)
            sys.exit(0)

    def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        if name == "echo":
            return text_result(str(arguments.get("text", "")))
        if name == "sample":
            self.garbage()
            answer = self.request("sampling/createMessage", sampling_params(str(arguments.get("prompt", ""))))
            return text_result(json.dumps(answer))
        if name == "replies":
            return text_result(json.dumps(self.replies))
        if name == "start_task":
            answer = self.request(
                "sampling/createMessage", sampling_params(str(arguments.get("prompt", "")), task=True)
            )
            return text_result(json.dumps(answer))
        if name == "die":
            print("raw_server: dying", file=sys.stderr, flush=True)
            os._exit(3)
        return {"content": [{"type": "text", "text": f"unknown tool {name}"}], "isError": True}


def sampling_params(prompt: str, *, task: bool = False) -> dict[str, Any]:
    params: dict[str, Any] = {
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
        "maxTokens": 50,
    }
    if task:
        params["task"] = {"ttl": 60_000}
    return params


def text_result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}]}


def main() -> None:
    parser = argparse.ArgumentParser(description="A misbehaving MCP server over stdio (tests only).")
    parser.add_argument(
        "--mode", required=True, choices=["garbage", "die", "sample-then-exit", "exit-after-init"]
    )
    parser.add_argument("--record", help="sample-then-exit: write what the client answered here")
    args = parser.parse_args()
    Server(args.mode, args.record).serve()


if __name__ == "__main__":
    main()
