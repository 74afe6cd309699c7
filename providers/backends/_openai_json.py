"""The chat-completions reply read from its raw bytes, without the ``openai`` response models (pure, no I/O).

The provider asks the ``openai`` client for the raw HTTP response
(``cast_to=httpx.Response``) and reads it here: the client's response models,
its ``AsyncStream`` and its event decoder cost more CPU per call than the HTTP
exchange itself (docs/performance.md, "The provider call, stage by stage").

Rules:

* Only the fields the provider uses are read: the first choice's text (or
  refusal), its tool calls, its finish reason and vLLM's ``stop_reason``; in
  a stream, also ``usage.completion_tokens``. The id, model and token usage
  go to the call's trace (:func:`host_receiver.telemetry.report_reply`).
* Reading is as lenient as the models' construction: a field that is missing,
  ``null`` or of another type reads as absent. A tool call without a ``type``
  is taken as a function call; one of another type (``custom``) is skipped.
* A reply with no choices is a :class:`ProviderError`; so is a stream in which
  no chunk had the choice of index 0 (it is not an empty answer). Streamed
  choices other than index 0 are ignored. A body is JSON whatever its content
  type says; one that is not raises ``json.JSONDecodeError`` (orjson's, which
  says where).
* A stream's events are split by ``httpx-sse`` (in the provider); the
  provider stops at ``[DONE]`` and raises an event whose JSON has an
  ``error`` as the client would (``openai.APIError``).
"""

from __future__ import annotations

from typing import Any

from host_receiver.errors import ProviderError
from host_receiver.telemetry import report_reply

from ._openai_wire import Reply
from ._wire import ToolCallBuffer

__all__ = ["StreamFold", "completion_reply"]


def completion_reply(data: object) -> Reply:
    """The :class:`Reply` of a non-streamed completion (its parsed JSON)."""
    _report(data)
    choices = _list(_get(data, "choices"))
    if not choices:
        raise ProviderError("the backend returned no choices")
    choice = choices[0]
    message = _get(choice, "message")
    calls = [
        ToolCallBuffer(
            _str(_get(call, "id")), _str(_get(function, "name")), _str(_get(function, "arguments"))
        )
        for call in _list(_get(message, "tool_calls"))
        if _get(call, "type") in ("function", None) and isinstance(function := _get(call, "function"), dict)
    ]
    return Reply(
        text=_str(_get(message, "content")) or _str(_get(message, "refusal")),
        calls=calls,
        finish_reason=_optional_str(_get(choice, "finish_reason")),
        matched_stop=_get(choice, "stop_reason"),
    )


def _report(data: object) -> None:
    """The reply's id, model and token usage, for the call's trace."""
    usage = _get(data, "usage")
    report_reply(
        response_id=_get(data, "id"),
        response_model=_get(data, "model"),
        input_tokens=_get(usage, "prompt_tokens"),
        output_tokens=_get(usage, "completion_tokens"),
    )


class StreamFold:
    """Folds streamed chunks into a :class:`Reply`, counting what grew (``characters``)."""

    def __init__(self) -> None:
        self.characters = 0
        self.choices = 0  # chunks that carried the choice of index 0
        self.parts: list[str] = []
        self.refusal: list[str] = []
        self.calls: dict[int, ToolCallBuffer] = {}
        self.usage: int | None = None
        self.finish_reason: str | None = None
        self.matched_stop: object = None

    def add(self, chunk: object) -> bool:
        """Take one chunk; whether it added output (text, refusal or a tool-call fragment)."""
        usage = _get(_get(chunk, "usage"), "completion_tokens")
        if isinstance(usage, int):
            self.usage = usage
            _report(chunk)
        grew = False
        for choice in _list(_get(chunk, "choices")):
            if _get(choice, "index") != 0:
                continue
            self.choices += 1
            delta = _get(choice, "delta")
            content = _str(_get(delta, "content"))
            if content:
                self.parts.append(content)
                self.characters += len(content)
                grew = True
            refusal = _str(_get(delta, "refusal"))
            if refusal:
                self.refusal.append(refusal)
                self.characters += len(refusal)
                grew = True
            for fragment in _list(_get(delta, "tool_calls")):
                index = _get(fragment, "index")
                call = self.calls.setdefault(index if isinstance(index, int) else 0, ToolCallBuffer())
                call.id = _str(_get(fragment, "id")) or call.id
                function = _get(fragment, "function")
                call.name = _str(_get(function, "name")) or call.name
                arguments = _str(_get(function, "arguments"))
                call.arguments += arguments
                self.characters += len(arguments)
                grew = True
            finish = _optional_str(_get(choice, "finish_reason"))
            if finish is not None:
                self.finish_reason = finish
                self.matched_stop = _get(choice, "stop_reason")
        return grew

    def reply(self) -> Reply:
        """What the stream said; a stream without the choice of index 0 is a ProviderError."""
        if not self.choices:
            raise ProviderError("the backend returned no choices")
        return Reply(
            text="".join(self.parts) or "".join(self.refusal),
            calls=[self.calls[index] for index in sorted(self.calls)],
            finish_reason=self.finish_reason,
            matched_stop=self.matched_stop,
        )


def _get(data: object, key: str) -> Any:
    return data.get(key) if isinstance(data, dict) else None


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _optional_str(value: object) -> str | None:
    return value if isinstance(value, str) else None
