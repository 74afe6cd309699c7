"""What the screens show: sampling requests and results, forms, URLs (pure functions).

Rules: everything a person must judge is shown in full (messages, system
prompt, tool names, the whole URL) up to :data:`TEXT_LIMIT` characters a
piece (:data:`host_receiver.sanitize.SHOWN_LIMIT`, the web inbox's cut too),
and a longer piece is cut saying how long it was; names (server,
model, tool, field, option) are one line of at most :data:`LABEL_LIMIT`
characters, their controls and newlines escaped (:func:`label`), so that
a name cannot fake a line of the screen; each screen opens with a title naming
the server (by the name it gives itself, with its command or URL in small
print: :class:`Who`) and the task; media is described, never dumped. What the server
wrote is made safe to show by the console (:mod:`._console`), never here alone.

Fixed caps (docs/limits.md): ``LABEL_LIMIT``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from prompt_toolkit.formatted_text import FormattedText

from host_receiver.cli.terminal._activity import task_label
from host_receiver.people.approval import Approve, FormView, SamplingRequestView, SamplingResultView, UrlView
from host_receiver.protocol.elicitation_rules import FormField, FormSchema
from host_receiver.protocol.types import (
    AudioContent,
    CreateMessageResult,
    ElicitValue,
    ImageContent,
    SamplingContent,
    TextContent,
    ToolResultContent,
    ToolUseContent,
)
from host_receiver.sanitize import SHOWN_LIMIT, bounded, safe_text

Lines = list[tuple[str, str]]

#: The longest name shown (server, model, tool, field, option, domain).
LABEL_LIMIT = 120
#: The longest piece of text shown whole (a message, a system prompt, a URL): the one rule of
#: the terminal and the web inbox.
TEXT_LIMIT = SHOWN_LIMIT


def label(text: str) -> str:
    """A name the server chose, as one line (controls and newlines escaped), cut at LABEL_LIMIT."""
    return safe_text(text, LABEL_LIMIT)


def body(text: str) -> str:
    """A piece of text the server wrote, cut at TEXT_LIMIT (the console escapes what it must)."""
    return bounded(text, TEXT_LIMIT)


@dataclass(frozen=True)
class Who:
    """How the screens name a server: the name it gives itself (serverInfo title or name, or the
    host's name for it until it is known) and, in small print, where it runs (command or URL)."""

    name: str
    where: str = ""


def title(what: str, who: Who, task_id: str | None) -> Lines:
    lines = [("class:title", f"\n─── {what} from "), ("class:server", label(who.name))]
    if who.where:
        lines.append(("class:where", f" ({label(who.where)})"))
    return [*lines, ("class:title", f" · {task_label(task_id)} ───\n")]


def _row(name: str, value: str, width: int = 12) -> Lines:
    return [("class:label", f"  {name:<{width}} "), ("", f"{value}\n")]


def describe_block(block: SamplingContent) -> str:
    """A content block as text a person can read."""
    if isinstance(block, TextContent):
        return body(block.text)
    if isinstance(block, ImageContent | AudioContent):
        size = len(block.data) * 3 // 4
        return f"[{block.type} {label(block.mime_type)}, {size} bytes]"
    if isinstance(block, ToolUseContent):
        arguments = body(json.dumps(block.input, ensure_ascii=False))
        return f"[calls tool {label(block.name)} with {arguments}]"
    if isinstance(block, ToolResultContent):
        inner = " ".join(b.text if isinstance(b, TextContent) else f"[{b.type}]" for b in block.content)
        return f"[result of tool call {label(block.tool_use_id)}: {body(inner)}]"
    return f"[{getattr(block, 'type', 'content')}]"


def _indent(text: str, prefix: str = "      ") -> str:
    return text.replace("\n", "\n" + prefix)


def sampling_request(view: SamplingRequestView, who: Who, edits: Approve | None = None) -> FormattedText:
    params = view.params
    lines = title("Sampling request", who, view.task_id)
    allowed = ", ".join(label(m) for m in view.allowed_models) or "none"
    lines += _row("model", f"{label(view.model)}   (allowed for this server: {allowed})")
    if view.provider is not None:
        lines += _row("provider", f"{label(view.provider)}   ({label(view.reason) or 'chosen'})")
    limit = str(view.max_tokens)
    if view.clamped:
        limit += f" (the server asked for {view.requested_max_tokens}; lowered to this host's limit)"
    lines += _row("max tokens", limit)
    lines += _row("system", _indent(body(params.system_prompt)) if params.system_prompt else "(none)")
    if params.tools:
        names = ", ".join(label(t.name) for t in params.tools)
        choice = params.tool_choice.mode if params.tool_choice and params.tool_choice.mode else "auto"
        lines += _row("tools", f"{names}   (tool choice: {choice})")
    else:
        lines += _row("tools", "none")
    if params.temperature is not None:
        unsent = "   (not sent: the model's API does not take it)" if "temperature" in view.not_sent else ""
        lines += _row("temperature", f"{params.temperature}{unsent}")
    if params.include_context not in (None, "none"):
        lines += _row("context", f"asks to include {params.include_context} (not provided by this host)")
    lines += _row("messages", str(len(params.messages)))
    for number, message in enumerate(params.messages, 1):
        text = "\n".join(describe_block(b) for b in message.blocks())
        lines += [("class:label", f"    [{number}] {message.role}: "), ("", _indent(text) + "\n")]
    if edits is not None:
        lines += edit_summary(view, edits)
    return FormattedText(lines)


def edit_summary(view: SamplingRequestView, edits: Approve) -> Lines:
    changes = []
    if edits.system_prompt is not None:
        changes.append(f"system prompt → {body(repr(edits.system_prompt))}")
    if edits.max_tokens is not None:
        changes.append(f"max tokens {view.max_tokens} → {edits.max_tokens}")
    if edits.model is not None:
        changes.append(f"model {label(view.model)} → {label(edits.model)}")
    if not changes:
        return []
    return [("class:warn", "  your edits: "), ("", "; ".join(changes) + "\n")]


def sampling_result(view: SamplingResultView, who: Who, result: CreateMessageResult) -> FormattedText:
    lines = title("Sampling result", who, view.task_id)
    lines += _row("model", label(result.model))
    lines += _row("stop reason", label(result.stop_reason) if result.stop_reason else "(none)")
    blocks = result.content if isinstance(result.content, list) else [result.content]
    text = "\n".join(describe_block(b) for b in blocks)
    lines += _row("text", _indent(text, " " * 15))
    return FormattedText(lines)


def describe_field(field: FormField) -> str:
    """The kind of answer a field takes, with its bounds."""
    if field.kind == "boolean":
        return "yes or no"
    if field.kind in ("number", "integer"):
        kind = "whole number" if field.kind == "integer" else "number"
        bounds = []
        if field.minimum is not None:
            bounds.append(f"at least {field.minimum:g}")
        if field.maximum is not None:
            bounds.append(f"at most {field.maximum:g}")
        return ", ".join([kind, *bounds])
    if field.kind == "enum":
        return "one of " + ", ".join(_option(v, label) for v, label in field.options)
    if field.kind == "multi_enum":
        count = []
        if field.min_items is not None:
            count.append(f"at least {field.min_items}")
        if field.max_items is not None:
            count.append(f"at most {field.max_items}")
        how = f" ({', '.join(count)})" if count else ""
        return "any of " + ", ".join(_option(v, label) for v, label in field.options) + how
    parts = ["text"]
    if field.format is not None:
        parts.append(field.format)
    if field.min_length is not None and field.max_length is not None:
        parts.append(f"{field.min_length}-{field.max_length} characters")
    elif field.min_length is not None:
        parts.append(f"at least {field.min_length} characters")
    elif field.max_length is not None:
        parts.append(f"at most {field.max_length} characters")
    return ", ".join(parts)


def _option(value: str, name: str) -> str:
    return label(value) if value == name else f"{label(name)} ({label(value)})"


def show_value(field: FormField, value: ElicitValue | None) -> str:
    """A value as the person reads it: a choice by its title, a boolean as yes or no."""
    return "" if value is None else body(field.plain(value))


def format_value(field: FormField, value: ElicitValue | None) -> str:
    """A value as the person would type it."""
    return "" if value is None else body(field.plain(value, titles=False))


def form(view: FormView, who: Who) -> FormattedText:
    lines = title("Form", who, view.task_id)
    lines += [("", f"  {_indent(body(view.message), '  ')}\n")]
    width = max((len(label(f.label)) + 1 for f in view.schema.fields), default=0)
    for field in view.schema.fields:
        name = label(field.label) + ("*" if field.required else "")
        lines += [("class:key", f"  {name:<{width}} "), ("class:label", describe_field(field))]
        default = view.values.get(field.name)
        if default is not None:
            lines += [("class:label", f"   [{show_value(field, default)}]")]
        lines += [("", "\n")]
        if field.description:
            lines += [("class:label", f"      {_indent(body(field.description))}\n")]
        problem = view.problems.get(field.name)
        if problem is not None:
            lines += [("class:bad", f"      ✗ {body(problem)}\n")]
    lines += [("class:label", "  (* required)\n")]
    return FormattedText(lines)


def answers(schema: FormSchema, values: Mapping[str, ElicitValue]) -> FormattedText:
    lines: Lines = [("class:title", "  Your answers:\n")]
    width = max((len(label(f.label)) for f in schema.fields), default=0)
    for field in schema.fields:
        shown = show_value(field, values[field.name]) if field.name in values else "(left empty)"
        lines += _row(label(field.label), shown, width)
    return FormattedText(lines)


def url(view: UrlView, who: Who) -> FormattedText:
    lines = title("Link to open", who, view.task_id)
    lines += [("", f"  {_indent(body(view.message), '  ')}\n")]
    lines += _row("URL", safe_text(view.url, TEXT_LIMIT))
    lines += [("class:label", f"  {'domain':<12} "), ("class:domain", f" {label(view.domain)} "), ("", "\n")]
    for warning in view.warnings:
        lines += [("class:warn", f"  ⚠ {warning}\n")]
    lines += [("class:label", "  Nothing is opened or fetched unless you agree.\n")]
    return FormattedText(lines)
