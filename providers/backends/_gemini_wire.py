"""MCP sampling <-> the Gemini API's ``generateContent`` (the ``google-genai`` types; no I/O).

(About 430 lines, one idea: the mapping both ways, with the SDK's types made cheap to build.)

Request rules:

* ``systemPrompt`` becomes ``system_instruction``; ``maxTokens``
  ``max_output_tokens``; ``temperature`` and ``stopSequences`` go as they are
  (``temperature``, ``stop_sequences``). ``metadata`` has no field in the
  Gemini API and is never sent.
* Each message becomes one ``Content``: the role ``user`` stays ``user``,
  ``assistant`` becomes ``model``; its blocks become ``parts`` in order: text
  as ``text``, images and audio as ``inline_data`` (the MIME type and the
  decoded bytes).
* ``toolUse`` becomes ``function_call`` with its ``id``, ``name`` and ``args``
  exactly as given; a ``thoughtSignature`` the model gave with the call
  (carried in the block's ``_meta`` under :data:`SIGNATURE_META`) goes back
  with it. ``toolResult`` becomes ``function_response`` with ``id`` the
  ``toolUseId`` as given and ``name`` the name of the ``toolUse`` of that id in
  the request (a map from id to name, never read out of the id); a result
  whose id no ``toolUse`` of the request has is refused. Its ``response`` is
  ``{"output": ...}`` (``{"error": ...}`` when ``isError``): the structured
  content when there is some, else the text; its images and audio go as the
  response's ``parts``; an embedded text resource is text, a resource link
  text naming it, a binary resource an inline part of its MIME type.
* ``tools`` become one ``Tool`` of ``function_declarations`` (name,
  description, and the input schema as ``parameters_json_schema``, the JSON
  Schema as given); ``toolChoice`` ``auto`` / ``required`` / ``none`` becomes
  the function-calling mode ``AUTO`` / ``ANY`` / ``NONE``, sent only with
  tools. The SDK's automatic function calling is off.

Response rules: the first candidate's ``text`` parts become text (thought
parts are skipped), its ``function_call`` parts ``toolUse`` with the id as
given (a call without an id gets ``call_<n>``) and the ``thought_signature``
in ``_meta``. ``finishReason`` ``STOP`` and ``MAX_TOKENS`` become ``endTurn``
and ``maxTokens``, a reply with function calls is ``toolUse``; every other
reason is passed on in camelCase (``SAFETY`` -> ``safety``,
``MALFORMED_FUNCTION_CALL`` -> ``malformedFunctionCall``), as the spec lets
``stopReason`` be any string. The API reports a stop sequence as ``STOP``: it
is ``endTurn``. No candidate is a failure naming the prompt's block reason when
there is one.
"""

from __future__ import annotations

import base64
import binascii
import enum
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pydantic
from google.genai import types

from host_receiver.errors import ProviderError, UnsupportedRequest
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

from ._wire import link_text

__all__ = [
    "SIGNATURE_META",
    "WRONG_SHAPE",
    "CallOptions",
    "Contents",
    "GeminiReply",
    "build_config",
    "build_contents",
    "make_result",
    "read_chunk",
    "read_json",
]

#: The ``_meta`` key of a ``toolUse`` block that carries Gemini's ``thoughtSignature`` (base64).
SIGNATURE_META = "host-receiver/gemini-thought-signature"
_MODE = {
    "auto": types.FunctionCallingConfigMode.AUTO,
    "required": types.FunctionCallingConfigMode.ANY,
    "none": types.FunctionCallingConfigMode.NONE,
}
_FINISH = {"STOP": "endTurn", "MAX_TOKENS": "maxTokens"}
#: The failure of a reply (or streamed chunk) that is JSON but not of the API's shape.
WRONG_SHAPE = "the backend's reply is not what the Gemini API answers"


# --- request -----------------------------------------------------------------


#: The SDK's ``contents``: one ``Content``, or a list of them as dicts.
Contents = types.Content | list[dict[str, Any]]


def build_contents(params: SamplingRequest) -> Contents:
    """The ``contents`` for ``params``' messages, as the SDK validates them fastest, of
    :class:`_Part` models (converted without the SDK's quadratic ``in``, :func:`_contains`).

    One message is one ``Content``: the SDK's union takes a single model at its first
    member (about 6 µs), where a list is tried against every list member of the union.
    More messages are a list of ``Content`` as dicts (about 27 µs each; a list of
    ``Content`` models costs about 250 µs each, validated from their attributes against
    the union's ``Part`` and ``File`` first). The request sent is the same either way.
    """
    names = {
        block.id: block.name
        for message in params.messages
        for block in message.blocks()
        if isinstance(block, ToolUseContent)
    }
    if len(params.messages) == 1:
        return types.Content.model_validate(_content(params.messages[0], names))
    return [_content(message, names) for message in params.messages]


def _contains(model: pydantic.BaseModel, item: object) -> bool:
    """``item in model`` as pydantic answers it (a ``(field, value)`` pair, never a name), at once for a name.

    The SDK converts a model to the wire field by field, asking ``name in model`` for
    each field the model has; pydantic compares the name with every pair (never
    equal), so a config of 45 fields cost about 2,000 comparisons a call, 0.2 ms of
    CPU (docs/performance.md, "Every backend's call, cut further").
    """
    return not isinstance(item, str) and any(pair == item for pair in model)


class _Unchecked(pydantic.BaseModel):
    """A model of ours, validated without the SDK's type check.

    The SDK's models warn, field by field, when a field holds a model of another type
    (``_check_field_type_mismatches``, a validator walking every field of the class: 45
    for the config) each time one is validated. Ours are built from the SDK's own types
    by this module, so the check finds nothing; a validator of the same name in a class
    before the SDK's base in the MRO replaces it.
    """

    @pydantic.model_validator(mode="before")
    @classmethod
    def _check_field_type_mismatches(cls, data: Any) -> Any:
        return data


class _Part(_Unchecked, types.Part):
    """A ``Part`` the SDK converts without its quadratic ``in`` (:func:`_contains`) and
    validates without its type check (:class:`_Unchecked`)."""

    __contains__ = _contains


class CallOptions(_Unchecked, types.HttpOptions):
    """The ``HttpOptions`` of one call (its headers), validated without the SDK's type check
    (:class:`_Unchecked`): one is made per call."""


def _shallow_copy(config: pydantic.BaseModel, memo: dict[int, Any] | None = None) -> pydantic.BaseModel:
    """A config's copy for the SDK: shallow (:class:`Config`)."""
    return config.model_copy()


if TYPE_CHECKING:  # mypy's pydantic plugin cannot read a subclass of the SDK's config (PIL_Image)
    Config = types.GenerateContentConfig
else:

    class Config(_Unchecked, types.GenerateContentConfig):
        """A ``GenerateContentConfig`` that the SDK converts without its quadratic ``in``
        (:func:`_contains`), validates without its type check (:class:`_Unchecked`), and
        copies shallow: it is made for one call and not read again, so the deep copy the
        SDK takes to protect the caller's config (every tool's schema too) protects nothing."""

        __contains__ = _contains
        __deepcopy__ = _shallow_copy


def build_config(params: SamplingRequest) -> types.GenerateContentConfig:
    """The ``GenerateContentConfig`` for ``params`` (everything but the messages)."""
    config = Config(
        max_output_tokens=params.max_tokens,
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    if params.system_prompt:
        config.system_instruction = params.system_prompt
    if params.temperature is not None:
        config.temperature = params.temperature
    if params.stop_sequences:
        config.stop_sequences = list(params.stop_sequences)
    if params.tools:
        declarations = [
            types.FunctionDeclaration(
                name=tool.name, description=tool.description, parameters_json_schema=tool.input_schema
            )
            for tool in params.tools
        ]
        config.tools = [types.Tool(function_declarations=declarations)]
        if params.tool_choice is not None and params.tool_choice.mode is not None:
            calling = types.FunctionCallingConfig(mode=_MODE[params.tool_choice.mode])
            config.tool_config = types.ToolConfig(function_calling_config=calling)
    return config


def _content(message: SamplingMessage, names: dict[str, str]) -> dict[str, Any]:
    role = "model" if message.role == "assistant" else "user"
    return {"role": role, "parts": [_part(block, message.role, names) for block in message.blocks()]}


def _part(block: object, role: str, names: dict[str, str]) -> types.Part:
    if isinstance(block, TextContent):
        return _Part(text=block.text)
    if isinstance(block, ImageContent | AudioContent):
        return _Part(inline_data=types.Blob(mime_type=block.mime_type, data=_bytes(block.data)))
    if isinstance(block, ToolUseContent):
        call = types.FunctionCall(id=block.id, name=block.name, args=block.input)
        return _Part(function_call=call, thought_signature=_signature(block))
    if isinstance(block, ToolResultContent):
        return _Part(function_response=_function_response(block, names))
    kind = getattr(block, "type", "unknown")
    raise UnsupportedRequest(f"{kind} content in a {role} message cannot be sent to the Gemini API")


def _function_response(result: ToolResultContent, names: dict[str, str]) -> types.FunctionResponse:
    name = names.get(result.tool_use_id)
    if name is None:
        raise UnsupportedRequest(
            "a tool result answers no tool use of the request (the Gemini API needs the tool's name)"
        )
    texts: list[str] = []
    parts: list[types.FunctionResponsePart] = []
    for block in result.content:
        if isinstance(block, TextContent):
            texts.append(block.text)
        elif isinstance(block, ImageContent | AudioContent):
            parts.append(_response_part(block.mime_type, block.data))
        elif isinstance(block, ResourceLink):
            texts.append(link_text(block))
        elif isinstance(block, EmbeddedResource):
            resource = block.resource
            if isinstance(resource.get("text"), str):
                texts.append(resource["text"])
            elif isinstance(resource.get("blob"), str):
                parts.append(_response_part(str(resource.get("mimeType") or ""), resource["blob"]))
    output: object = result.structured_content if result.structured_content is not None else "\n".join(texts)
    response = {"error" if result.is_error else "output": output}
    return types.FunctionResponse(id=result.tool_use_id, name=name, response=response, parts=parts or None)


def _response_part(mime_type: str, data: str) -> types.FunctionResponsePart:
    if not mime_type:
        raise UnsupportedRequest("a binary resource without a MIME type cannot be sent to the Gemini API")
    blob = types.FunctionResponseBlob(mime_type=mime_type, data=_bytes(data))
    return types.FunctionResponsePart(inline_data=blob)


def _bytes(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise UnsupportedRequest("media content whose data is not base64") from None


def _signature(block: ToolUseContent) -> bytes | None:
    value = (block.meta or {}).get(SIGNATURE_META)
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None


# --- response ----------------------------------------------------------------


@dataclass
class _Call:
    id: str
    name: str
    args: dict[str, Any]
    signature: bytes | None


@dataclass
class GeminiReply:
    """What came back, whether streamed or not: text and calls in order, the finish reason."""

    pieces: list[str | _Call] = field(default_factory=list)
    finish_reason: str | None = None
    candidates: bool = False  # whether any chunk had a candidate
    block_reason: str | None = None
    tokens: int | None = None

    @property
    def text(self) -> str:
        return "".join(p for p in self.pieces if isinstance(p, str))


def read_chunk(reply: GeminiReply, response: types.GenerateContentResponse) -> tuple[str, int]:
    """Add one response (or streamed chunk) to ``reply``; the text it added, and how many
    characters of output (text and calls' arguments as JSON)."""
    usage = response.usage_metadata
    if usage is not None and usage.candidates_token_count is not None:
        reply.tokens = usage.candidates_token_count
    feedback = response.prompt_feedback
    if feedback is not None and feedback.block_reason is not None:
        reply.block_reason = str(feedback.block_reason.value)
    if not response.candidates:
        return "", 0
    reply.candidates = True
    candidate = response.candidates[0]
    if candidate.finish_reason is not None:
        reply.finish_reason = str(candidate.finish_reason.value)
    added: list[str] = []
    characters = 0
    for part in (candidate.content.parts if candidate.content else None) or ():
        if part.function_call is not None:
            call = part.function_call
            args = call.args or {}
            reply.pieces.append(_Call(call.id or "", call.name or "", args, part.thought_signature))
            characters += len(json.dumps(args))
        elif part.text and not part.thought:
            reply.pieces.append(part.text)
            added.append(part.text)
            characters += len(part.text)
    return "".join(added), characters


def read_json(reply: GeminiReply, data: object) -> None:
    """Add a whole ``generateContent`` reply, the JSON as the API sent it (camelCase), to ``reply``:
    what :func:`read_chunk` reads from the SDK's types, without building them."""
    if not isinstance(data, dict):
        raise ProviderError(WRONG_SHAPE)
    usage = data.get("usageMetadata")
    if isinstance(usage, dict) and isinstance(usage.get("candidatesTokenCount"), int):
        reply.tokens = usage["candidatesTokenCount"]
    feedback = data.get("promptFeedback")
    if isinstance(feedback, dict) and feedback.get("blockReason") is not None:
        reply.block_reason = _member(types.BlockedReason, feedback["blockReason"])
    candidates = data.get("candidates")
    if not isinstance(candidates, list) or not candidates:
        return
    reply.candidates = True
    candidate = candidates[0] if isinstance(candidates[0], dict) else {}
    if candidate.get("finishReason") is not None:
        reply.finish_reason = _member(types.FinishReason, candidate["finishReason"])
    content = candidate.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    for part in parts if isinstance(parts, list) else ():
        if not isinstance(part, dict):
            continue
        call = part.get("functionCall")
        if isinstance(call, dict):
            args = call.get("args")
            if args is not None and not isinstance(args, dict):
                raise ProviderError(WRONG_SHAPE)
            signature = _decoded(part.get("thoughtSignature"))
            entry = _Call(str(call.get("id") or ""), str(call.get("name") or ""), args or {}, signature)
            reply.pieces.append(entry)
        elif isinstance(part.get("text"), str) and part["text"] and not part.get("thought"):
            reply.pieces.append(part["text"])


def _member(kind: type[enum.Enum], value: object) -> str:
    """An enum value of the API's JSON as the SDK reads it: a known one in any case, as its name."""
    text = str(value)
    return text.upper() if text.upper() in kind.__members__ else text


def _decoded(value: object) -> bytes | None:
    """A ``bytes`` field of the API's JSON (base64, standard or URL-safe alphabet), as the SDK reads it."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return base64.urlsafe_b64decode(value.replace("+", "-").replace("/", "_") + "=" * (-len(value) % 4))
    except (binascii.Error, ValueError):
        return None


def stop_reason(reply: GeminiReply) -> str | None:
    """The MCP ``stopReason`` for a finished reply."""
    if any(isinstance(p, _Call) for p in reply.pieces):
        return "toolUse"
    reason = reply.finish_reason
    if reason is None:
        return None
    if reason in _FINISH:
        return _FINISH[reason]
    head, *rest = reason.lower().split("_")
    return head + "".join(word.capitalize() for word in rest)


def make_result(reply: GeminiReply, model: str) -> CreateMessageResult:
    """The ``CreateMessageResult`` for ``reply``, reported as ``model``."""
    if not reply.candidates:
        blocked = f" (the prompt was blocked: {reply.block_reason})" if reply.block_reason else ""
        raise ProviderError(f"the backend returned no candidates{blocked}")
    reason = stop_reason(reply)
    calls = [p for p in reply.pieces if isinstance(p, _Call)]
    if not calls:
        return CreateMessageResult(
            role="assistant", content=TextContent(text=reply.text), model=model, stop_reason=reason
        )
    content: list[SamplingContent] = []
    number = 0
    for piece in reply.pieces:
        if isinstance(piece, str):
            if content and isinstance(content[-1], TextContent):
                content[-1] = TextContent(text=content[-1].text + piece)
            elif piece:
                content.append(TextContent(text=piece))
        else:
            content.append(_tool_use(piece, number))
            number += 1
    return CreateMessageResult(role="assistant", content=content, model=model, stop_reason=reason)


def _tool_use(call: _Call, position: int) -> ToolUseContent:
    meta = {SIGNATURE_META: base64.b64encode(call.signature).decode()} if call.signature else None
    return ToolUseContent(id=call.id or f"call_{position}", name=call.name, input=call.args, meta=meta)
