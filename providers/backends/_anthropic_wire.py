"""MCP sampling <-> the Anthropic Messages API wire format (pure functions, no I/O).

Request rules:

* ``systemPrompt`` becomes ``system``; ``maxTokens`` ``max_tokens``;
  ``stopSequences`` ``stop_sequences``.
* Messages keep their role and their blocks, in order: text as ``text``,
  images as ``image`` with a ``base64`` source; ``toolUse`` as ``tool_use``
  and ``toolResult`` as ``tool_result`` with their ids exactly as given
  (parallel tool uses are several blocks of one message). A tool result's
  content keeps its text and images, a PDF (an embedded resource whose blob
  is ``application/pdf``) becomes a ``document``; a resource link and a text
  resource become text, another binary resource is refused; structured
  content is sent as JSON text when there is no text; ``isError`` is
  ``is_error``. Audio has no place in the Messages
  API and is refused (the model's ``audio = false`` refuses it before a task
  exists).
* ``tools`` become ``tools`` (name, description, ``input_schema``);
  ``toolChoice`` ``auto`` / ``required`` / ``none`` becomes ``{"type": "auto"}``
  / ``{"type": "any"}`` / ``{"type": "none"}``, sent only with tools.
* ``temperature`` is sent only under an API version before
  :data:`TEMPERATURE_REMOVED` (an entry's ``api_version`` pins one); under
  that version and later the Messages API no longer takes it, and it is left
  out (:func:`dropped_fields` says so, for the plan and the audit line).
* ``metadata`` is sent only when the entry forwards it, and then only its
  ``user_id`` (a string of up to 256 characters), the one field the API takes.

Response rules: ``text`` blocks become text, ``tool_use`` blocks ``toolUse``
with the id as given; other blocks (thinking) are skipped. A reply that is one
text block is returned as one block. ``stop_reason`` ``end_turn``,
``max_tokens``, ``stop_sequence``, ``tool_use`` become ``endTurn``,
``maxTokens``, ``stopSequence``, ``toolUse``; any other reason is passed on in
camelCase (``refusal`` stays ``refusal``, ``pause_turn`` becomes ``pauseTurn``),
as the spec lets ``stopReason`` be any string.

Fixed caps (docs/limits.md): ``_USER_ID_LIMIT``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from host_receiver.errors import ProviderError, UnsupportedRequest
from host_receiver.protocol.types import (
    CreateMessageResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    SamplingContent,
    SamplingMessage,
    SamplingRequest,
    TextContent,
    ToolResultContent,
    ToolUseContent,
)
from host_receiver.telemetry import report_reply

from ._wire import Json, ToolCallBuffer, link_text

__all__ = [
    "TEMPERATURE_REMOVED",
    "MessageFold",
    "MessageReply",
    "build_request",
    "dropped_fields",
    "make_result",
    "message_reply",
]

#: The API version from which the Messages API no longer takes ``temperature`` (the SDK 2.x default).
TEMPERATURE_REMOVED = "2026-10-21"
_USER_ID_LIMIT = 256
_STOP = {
    "end_turn": "endTurn",
    "max_tokens": "maxTokens",
    "stop_sequence": "stopSequence",
    "tool_use": "toolUse",
}
_TOOL_CHOICE = {"auto": "auto", "required": "any", "none": "none"}


# --- request -----------------------------------------------------------------


def takes_temperature(api_version: str) -> bool:
    """Whether the Messages API of ``api_version`` takes ``temperature``."""
    return api_version < TEMPERATURE_REMOVED


def dropped_fields(params: SamplingRequest, api_version: str) -> tuple[str, ...]:
    """The request fields that :func:`build_request` leaves out under ``api_version``."""
    if params.temperature is not None and not takes_temperature(api_version):
        return ("temperature",)
    return ()


def build_request(
    params: SamplingRequest, model: str, *, api_version: str, forward_metadata: bool = False
) -> Json:
    """The Messages API request body for ``params`` (without ``stream``)."""
    body: Json = {
        "model": model,
        "max_tokens": params.max_tokens,
        "messages": [_message(m) for m in params.messages],
    }
    if params.system_prompt:
        body["system"] = params.system_prompt
    if params.stop_sequences:
        body["stop_sequences"] = list(params.stop_sequences)
    if params.temperature is not None and takes_temperature(api_version):
        body["temperature"] = params.temperature
    if params.tools:
        body["tools"] = [
            {
                "name": tool.name,
                **({"description": tool.description} if tool.description else {}),
                "input_schema": tool.input_schema,
            }
            for tool in params.tools
        ]
        if params.tool_choice is not None and params.tool_choice.mode is not None:
            body["tool_choice"] = {"type": _TOOL_CHOICE[params.tool_choice.mode]}
    if forward_metadata and params.metadata:
        user = params.metadata.get("user_id")
        if isinstance(user, str) and 0 < len(user) <= _USER_ID_LIMIT:
            body["metadata"] = {"user_id": user}
    return body


def _message(message: SamplingMessage) -> Json:
    return {"role": message.role, "content": [_block(b, message.role) for b in message.blocks()]}


def _block(block: object, role: str) -> Json:
    if isinstance(block, TextContent):
        return {"type": "text", "text": block.text}
    if isinstance(block, ImageContent):
        return _image(block)
    if isinstance(block, ToolUseContent):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    if isinstance(block, ToolResultContent):
        return _tool_result(block)
    kind = getattr(block, "type", "unknown")
    raise UnsupportedRequest(f"{kind} content in a {role} message cannot be sent to the Anthropic API")


def _image(block: ImageContent) -> Json:
    source = {"type": "base64", "media_type": block.mime_type, "data": block.data}
    return {"type": "image", "source": source}


def _resource(block: EmbeddedResource) -> Json:
    resource = block.resource
    if isinstance(resource.get("text"), str):
        return {"type": "text", "text": resource["text"]}
    if resource.get("mimeType") == "application/pdf" and isinstance(resource.get("blob"), str):
        source = {"type": "base64", "media_type": "application/pdf", "data": resource["blob"]}
        return {"type": "document", "source": source}
    raise UnsupportedRequest(
        "a binary resource other than a PDF cannot be sent to the Anthropic API "
        f"(got {resource.get('mimeType') or 'no type'})"
    )


def _tool_result(result: ToolResultContent) -> Json:
    content: list[Json] = []
    for block in result.content:
        if isinstance(block, TextContent):
            content.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContent):
            content.append(_image(block))
        elif isinstance(block, ResourceLink):
            content.append({"type": "text", "text": link_text(block)})
        elif isinstance(block, EmbeddedResource):
            content.append(_resource(block))
        else:
            kind = getattr(block, "type", "unknown")
            raise UnsupportedRequest(f"a tool result with {kind} content cannot be sent to the Anthropic API")
    if not any(part["type"] == "text" for part in content) and result.structured_content is not None:
        content.append({"type": "text", "text": json.dumps(result.structured_content)})
    out: Json = {"type": "tool_result", "tool_use_id": result.tool_use_id, "content": content}
    if result.is_error:
        out["is_error"] = True
    return out


# --- response ----------------------------------------------------------------


@dataclass
class MessageReply:
    """A message as it came back, whether streamed or not: its blocks in order."""

    blocks: list[str | ToolCallBuffer] = field(default_factory=list)
    stop_reason: str | None = None


def _report(message: object, usage: object) -> None:
    """The message's id, model and token usage, for the call's trace."""
    report_reply(
        response_id=_get(message, "id"),
        response_model=_get(message, "model"),
        input_tokens=_get(usage, "input_tokens"),
        output_tokens=_get(usage, "output_tokens"),
    )


def message_reply(data: object) -> MessageReply:
    """The :class:`MessageReply` of a non-streamed Messages API reply (its parsed JSON)."""
    _report(data, _get(data, "usage"))
    content = _get(data, "content")
    if not isinstance(content, list):
        raise ProviderError("the backend returned no message content")
    reply = MessageReply(stop_reason=_optional_str(_get(data, "stop_reason")))
    for block in content:
        kind = _get(block, "type")
        if kind == "text":
            reply.blocks.append(_str(_get(block, "text")))
        elif kind == "tool_use":
            arguments = _get(block, "input")
            text = json.dumps(arguments) if arguments is not None else ""
            reply.blocks.append(ToolCallBuffer(_str(_get(block, "id")), _str(_get(block, "name")), text))
    return reply


class MessageFold:
    """Folds streamed events into a :class:`MessageReply`, counting what grew (``characters``)."""

    def __init__(self) -> None:
        self.started = False
        self.stopped = False
        self.characters = 0
        self.usage: int | None = None
        self.text: list[str] = []  # every piece of text, for progress
        self._blocks: dict[int, str | ToolCallBuffer] = {}
        self._parts: dict[int, list[str]] = {}
        self._stop_reason: str | None = None

    def add(self, event: object) -> bool:
        """Take one event's data; whether it added output (text or tool-call input)."""
        kind = _get(event, "type")
        index = _get(event, "index")
        if kind == "message_start":
            self.started = True
            message = _get(event, "message")
            _report(message, _get(message, "usage"))
        elif kind == "content_block_start" and isinstance(index, int):
            block = _get(event, "content_block")
            if _get(block, "type") == "text":
                self._parts[index] = [_str(_get(block, "text"))]
                self._blocks[index] = ""
            elif _get(block, "type") == "tool_use":
                self._parts[index] = []
                self._blocks[index] = ToolCallBuffer(_str(_get(block, "id")), _str(_get(block, "name")))
        elif kind == "content_block_delta" and isinstance(index, int):
            delta = _get(event, "delta")
            if index not in self._parts and _get(delta, "type") == "text_delta":  # text without its start
                self._parts[index] = []
                self._blocks[index] = ""
            if index not in self._parts:
                return False
            piece = _str(_get(delta, "text")) or _str(_get(delta, "partial_json"))
            if piece:
                self._parts[index].append(piece)
                if _get(delta, "type") == "text_delta":
                    self.text.append(piece)
                self.characters += len(piece)
                return True
        elif kind == "message_delta":
            self._stop_reason = _optional_str(_get(_get(event, "delta"), "stop_reason")) or self._stop_reason
            tokens = _get(_get(event, "usage"), "output_tokens")
            if isinstance(tokens, int):
                self.usage = tokens
                report_reply(output_tokens=tokens)
        elif kind == "message_stop":
            self.stopped = True
        return False

    def reply(self) -> MessageReply:
        """What the stream said; one without a message, or cut before its end, is a ProviderError."""
        if not self.started:
            raise ProviderError("the backend returned no message")
        if not self.stopped:
            raise ProviderError("the backend's stream ended before the message did")
        reply = MessageReply(stop_reason=self._stop_reason)
        for index in sorted(self._blocks):
            block = self._blocks[index]
            text = "".join(self._parts[index])
            if isinstance(block, ToolCallBuffer):
                block.arguments = text
                reply.blocks.append(block)
            else:
                reply.blocks.append(text)
        return reply


def stop_reason(reply: MessageReply) -> str | None:
    """The MCP ``stopReason`` for a finished message."""
    if any(isinstance(b, ToolCallBuffer) for b in reply.blocks):
        return "toolUse"
    reason = reply.stop_reason
    if reason is None:
        return None
    if reason in _STOP:
        return _STOP[reason]
    head, *rest = reason.split("_")
    return head + "".join(word.capitalize() for word in rest)


def make_result(reply: MessageReply, model: str) -> CreateMessageResult:
    """The ``CreateMessageResult`` for ``reply``, reported as ``model``."""
    content: list[SamplingContent] = []
    calls = 0
    for block in reply.blocks:
        if isinstance(block, ToolCallBuffer):
            content.append(block.to_content(calls))
            calls += 1
        elif block:
            content.append(TextContent(text=block))
    reason = stop_reason(reply)
    if not calls:
        text = "".join(b.text for b in content if isinstance(b, TextContent))
        only = TextContent(text=text)
        return CreateMessageResult(role="assistant", content=only, model=model, stop_reason=reason)
    return CreateMessageResult(role="assistant", content=content, model=model, stop_reason=reason)


def _get(data: object, key: str) -> Any:
    return data.get(key) if isinstance(data, dict) else None


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _optional_str(value: object) -> str | None:
    return value if isinstance(value, str) else None
