"""Newline-delimited JSON on stdin/stdout, for the raw test servers in this folder."""

from __future__ import annotations

import json
import sys
from typing import Any


def read() -> dict[str, Any] | None:
    """The next message from stdin, or None at end of input."""
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        if line.strip():
            message: dict[str, Any] = json.loads(line)
            return message


def write(message: dict[str, Any]) -> None:
    """Write one message as one line."""
    write_raw(json.dumps(message))


def write_raw(line: str) -> None:
    """Write any line to stdout, JSON or not."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def result(request_id: Any, value: dict[str, Any]) -> None:
    write({"jsonrpc": "2.0", "id": request_id, "result": value})


def error(request_id: Any, code: int, message: str) -> None:
    write({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})


def text_result(text: str, *, is_error: bool = False) -> dict[str, Any]:
    """A CallToolResult with one text block."""
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


def handshake(name: str, *, capabilities: dict[str, Any] | None = None, **extra: Any) -> bool:
    """Answer ``initialize`` (protocol 2025-11-25, ``serverInfo`` ``name``, ``extra`` members in the
    result) and read until ``notifications/initialized``; False if the input ended first."""
    while (message := read()) is not None:
        if message.get("method") == "initialize":
            info = {"name": name, "version": extra.pop("version", "1")}
            answer = {"protocolVersion": "2025-11-25", "capabilities": capabilities or {}, "serverInfo": info}
            result(message["id"], {**answer, **extra})
        elif message.get("method") == "notifications/initialized":
            return True
    return False
