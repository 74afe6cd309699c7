"""A fake Gemini API (generativelanguage, ``v1`` and ``v1beta``) on 127.0.0.1, for tests and benchmarks.

It is tests/fake_openai.py's server (the same scripted replies, faults,
recording and disconnect detection) speaking the Gemini API's REST wire format,
as Google's public API reference describes it:

* ``POST /{version}/models/{model}:generateContent`` (``version`` ``v1`` or ``v1beta``) answers a
  ``GenerateContentResponse``: ``candidates`` (one, ``index`` 0) whose
  ``content`` has the role ``model`` and its ``parts`` (``text``, then one
  ``functionCall`` part per call, with ``id``, ``name`` and ``args``), the
  candidate's ``finishReason``, and ``usageMetadata``
  (``promptTokenCount``, ``candidatesTokenCount``, ``totalTokenCount``),
  ``modelVersion`` and ``responseId``.
* ``POST /{version}/models/{model}:streamGenerateContent?alt=sse`` answers the
  same response in pieces, as server-sent events: each event's ``data:`` is a
  whole ``GenerateContentResponse`` carrying one piece of text (or one function
  call, whole), ``usageMetadata`` counting so far; the last carries the
  ``finishReason``. Nothing follows the last event (no ``[DONE]``). (Without
  ``alt=sse`` the API sends a JSON array instead; the ``google-genai`` client
  always asks for ``alt=sse``, and this fake always answers with events.)
* Errors are ``{"error": {"code": ..., "message": ..., "status": ...}}`` with
  the HTTP status (``status`` the canonical code's name, e.g.
  ``UNAVAILABLE``), or such an object as an event of a stream.
* ``GET /{version}/models`` lists :attr:`FakeGemini.models` (``models``: each
  ``name`` ``models/{id}``, ``baseModelId``, ``displayName``,
  ``supportedGenerationMethods``).
* The key arrives in the ``x-goog-api-key`` header; the fake records it and
  does not check it.

A :class:`~tests.fake_openai.Completion`'s ``finish_reason`` is the
``finishReason`` here (default ``STOP``), and its ``choice_extra`` is merged
into the candidate. A :class:`~tests.fake_openai.ToolCall` with an empty id is
a function call without ``id`` (as older models send them).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from tests.fake_openai import STREAM_ERROR, Completion, FakeOpenAI, OpenAIWire, ToolCall, _split_words

__all__ = ["FakeGemini", "GeminiWire"]

#: HTTP status -> the canonical status name Google's errors carry.
_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_GENERATE = ":generateContent"
_STREAM = ":streamGenerateContent"
#: The API versions served (the same resources under each).
_VERSIONS = ("/v1/models/", "/v1beta/models/")


class GeminiWire(OpenAIWire):
    """The Gemini API's wire format."""

    path = _GENERATE
    end = b""

    def samples(self, route: str) -> bool:
        return route.startswith(_VERSIONS) and route.endswith((_GENERATE, _STREAM))

    def streams(self, body: Any, path: str) -> bool:
        return path.split("?", 1)[0].endswith(_STREAM)

    def model(self, route: str, body: Any) -> str:
        return route.rsplit("/", 1)[-1].rsplit(":", 1)[0]

    def error_body(self, message: str, type_: str, code: str | None, status: int = 500) -> dict[str, Any]:
        error: dict[str, Any] = {
            "code": status,
            "message": message,
            "status": _STATUS_NAMES.get(status, "UNKNOWN"),
        }
        if code is not None:  # Google's reason, as a rejected key gets API_KEY_INVALID
            reason = {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": code,
                "domain": "googleapis.com",
            }
            error["details"] = [reason]
        return {"error": error}

    def models_body(self) -> dict[str, Any]:
        listed = [
            {
                "name": f"models/{m}",
                "baseModelId": m,
                "version": "001",
                "displayName": m,
                "inputTokenLimit": 1_048_576,
                "outputTokenLimit": 65_536,
                "supportedGenerationMethods": ["generateContent", "countTokens"],
            }
            for m in self.models
        ]
        return {"models": listed}

    def reply_body(self, reply: Completion, model: str, number: int) -> dict[str, Any]:
        parts: list[dict[str, Any]] = [{"text": reply.text}] if reply.text else []
        parts += [_call_part(call) for call in reply.tool_calls]
        pieces = len(_split_words(reply.text or "")) + len(reply.tool_calls)
        return _response(number, model, parts, max(pieces, 1), _finish_reason(reply), reply)

    def events(self, reply: Completion, model: str, number: int, body: Any) -> Iterator[bytes]:
        pieces = reply.pieces if reply.pieces is not None else _split_words(reply.text or "")
        parts = [{"text": piece} for piece in pieces] + [_call_part(call) for call in reply.tool_calls]
        if not parts:
            parts = [{"text": ""}]
        for count, part in enumerate(parts, 1):
            finish = _finish_reason(reply) if count == len(parts) else None
            yield _event(_response(number, model, [part], count, finish, reply))

    def error_event(self) -> bytes:
        return _event(self.error_body(STREAM_ERROR, "server_error", None, 503))


class FakeGemini(FakeOpenAI):
    """The fake server speaking the Gemini API; ``models`` is what ``GET .../models`` lists."""

    def __init__(self, *, models: Sequence[str] = ("gemini-fake-1",), **options: Any) -> None:
        super().__init__(models=models, **options)

    @staticmethod
    def make_wire(models: Sequence[str]) -> GeminiWire:
        return GeminiWire(models)

    @property
    def url(self) -> str:
        """The base URL to give the ``google-genai`` client (it adds ``/v1/...``)."""
        scheme = "https" if self._tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}"


def _call_part(call: ToolCall) -> dict[str, Any]:
    function: dict[str, Any] = {"name": call.name, "args": json.loads(call.arguments)}
    if call.id:
        function = {"id": call.id, **function}
    return {"functionCall": function}


def _finish_reason(reply: Completion) -> str:
    return reply.finish_reason if reply.finish_reason is not None else "STOP"


def _response(
    number: int, model: str, parts: list[dict[str, Any]], tokens: int, finish: str | None, reply: Completion
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish is not None:
        candidate = {**candidate, "finishReason": finish, **reply.choice_extra}
    usage = {"promptTokenCount": 10, "candidatesTokenCount": tokens, "totalTokenCount": 10 + tokens}
    return {
        "candidates": [candidate],
        "usageMetadata": usage,
        "modelVersion": model,
        "responseId": f"resp_fake_{number}",
    }


def _event(data: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(data)}\r\n\r\n".encode()


if __name__ == "__main__":
    from tests.fake_openai import main

    raise SystemExit(main(fake_class=FakeGemini))
