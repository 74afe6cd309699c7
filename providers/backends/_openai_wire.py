"""MCP sampling <-> OpenAI chat-completions wire format (pure functions, no I/O).

Request rules:

* ``systemPrompt`` becomes a leading ``system`` message.
* A user message that is a single text block is sent as a string; otherwise
  as a list of parts: text, ``image_url`` with a ``data:`` URL, and
  ``input_audio`` (wav or mp3 only: the formats the API accepts).
* Each ``tool_result`` block becomes a ``tool`` message (its text blocks joined
  by newlines; structured content as JSON when there is no text; ``[error]``
  prepended when ``isError``). Resource links and text resources become text;
  images, audio and binary resources inside a tool result are refused, as the
  chat-completions API has no place for them.
* An assistant message becomes text content (blocks joined by newlines) plus
  ``tool_calls`` for its ``tool_use`` blocks (arguments as JSON text); media in
  assistant messages are refused.
* ``maxTokens`` is sent as ``max_completion_tokens`` or ``max_tokens`` (the
  provider's choice), ``stopSequences`` as ``stop``, ``temperature`` as is.
* ``tools`` become function tools; ``toolChoice`` ``auto``/``required``/``none``
  is sent as such, and only when tools are sent.
* ``metadata`` is dropped unless forwarding is enabled; then only string
  values within the API's limits are sent (16 keys, keys up to 64 characters,
  values up to 512).

Response rules: text content (or the refusal text) and ``tool_calls`` become
text and ``tool_use`` blocks; a lone text block is returned as one block.
Finish reasons map ``stop`` -> ``endTurn`` (``stopSequence`` when the backend
names the matched stop string, as vLLM does in ``stop_reason``), ``length`` ->
``maxTokens``, ``tool_calls``/``function_call`` -> ``toolUse``,
``content_filter`` -> ``contentFilter``; any tool call makes it ``toolUse``.

Fixed caps (docs/limits.md): ``_METADATA_MAX_KEYS``, ``_METADATA_MAX_KEY``,
``_METADATA_MAX_VALUE``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from host_receiver.errors import UnsupportedRequest
from host_receiver.protocol.types import (
    AudioContent,
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

from ._wire import Json, ToolCallBuffer, link_text

__all__ = [
    "MaxTokensParam",
    "build_request",
    "make_result",
    "stop_reason",
]

MaxTokensParam = Literal["max_tokens", "max_completion_tokens"]

_AUDIO_FORMATS = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/vnd.wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
}
_METADATA_MAX_KEYS = 16
_METADATA_MAX_KEY = 64
_METADATA_MAX_VALUE = 512
_FINISH = {
    "stop": "endTurn",
    "length": "maxTokens",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
    "content_filter": "contentFilter",
}


# --- request -----------------------------------------------------------------


def build_request(
    params: SamplingRequest,
    model: str,
    *,
    max_tokens_param: MaxTokensParam = "max_completion_tokens",
    forward_metadata: bool = False,
) -> Json:
    """The chat-completions request body for ``params`` (without ``stream``)."""
    messages: list[Json] = []
    if params.system_prompt:
        messages.append({"role": "system", "content": params.system_prompt})
    for message in params.messages:
        messages.extend(_messages(message))
    body: Json = {"model": model, "messages": messages, max_tokens_param: params.max_tokens}
    if params.temperature is not None:
        body["temperature"] = params.temperature
    if params.stop_sequences:
        body["stop"] = list(params.stop_sequences)
    if params.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    **({"description": tool.description} if tool.description else {}),
                    "parameters": tool.input_schema,
                },
            }
            for tool in params.tools
        ]
        if params.tool_choice is not None and params.tool_choice.mode is not None:
            body["tool_choice"] = params.tool_choice.mode
    if forward_metadata and params.metadata:
        metadata = _safe_metadata(params.metadata)
        if metadata:
            body["metadata"] = metadata
    return body


def _safe_metadata(metadata: Mapping[str, Any]) -> dict[str, str]:
    safe: dict[str, str] = {}
    for key, value in metadata.items():
        if len(safe) == _METADATA_MAX_KEYS:
            break
        if isinstance(value, str) and 0 < len(key) <= _METADATA_MAX_KEY and len(value) <= _METADATA_MAX_VALUE:
            safe[key] = value
    return safe


def _messages(message: SamplingMessage) -> list[Json]:
    blocks = message.blocks()
    if message.role == "assistant":
        return [_assistant(blocks)]
    out: list[Json] = [_tool_message(b) for b in blocks if isinstance(b, ToolResultContent)]
    rest = [b for b in blocks if not isinstance(b, ToolResultContent)]
    if rest or not out:
        out.append({"role": "user", "content": _user_content(rest)})
    return out


def _user_content(blocks: list[Any]) -> str | list[Json]:
    if len(blocks) == 1 and isinstance(blocks[0], TextContent):
        return str(blocks[0].text)
    parts: list[Json] = []
    for block in blocks:
        if isinstance(block, TextContent):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContent):
            url = f"data:{block.mime_type};base64,{block.data}"
            parts.append({"type": "image_url", "image_url": {"url": url}})
        elif isinstance(block, AudioContent):
            audio_format = _AUDIO_FORMATS.get(block.mime_type.lower())
            if audio_format is None:
                raise UnsupportedRequest(
                    f"audio of type {block.mime_type} cannot be sent to an OpenAI-compatible "
                    "API, which accepts audio/wav and audio/mpeg"
                )
            parts.append({"type": "input_audio", "input_audio": {"data": block.data, "format": audio_format}})
        else:
            raise UnsupportedRequest(f"{block.type} content is not allowed in a user message")
    return parts


def _assistant(blocks: list[Any]) -> Json:
    texts: list[str] = []
    calls: list[Json] = []
    for block in blocks:
        if isinstance(block, TextContent):
            texts.append(block.text)
        elif isinstance(block, ToolUseContent):
            calls.append(
                {
                    "id": block.id,
                    "type": "function",
                    "function": {"name": block.name, "arguments": json.dumps(block.input)},
                }
            )
        else:
            raise UnsupportedRequest(
                f"{block.type} content in an assistant message cannot be sent to an OpenAI-compatible API"
            )
    message: Json = {"role": "assistant"}
    if texts or not calls:
        message["content"] = "\n".join(texts)
    if calls:
        message["tool_calls"] = calls
    return message


def _tool_message(result: ToolResultContent) -> Json:
    texts: list[str] = []
    for block in result.content:
        if isinstance(block, TextContent):
            texts.append(block.text)
        elif isinstance(block, ResourceLink):
            texts.append(link_text(block))
        elif isinstance(block, EmbeddedResource) and isinstance(block.resource.get("text"), str):
            texts.append(block.resource["text"])
        else:
            raise UnsupportedRequest(
                f"a tool result with {_kind(block)} content cannot be sent to an "
                "OpenAI-compatible API (tool messages carry text only)"
            )
    if not texts and result.structured_content is not None:
        texts.append(json.dumps(result.structured_content))
    text = "\n".join(texts)
    if result.is_error:
        text = f"[error] {text}".rstrip()
    return {"role": "tool", "tool_call_id": result.tool_use_id, "content": text}


def _kind(block: object) -> str:
    if isinstance(block, EmbeddedResource):
        return "binary resource"
    return str(getattr(block, "type", "unknown"))


# --- response ----------------------------------------------------------------


@dataclass
class Reply:
    """What came back, whether streamed or not."""

    text: str = ""
    calls: list[ToolCallBuffer] = field(default_factory=list)
    finish_reason: str | None = None
    matched_stop: object = None


def stop_reason(reply: Reply, stops: list[str] | None) -> str | None:
    """The MCP ``stopReason`` for a finished reply."""
    if reply.calls:
        return "toolUse"
    if reply.finish_reason is None:
        return None
    matched = reply.matched_stop
    if reply.finish_reason == "stop" and isinstance(matched, str) and matched in (stops or ()):
        return "stopSequence"
    return _FINISH.get(reply.finish_reason, reply.finish_reason)


def make_result(reply: Reply, model: str, stops: list[str] | None) -> CreateMessageResult:
    """The ``CreateMessageResult`` for ``reply``, reported as ``model``."""
    calls = [call.to_content(position) for position, call in enumerate(reply.calls)]
    reason = stop_reason(reply, stops)
    if not calls:
        return CreateMessageResult(
            role="assistant", content=TextContent(text=reply.text), model=model, stop_reason=reason
        )
    content: list[SamplingContent] = [TextContent(text=reply.text)] if reply.text else []
    content.extend(calls)
    return CreateMessageResult(role="assistant", content=content, model=model, stop_reason=reason)
