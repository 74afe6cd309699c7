"""The GenAI spans: the ``chat`` span of one provider call, what the backend reports, content capture.

Per the semantic conventions for GenAI client calls (docs/observability.md):
:meth:`_GenAI.chat` is the CLIENT span of one provider call (``chat {model}``);
a backend tells it what only the wire says (response id, model, token usage)
through :func:`report_reply`. Prompt, system instructions and reply are
recorded only when ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``
(:data:`CAPTURE_CONTENT`). No key, token or header is ever recorded: nothing
here is given one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from host_receiver.protocol.types import CreateMessageResult, SamplingRequest, dump
from host_receiver.sanitize import safe_text
from host_receiver.telemetry._core import _OTHER, NAME_LIMIT, _Core, _Span

#: The environment variable that turns on recording prompts and replies (GenAI conventions).
CAPTURE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
#: ``gen_ai.provider.name`` of a provider's vendor, where the conventions name it otherwise.
_PROVIDER_NAMES = {"google": "gcp.gemini", "gemini": "gcp.gemini"}
#: The GenAI call running in this context (for what the backend reports).
_CHAT: ContextVar[ChatCall | None] = ContextVar("host_receiver_chat", default=None)


def report_reply(
    *,
    response_id: object = None,
    response_model: object = None,
    input_tokens: object = None,
    output_tokens: object = None,
) -> None:
    """What a backend's reply says (its id, model, token usage), for the GenAI call in this context."""
    chat = _CHAT.get()
    if chat is None:
        return
    if isinstance(response_id, str) and response_id:
        chat.set("gen_ai.response.id", safe_text(response_id, NAME_LIMIT))
    if isinstance(response_model, str) and response_model:
        chat.response_model = safe_text(response_model, NAME_LIMIT)
    if type(input_tokens) is int and input_tokens >= 0:
        chat.input_tokens = input_tokens
    if type(output_tokens) is int and output_tokens >= 0:
        chat.output_tokens = output_tokens


class ChatCall(_Span):
    """The CLIENT span of one provider call; the backend reports usage through :func:`report_reply`."""

    response_model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    capture = False

    def result(self, result: CreateMessageResult) -> None:
        """What the result says (model, finish reason) and, on opt-in, the reply itself."""
        if self.span is None:
            return
        if self.response_model is None:
            self.response_model = safe_text(result.model, NAME_LIMIT)
        reason = result.stop_reason
        if reason is not None:
            self.set("gen_ai.response.finish_reasons", [safe_text(reason, NAME_LIMIT)])
        if self.capture:
            content = dump(result)["content"]
            message = {"role": "assistant", "parts": _parts(content), "finish_reason": reason}
            self.set("gen_ai.output.messages", json.dumps([message]))


class _GenAI(_Core):
    """The GenAI part of :class:`Telemetry`: the span and the metrics of one provider call."""

    @contextmanager
    def chat(
        self,
        *,
        vendor: str | None,
        model: str,
        request: SamplingRequest,
        address: str | None = None,
        port: int | None = None,
    ) -> Iterator[ChatCall]:
        """The CLIENT span of one provider call (``chat {model}``) for ``request``.

        ``vendor`` is the provider's (``Provider.vendor``): its
        ``gen_ai.provider.name`` is the conventions' name for it, ``_OTHER`` for none.
        Messages and system prompt are recorded only on opt-in (:data:`CAPTURE_CONTENT`).
        """
        if not self.recording:
            yield ChatCall(None)
            return
        model = safe_text(model, NAME_LIMIT)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": _PROVIDER_NAMES.get(vendor or "", vendor or _OTHER),
            "gen_ai.request.model": model,
            "gen_ai.request.max_tokens": request.max_tokens,
        }
        if request.temperature is not None:
            attributes["gen_ai.request.temperature"] = request.temperature
        if request.stop_sequences:
            attributes["gen_ai.request.stop_sequences"] = [
                safe_text(stop, NAME_LIMIT) for stop in request.stop_sequences
            ]
        if address:
            attributes["server.address"] = address
            if port is not None:
                attributes["server.port"] = port
        capture = os.environ.get(CAPTURE_CONTENT, "").strip().lower() == "true"
        if capture:
            wire = dump(request)
            messages = [{"role": m.get("role"), "parts": _parts(m.get("content"))} for m in wire["messages"]]
            attributes["gen_ai.input.messages"] = json.dumps(messages)
            if request.system_prompt:
                instructions = [{"type": "text", "content": request.system_prompt}]
                attributes["gen_ai.system_instructions"] = json.dumps(instructions)
        raw = self._start(f"chat {model}", "CLIENT", attributes, None, None)
        with self._recorded(raw, ChatCall) as call:
            call.capture = capture
            mine = _CHAT.set(call)
            try:
                yield call
            finally:
                _CHAT.reset(mine)
                self._chat_done(call, attributes)

    def _chat_done(self, call: ChatCall, attributes: Mapping[str, Any]) -> None:
        if call.response_model is not None:
            call.set("gen_ai.response.model", call.response_model)
        usage = (("input", call.input_tokens), ("output", call.output_tokens))
        for kind, count in usage:
            if count is not None:
                call.set(f"gen_ai.usage.{kind}_tokens", count)
        if not self.recording:
            return
        keep = ("gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model", "server.address")
        labels = {k: attributes[k] for k in keep if k in attributes}
        if call.response_model is not None:
            labels["gen_ai.response.model"] = call.response_model
        if call.error is not None:
            labels["error.type"] = call.error
        self._genai_duration.record(call.elapsed(), labels)
        for kind, count in usage:
            if count is not None:
                self._genai_tokens.record(count, {**labels, "gen_ai.token.type": kind})


def _parts(content: object) -> list[dict[str, Any]]:
    """MCP content blocks as the GenAI conventions' message parts."""
    blocks: Sequence[object] = content if isinstance(content, list) else [content]
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append({"type": "text", "content": block.get("text")})
        elif kind == "tool_use":
            parts.append(
                {
                    "type": "tool_call",
                    "id": block.get("id"),
                    "name": block.get("name"),
                    "arguments": block.get("input"),
                }
            )
        elif kind == "tool_result":
            parts.append(
                {
                    "type": "tool_call_response",
                    "id": block.get("toolUseId"),
                    "response": _parts(block.get("content")),
                }
            )
        else:
            parts.append({"type": "blob", "modality": kind, "mime_type": block.get("mimeType")})
    return parts
