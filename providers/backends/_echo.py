"""The offline ``echo`` provider: deterministic answers, no network.

It is the default when nothing else is configured, so a demo runs offline.
What it answers, for every valid request:

* when the last message carries ``tool_result`` blocks: a text summing them up
  (``stopReason: endTurn``), which ends a tool loop;
* otherwise, when tools are offered and ``toolChoice`` is not ``none``: a call
  of the first tool, with arguments built from its input schema (required
  properties only: the schema's ``default``, ``const`` or first ``enum``
  value, else an empty value of the declared type), ``stopReason: toolUse``;
* otherwise: ``echo: `` followed by the last user message's text (media
  described as ``[image image/png]``), cut at the first stop sequence
  (``stopSequence``) or after ``maxTokens`` words (``maxTokens``), else
  ``endTurn``.

Words stand in for tokens. Progress is reported after every word. With a
``delay``, the words are spread evenly over that many seconds (a slow LLM for
demos and benchmarks); the wait is cancellable.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import anyio
import anyio.lowlevel

from host_receiver.protocol.types import (
    AudioContent,
    CreateMessageResult,
    ImageContent,
    SamplingContent,
    SamplingMessage,
    SamplingRequest,
    TextContent,
    Tool,
    ToolResultContent,
    ToolUseContent,
)

from .._contract import ModelInfo, ProgressSink, SamplingProgress, progress_text

__all__ = ["ECHO_MODEL", "EchoProvider"]

#: The echo provider's one model; the name says it is offline.
ECHO_MODEL = ModelInfo(
    id="echo-offline",
    provider="echo",
    cost=1.0,
    speed=1.0,
    intelligence=0.0,
    tools=True,
    images=True,
    audio=True,
    context_tokens=1_000_000,
)


class EchoProvider:
    """Answers by echoing; see the module docstring for the exact rules."""

    def __init__(self, name: str = "echo", *, delay: float = 0.0) -> None:
        if delay < 0:
            raise ValueError("delay must not be negative")
        self._name = name
        self.delay = delay
        self._model = ModelInfo(
            id=ECHO_MODEL.id,
            provider=name,
            cost=ECHO_MODEL.cost,
            speed=ECHO_MODEL.speed,
            intelligence=ECHO_MODEL.intelligence,
            tools=True,
            images=True,
            audio=True,
            context_tokens=ECHO_MODEL.context_tokens,
        )

    @property
    def name(self) -> str:
        return self._name

    def models(self) -> Sequence[ModelInfo]:
        return (self._model,)

    async def aclose(self) -> None:
        """Nothing to release."""

    def __repr__(self) -> str:
        return f"EchoProvider(name={self._name!r}, delay={self.delay!r})"

    async def sample(
        self,
        params: SamplingRequest,
        model: ModelInfo,
        progress: ProgressSink | None = None,
    ) -> CreateMessageResult:
        last = params.messages[-1] if params.messages else None
        results = [b for b in last.blocks() if isinstance(b, ToolResultContent)] if last else []
        mode = params.tool_choice.mode if params.tool_choice else None
        if results:
            text, stop = _summarise(results), "endTurn"
        elif params.tools and mode != "none":
            await self._pace([params.tools[0].name], progress)
            call = _call(params.tools[0], len(params.messages))
            content: list[SamplingContent] = [
                TextContent(text=f"echo: calling {call.name}"),
                call,
            ]
            return CreateMessageResult(
                role="assistant", content=content, model=model.id, stop_reason="toolUse"
            )
        else:
            text, stop = _cut(_echo(params.messages), params.stop_sequences, params.max_tokens)
        await self._pace(text.split(" "), progress)
        return CreateMessageResult(
            role="assistant", content=TextContent(text=text), model=model.id, stop_reason=stop
        )

    async def _pace(self, words: list[str], progress: ProgressSink | None) -> None:
        """Report progress word by word, spreading ``delay`` over the words."""
        step = self.delay / max(len(words), 1)
        done: list[str] = []
        characters = -1  # no space before the first word
        for word in words:
            if step:
                await anyio.sleep(step)
            else:
                await anyio.lowlevel.checkpoint()
            done.append(word)
            characters += len(word) + 1
            if progress is not None:
                text = progress_text(" ".join(done))
                await progress(SamplingProgress(len(done), text, characters))


def _describe(block: object) -> str:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent):
        return f"[image {block.mime_type}]"
    if isinstance(block, AudioContent):
        return f"[audio {block.mime_type}]"
    if isinstance(block, ToolUseContent):
        return f"[tool_use {block.name}]"
    if isinstance(block, ToolResultContent):
        return f"[tool_result {block.tool_use_id}]"
    return f"[{getattr(block, 'type', 'content')}]"


def _echo(messages: list[SamplingMessage]) -> str:
    users = [m for m in messages if m.role == "user"]
    if not users:
        return "echo:"
    said = " ".join(_describe(b) for b in users[-1].blocks())
    return f"echo: {said}".rstrip()


def _cut(text: str, stops: list[str] | None, max_tokens: int) -> tuple[str, str]:
    found = [(text.find(s), s) for s in stops or () if s and s in text]
    if found:
        return text[: min(found)[0]], "stopSequence"
    words = text.split(" ")
    if len(words) > max_tokens:
        return " ".join(words[: max(max_tokens, 0)]), "maxTokens"
    return text, "endTurn"


def _summarise(results: list[ToolResultContent]) -> str:
    parts = []
    for result in results:
        body = " ".join(_describe(b) for b in result.content)
        if not body and result.structured_content is not None:
            body = json.dumps(result.structured_content, sort_keys=True)
        flag = " (error)" if result.is_error else ""
        parts.append(f"{result.tool_use_id}{flag}: {body}".rstrip())
    return "echo: tool results: " + "; ".join(parts)


def _call(tool: Tool, position: int) -> ToolUseContent:
    arguments = _example(tool.input_schema)
    return ToolUseContent(
        id=f"echo_call_{position}",
        name=tool.name,
        input=arguments if isinstance(arguments, dict) else {},
    )


_EMPTY: dict[str, Any] = {
    "string": "echo",
    "number": 0,
    "integer": 0,
    "boolean": False,
    "array": [],
    "null": None,
}


def _example(schema: Any, depth: int = 0) -> Any:
    """A small value that satisfies the common parts of a JSON schema."""
    if not isinstance(schema, dict) or depth > 8:
        return {}
    for key in ("default", "const"):
        if key in schema:
            return schema[key]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties") or {}
        required = schema.get("required") or []
        return {name: _example(props.get(name, {}), depth + 1) for name in required if isinstance(name, str)}
    if kind == "array":
        minimum = schema.get("minItems", 0)
        if isinstance(minimum, int) and minimum > 0:
            return [_example(schema.get("items", {}), depth + 1)] * minimum
        return []
    if kind == "string":
        minimum = schema.get("minLength", 0)
        return "echo".ljust(minimum, "o") if isinstance(minimum, int) else "echo"
    if kind in ("number", "integer"):
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        if isinstance(low, int | float) and not isinstance(low, bool):
            return int(low) + 1 if "exclusiveMinimum" in schema else low
        return 0
    return _EMPTY.get(str(kind))
