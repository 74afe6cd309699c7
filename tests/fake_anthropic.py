"""A fake Anthropic Messages API on 127.0.0.1, for tests and benchmarks.

It is tests/fake_openai.py's server (the same scripted replies, faults,
recording and disconnect detection) speaking the Messages API's wire format,
as Anthropic's public API reference describes it:

* ``POST /v1/messages`` answers a ``message`` object (``content`` blocks of
  type ``text`` and ``tool_use``, ``stop_reason``, ``stop_sequence``,
  ``usage``), or, when the body says ``"stream": true``, the event stream:
  ``message_start``, then per block ``content_block_start``, its
  ``content_block_delta`` events (``text_delta``, ``input_json_delta``) and
  ``content_block_stop``, then ``message_delta`` (the stop reason and the
  output tokens) and ``message_stop``; a ``ping`` after the start. Each event
  has its ``event:`` line and its JSON ``data:``; nothing follows
  ``message_stop``.
* Errors are ``{"type": "error", "error": {"type": ..., "message": ...}}``,
  with the HTTP status, or as an ``error`` event in a stream.
* ``GET /v1/models`` lists :attr:`FakeAnthropic.models` (``data``, ``has_more``,
  ``first_id``, ``last_id``).

A :class:`~tests.fake_openai.Completion`'s ``finish_reason`` is the
``stop_reason`` here (default ``tool_use`` with tool calls, else
``end_turn``), and its ``choice_extra`` is merged into the message (e.g.
``stop_sequence``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from tests.fake_openai import STREAM_ERROR, Completion, FakeOpenAI, OpenAIWire, _split_words

__all__ = ["AnthropicWire", "FakeAnthropic"]


class AnthropicWire(OpenAIWire):
    """The Messages API's wire format."""

    path = "/v1/messages"
    end = b""

    def error_body(self, message: str, type_: str, code: str | None, status: int = 500) -> dict[str, Any]:
        kind = {"server_error": "api_error"}.get(type_, type_)
        return {"type": "error", "error": {"type": kind, "message": message}}

    def models_body(self) -> dict[str, Any]:
        data = [
            {"type": "model", "id": m, "display_name": m, "created_at": "2026-01-01T00:00:00Z"}
            for m in self.models
        ]
        first, last = (self.models[0], self.models[-1]) if self.models else (None, None)
        return {"data": data, "has_more": False, "first_id": first, "last_id": last}

    def reply_body(self, reply: Completion, model: str, number: int) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if reply.text:
            content.append({"type": "text", "text": reply.text})
        for call in reply.tool_calls:
            content.append(
                {"type": "tool_use", "id": call.id, "name": call.name, "input": json.loads(call.arguments)}
            )
        pieces = len(_split_words(reply.text or "")) + len(reply.tool_calls)
        return {
            **_message(number, model),
            "content": content,
            "stop_reason": _stop_reason(reply),
            "usage": {"input_tokens": 10, "output_tokens": max(pieces, 1)},
            **reply.choice_extra,
        }

    def events(self, reply: Completion, model: str, number: int, body: Any) -> Iterator[bytes]:
        start = {**_message(number, model), "content": [], "usage": {"input_tokens": 10, "output_tokens": 1}}
        yield _event("message_start", {"message": start})
        yield _event("ping", {})
        index = 0
        pieces = reply.pieces if reply.pieces is not None else _split_words(reply.text or "")
        if pieces:
            yield _event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}})
            for piece in pieces:
                yield _event(
                    "content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": piece}}
                )
            yield _event("content_block_stop", {"index": 0})
            index = 1
        for call in reply.tool_calls:
            block = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
            yield _event("content_block_start", {"index": index, "content_block": block})
            half = len(call.arguments) // 2
            for part in (call.arguments[:half], call.arguments[half:]):
                if part:
                    delta = {"type": "input_json_delta", "partial_json": part}
                    yield _event("content_block_delta", {"index": index, "delta": delta})
            yield _event("content_block_stop", {"index": index})
            index += 1
        stop = {"stop_reason": _stop_reason(reply), "stop_sequence": reply.choice_extra.get("stop_sequence")}
        usage = {"output_tokens": len(pieces) + 2 * len(reply.tool_calls)}
        yield _event("message_delta", {"delta": stop, "usage": usage})
        yield _event("message_stop", {})

    def error_event(self) -> bytes:
        return _event("error", {"error": {"type": "overloaded_error", "message": STREAM_ERROR}})


class FakeAnthropic(FakeOpenAI):
    """The fake server speaking the Messages API; ``models`` is what ``GET /v1/models`` lists."""

    def __init__(self, *, models: Sequence[str] = ("claude-fake-1",), **options: Any) -> None:
        super().__init__(models=models, **options)

    @staticmethod
    def make_wire(models: Sequence[str]) -> AnthropicWire:
        return AnthropicWire(models)

    @property
    def url(self) -> str:
        """The base URL to give the ``anthropic`` client (the API's paths start with ``/v1``)."""
        scheme = "https" if self._tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}"


def _message(number: int, model: str) -> dict[str, Any]:
    return {
        "id": f"msg_fake_{number}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "stop_reason": None,
        "stop_sequence": None,
    }


def _stop_reason(reply: Completion) -> str:
    if reply.finish_reason is not None:
        return reply.finish_reason
    return "tool_use" if reply.tool_calls else "end_turn"


def _event(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


if __name__ == "__main__":
    from tests.fake_openai import main

    raise SystemExit(main(fake_class=FakeAnthropic))
