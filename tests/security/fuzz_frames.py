"""Seeded generation of malformed and adversarial MCP frames, each with the answer it is owed.

Rules:

- :class:`Fuzzer` is deterministic for a seed: the same frames in the same
  order (task ids learnt from answers feed later frames, so a run depends on
  what the receiver answered, nothing else).
- Every frame is one line (no raw newline in it) of at most ``max_size`` bytes.
- Every frame says what the client owes for it, from JSON-RPC alone, not from
  the receiver's code: a JSON object with a ``method`` member and a usable id
  (a string, or an integer the codec keeps as one) is a request and gets
  exactly one answer with that id, or at most one if the fuzzer then cancels
  it; an object without ``method`` but with ``result`` or ``error`` is a
  response and gets none; an object with neither may be answered once; a
  frame cut short is a request owed its answer when the cut leaves its ``id``
  and the ``method`` key whole in the head; anything else may get answers
  without an id (counted, never matched).
- Ids of frames are unique in a run, so answers can be matched.
"""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["Frame", "Fuzzer", "usable_id"]

#: Methods a client serves, and a few it does not.
METHODS = (
    "sampling/createMessage",
    "elicitation/create",
    "tasks/get",
    "tasks/result",
    "tasks/list",
    "tasks/cancel",
    "ping",
    "tools/call",
    "resources/list",
    "",
    "sampling/createMessage\x00",
    "notifications/cancelled",
)
ODD_TEXT = (
    "",
    " ",
    "hello",
    "\x1b[2J\x1b]0;title\x07",
    "\u202eevil\u2066",
    "line\nbreak\r\n",
    "é中😀",
    "\ud800"[:0] + "nul\x00byte",
    "%s%n{0}",
    "../../etc/passwd",
    "<script>alert(1)</script>",
)


def usable_id(value: Any) -> bool:
    """Whether ``value`` is an id the client can answer to (a string or an integer kept whole)."""
    return type(value) is str or (type(value) is int and -(2**63) <= value < 2**64)


@dataclass(frozen=True, slots=True)
class Frame:
    """One line to send, and what it is owed: ``answers`` (min, max) with ``id`` (None: unmatched)."""

    data: bytes
    id: Any = None
    answers: tuple[int, int] = (0, 0)
    method: str | None = None
    task: bool = False
    kind: str = "valid"


class Fuzzer:
    """Frames for one run (rules in the module docstring)."""

    def __init__(self, seed: int, *, max_size: int = 200_000) -> None:
        self.rng = random.Random(seed)
        self.max_size = max_size
        self.count = 0
        self.task_ids: list[str] = []
        self.in_flight: list[Any] = []

    # --- what the run learns ---------------------------------------------------------------------

    def learn(self, answer: dict[str, Any]) -> None:
        """Remember task ids from answers, for later ``tasks/*`` frames."""
        result = answer.get("result")
        if isinstance(result, dict) and isinstance(result.get("task"), dict):
            task_id = result["task"].get("taskId")
            if isinstance(task_id, str) and len(self.task_ids) < 10_000:
                self.task_ids.append(task_id)

    # --- frames ----------------------------------------------------------------------------------

    def frames(self, count: int) -> Iterator[Frame]:
        """``count`` frames (an extra cancellation counts as one)."""
        kinds = (
            (self.valid, 30),
            (self.mutated, 30),
            (self.envelope, 15),
            (self.cut, 10),
            (self.garbage, 7),
            (self.notification, 8),
        )
        makers = [k for k, _ in kinds]
        weights = [w for _, w in kinds]
        for _ in range(count):
            yield self.rng.choices(makers, weights)[0]()

    def next_id(self) -> Any:
        self.count += 1
        rng = self.rng
        pick = rng.random()
        if pick < 0.45:
            return 10_000 + self.count
        if pick < 0.5:
            return rng.choice([-self.count, 2**63 - self.count, 2**64 - self.count])
        if pick < 0.9:
            return f"f-{self.count}"
        decoration = rng.choice(["\x1b[31m", "\u202e", "é", " ", "\"'\\", "x" * rng.choice([10, 300, 5000])])
        return f"f-{self.count}-{decoration}"

    def request(self, method: str, params: Any, *, kind: str) -> Frame:
        request_id = self.next_id()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        task = isinstance(params, dict) and isinstance(params.get("task"), dict)
        data = self.encode(message)
        if len(data) > self.max_size:
            return self.request("ping", None, kind=kind)
        self.in_flight.append(request_id)
        del self.in_flight[:-50]
        return Frame(data, request_id, (1, 1), method, task, kind)

    def encode(self, message: Any) -> bytes:
        return json.dumps(message, ensure_ascii=self.rng.random() < 0.5).encode("utf-8", "surrogatepass")

    # valid requests

    def valid(self) -> Frame:
        method = self.rng.choice(
            ["sampling/createMessage"] * 4
            + ["elicitation/create"] * 2
            + ["tasks/get", "tasks/result", "tasks/list", "tasks/cancel", "ping", "tools/call"] * 1
        )
        return self.request(method, self.params(method), kind="valid")

    def params(self, method: str) -> dict[str, Any] | None:
        rng = self.rng
        if method == "sampling/createMessage":
            params: dict[str, Any] = {
                "messages": self.messages(),
                "maxTokens": rng.choice([1, 20, 500, 10**6]),
            }
            for key, value in (
                ("systemPrompt", rng.choice(ODD_TEXT)),
                ("temperature", rng.choice([0, 0.7, 2])),
                ("stopSequences", [rng.choice(ODD_TEXT)]),
                ("modelPreferences", {"hints": [{"name": "gpt"}], "costPriority": rng.random()}),
                ("includeContext", rng.choice(["none", "thisServer", "allServers"])),
                ("metadata", {"k": rng.choice(ODD_TEXT)}),
                ("_meta", {"progressToken": rng.choice(["p", 1])}),
            ):
                if rng.random() < 0.3:
                    params[key] = value
            if rng.random() < 0.6:
                params["task"] = {"ttl": rng.choice([1, 50, 60_000, 10**12])} if rng.random() < 0.8 else {}
            if rng.random() < 0.1:
                params["tools"] = [{"name": "get_weather", "inputSchema": {"type": "object"}}]
            return params
        if method == "elicitation/create":
            if rng.random() < 0.3:
                url = rng.choice(
                    [
                        "https://example.com/x",
                        "http://[::1]:8080/",
                        "https://xn--pple-43d.com/",
                        "https://user@evil.example/",
                        "https://example.com/\r\n",
                        "javascript:alert(1)",
                    ]
                )
                return {"mode": "url", "message": rng.choice(ODD_TEXT), "url": url, "elicitationId": "e"}
            schema = {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "default": "Ada", "title": rng.choice(ODD_TEXT)},
                    "n": {"type": "integer", "default": 2, "minimum": 0},
                    "ok": {"type": "boolean", "default": True},
                    "pick": {"type": "string", "enum": ["a", "b"], "default": "a"},
                },
                "required": rng.choice([[], ["name"]]),
            }
            params = {"mode": "form", "message": rng.choice(ODD_TEXT), "requestedSchema": schema}
            if rng.random() < 0.5:
                params["task"] = {"ttl": rng.choice([1, 60_000])}
            return params
        if method in ("tasks/get", "tasks/result", "tasks/cancel"):
            known = self.task_ids and rng.random() < 0.7
            return {"taskId": rng.choice(self.task_ids) if known else rng.choice((*ODD_TEXT, "x" * 10_000))}
        if method == "tasks/list":
            return rng.choice([None, {}, {"cursor": "bogus"}, {"cursor": rng.choice(ODD_TEXT)}])
        if method == "tools/call":
            return {"name": "x"}
        return None

    def messages(self) -> list[dict[str, Any]]:
        rng = self.rng
        out = []
        for index in range(rng.choice([1, 1, 2, 3])):
            role = "user" if index % 2 == 0 else "assistant"
            pick = rng.random()
            if pick < 0.7:
                content: Any = {"type": "text", "text": rng.choice(ODD_TEXT) or "hi"}
            elif pick < 0.8:
                data = base64.b64encode(rng.randbytes(rng.choice([0, 10, 3000]))).decode()
                content = {"type": "image", "data": data, "mimeType": "image/png"}
            elif pick < 0.9:
                content = [{"type": "text", "text": "a"}, {"type": "text", "text": rng.choice(ODD_TEXT)}]
            else:
                content = {"type": "tool_use", "id": "c1", "name": "f", "input": {}}
            out.append({"role": role, "content": content})
        return out

    # mutations of valid requests

    def mutated(self) -> Frame:
        method = self.rng.choice(METHODS[:7])
        params = self.params(method) or {}
        for _ in range(self.rng.choice([1, 1, 2, 3])):
            params = self.mutate(params, depth=0)
        return self.request(method, params, kind="mutated")

    def mutate(self, value: Any, depth: int) -> Any:
        rng = self.rng
        if isinstance(value, dict) and value and depth < 6 and rng.random() < 0.7:
            key = rng.choice(list(value))
            action = rng.random()
            if action < 0.15:
                return {k: v for k, v in value.items() if k != key}
            if action < 0.25:
                return {**value, rng.choice((*ODD_TEXT, "task", "_meta", "maxTokens")): self.anything(2)}
            return {**value, key: self.mutate(value[key], depth + 1)}
        if isinstance(value, list) and value and depth < 6 and rng.random() < 0.7:
            index = rng.randrange(len(value))
            copy = list(value)
            copy[index] = self.mutate(copy[index], depth + 1)
            return copy
        return self.anything(2)

    def anything(self, depth: int) -> Any:
        """A JSON value of any type, now and then an odd one."""
        rng = self.rng
        pick = rng.random()
        if pick < 0.1:
            return None
        if pick < 0.2:
            return rng.choice([True, False])
        if pick < 0.35:
            return rng.choice([0, -1, 1, 2**31, 2**53 + 1, 2**63, 2**64 - 1, -(2**63)])
        if pick < 0.45:
            return rng.choice([0.5, -0.0, 1e308, 5e-324, 1.0, 60000.0])
        if pick < 0.65:
            return rng.choice((*ODD_TEXT, "60000", "true", "x" * rng.choice([100, 20_000])))
        if pick < 0.8 and depth > 0:
            return [self.anything(depth - 1) for _ in range(rng.choice([0, 1, 3]))]
        if pick < 0.95 and depth > 0:
            return {
                rng.choice(ODD_TEXT) or "k": self.anything(depth - 1) for _ in range(rng.choice([0, 1, 3]))
            }
        return rng.choice([[], {}, [[[[[[[[]]]]]]]], {"a": {"b": {"c": {}}}}])

    # envelopes that are wrong

    def envelope(self) -> Frame:
        rng = self.rng
        pick = rng.random()
        method = rng.choice(METHODS)
        if pick < 0.35:  # a request id the client cannot answer to
            bad_id: object = rng.choice([True, False, None, 1.5, 2.0, [], {}, [1], 2**64, -(2**63) - 1])
            message = {"jsonrpc": "2.0", "id": bad_id, "method": method}
            return Frame(self.encode(message), kind="bad-id")
        if pick < 0.6:  # a request with something else wrong: still owed its answer
            request_id = self.next_id()
            message = rng.choice(
                [
                    {"jsonrpc": "1.0", "id": request_id, "method": method},
                    {"id": request_id, "method": method},
                    {"jsonrpc": "2.0", "id": request_id, "method": rng.choice([7, None, [], {}, True])},
                    {"jsonrpc": "2.0", "id": request_id, "method": method, "params": self.anything(1)},
                    {"jsonrpc": "2.0", "id": request_id, "method": method, "result": {}},
                    {"jsonrpc": 2, "id": request_id, "method": method, "error": {"code": 1, "message": "x"}},
                ]
            )
            return Frame(self.encode(message), request_id, (1, 1), None, kind="bad-request")
        if pick < 0.8:  # a response to an id the client never used: nothing is owed
            request_id = self.next_id()
            message = rng.choice(
                [
                    {"jsonrpc": "2.0", "id": request_id, "result": self.anything(1)},
                    {"jsonrpc": "2.0", "id": request_id, "error": self.anything(1)},
                    {"jsonrpc": "2.0", "id": request_id, "result": {}, "error": {}},
                ]
            )
            return Frame(self.encode(message), request_id, (0, 0), kind="response")
        if pick < 0.9:  # neither request nor response
            request_id = self.next_id()
            message = {"jsonrpc": "2.0", "id": request_id, "params": {}}
            return Frame(self.encode(message), request_id, (0, 1), kind="neither")
        value = rng.choice([[], [{"jsonrpc": "2.0", "id": 1, "method": "ping"}], 1, "str", None, True])
        return Frame(self.encode(value), kind="not-object")

    # frames cut short

    def cut(self) -> Frame:
        rng = self.rng
        request_id = self.next_id()
        if type(request_id) is str and len(request_id) > 1000:
            request_id = f"f-{self.count}"
        method = rng.choice(METHODS[:7])
        head = '{"jsonrpc": "2.0", "id": ' + json.dumps(request_id) + ', "method"'
        body = head + ": " + json.dumps(method) + ', "params": ' + json.dumps(self.params(method) or {}) + "}"
        at = rng.randrange(1, len(body) - 1)
        data = body[:at].encode()
        if at >= len(head):
            return Frame(data, request_id, (1, 1), method, kind="cut-request")
        return Frame(data, kind="cut")

    # bytes that are no JSON

    def garbage(self) -> Frame:
        rng = self.rng
        data = rng.choice(
            [
                rng.randbytes(rng.choice([1, 20, 2000])),
                b"\xff\xfe\x00garbage",
                b"NaN",
                b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "ping"}',  # a lone surrogate: not JSON
                b"[" * 5000 + b"]" * 5000,
                b'{"a": ' * 3000 + b"1" + b"}" * 3000,
                "\x1b[2J\u202e not json".encode(),
                b"{}" * 100,
                b"\r",
            ]
        )
        if rng.random() < 0.2:  # JSON but for one literal: a request owed its answer (its head says so)
            request_id = self.next_id()
            if type(request_id) is str and len(request_id) > 1000:
                request_id = f"f-{self.count}"
            head = '{"jsonrpc": "2.0", "id": ' + json.dumps(request_id) + ', "method": "ping", '
            data = (head + '"params": {"x": ' + rng.choice(["NaN", "Infinity", "tru", "'a'"]) + "}}").encode()
            return Frame(data, request_id, (1, 1), "ping", kind="cut-request")
        return Frame(data.replace(b"\n", b" "), kind="garbage")

    # notifications

    def notification(self) -> Frame:
        rng = self.rng
        pick = rng.random()
        if pick < 0.3 and self.in_flight:
            target = rng.choice(self.in_flight)
            params: Any = {"requestId": target, "reason": rng.choice(ODD_TEXT)}
            message = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}
            return Frame(self.encode(message), target, (0, 1), kind="cancel")
        method = rng.choice(
            [
                "notifications/cancelled",
                "notifications/progress",
                "notifications/initialized",
                "notifications/elicitation/complete",
                "notifications/message",
                "notifications/tasks/status",
                rng.choice(ODD_TEXT),
            ]
        )
        message = {"jsonrpc": "2.0", "method": method, "params": self.anything(2)}
        if rng.random() < 0.5:  # ids that are never a request's (ours are numbered)
            never: object = rng.choice(["never", "", True, None, 1.5, {}, [], 2**70, "x" * 5000])
            message["params"] = {"requestId": never, "progressToken": never, "progress": self.anything(0)}
        return Frame(self.encode(message), kind="notification")
