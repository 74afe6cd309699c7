"""What the inbox shows of a request, and what an answer to it means.

Rules:

- An item's ``request`` is what the page and the JSON API show: every piece
  of server text passed through :func:`host_receiver.sanitize.safe_text`
  (multiline for bodies), so a front-end shows it as it comes (as text, never
  as HTML) and sees no control, escape or bidi character raw. A body (a
  message, a system prompt, a URL) is cut at
  :data:`~host_receiver.sanitize.SHOWN_LIMIT` characters as the terminal cuts
  it, saying how long it was ("… [N characters]"); a name at
  :data:`LABEL_LIMIT`. Raw values travel only where they are not shown, to
  answer with: a form field's ``key`` (its property name, which a form's
  ``content`` and ``problems`` are keyed by), the values of an enum's
  options, and media data.
- An answer is a JSON object with an ``action`` (docs/inbox.md). It is
  checked here, completely, before it resolves anything: a wrong answer is
  an :class:`InvalidAnswer` naming the fields (the form's own checks,
  :meth:`~host_receiver.protocol.elicitation_rules.FormSchema.problems`, the same as the
  terminal's) and the item stays pending.
- Edited text is compared with what was shown: text sent back unchanged keeps
  the server's original (which may hold characters the page showed escaped).

Fixed caps (docs/limits.md): ``LABEL_LIMIT``.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal, cast

from host_receiver.errors import InvalidAnswer
from host_receiver.people.approval import (
    Approve,
    FormView,
    LinkDone,
    Refuse,
    RememberScope,
    RequestDecision,
    ResultDecision,
    SamplingRequestView,
    SamplingResultView,
    Send,
    UrlAnswer,
    UrlView,
    result_text,
)
from host_receiver.protocol.elicitation_rules import FormField
from host_receiver.protocol.types import (
    AudioContent,
    CreateMessageResult,
    ElicitResult,
    ImageContent,
    SamplingMessage,
    TextContent,
    ToolResultContent,
    ToolUseContent,
)
from host_receiver.sanitize import SHOWN_LIMIT, safe_text

Kind = Literal["sampling", "result", "form", "url", "done"]
#: A person's answer, as the hook returns it.
Decision = RequestDecision | ResultDecision | ElicitResult | UrlAnswer | LinkDone

#: The longest name, title or label shown (longer ones end in "… [N characters]").
LABEL_LIMIT = 200
#: Media types shown as an image or an audio player (anything else is named, not shown).
_MEDIA_TYPE = re.compile(r"^(image|audio)/[a-z0-9][a-z0-9.+-]{0,63}$")
_BASE64 = re.compile(r"^[A-Za-z0-9+/]*={0,2}$")
_SCOPES: dict[str, RememberScope] = {"once": "once", "session": "session", "always": "always"}


def label(text: str) -> str:
    """A name or title, escaped and cut to :data:`LABEL_LIMIT`."""
    return safe_text(text, LABEL_LIMIT)


def body(text: str) -> str:
    """A body of text, escaped (newlines and tabs kept), cut at SHOWN_LIMIT as the terminal cuts it."""
    return safe_text(text, SHOWN_LIMIT, multiline=True)


# --- what is shown --------------------------------------------------------------


def sampling_request(view: SamplingRequestView) -> dict[str, Any]:
    params = view.params
    hints = params.model_preferences.hints if params.model_preferences else None
    return {
        "model": label(view.model),
        "allowedModels": [label(m) for m in view.allowed_models],
        "modelHints": [label(h.name) for h in hints or () if h.name],
        "maxTokens": view.max_tokens,
        "requestedMaxTokens": view.requested_max_tokens,
        "systemPrompt": body(params.system_prompt) if params.system_prompt is not None else None,
        "temperature": params.temperature,
        "stopSequences": [body(s) for s in params.stop_sequences or ()],
        "includeContext": params.include_context,
        "tools": [
            {"name": label(t.name), "description": body(t.description) if t.description else None}
            for t in params.tools or ()
        ],
        "toolChoice": params.tool_choice.mode if params.tool_choice else None,
        "messages": [_message(m) for m in params.messages],
    }


def _message(message: SamplingMessage) -> dict[str, Any]:
    blocks = message.blocks()
    editable = len(blocks) == 1 and isinstance(blocks[0], TextContent)
    return {"role": message.role, "content": [block_json(b) for b in blocks], "editable": editable}


def block_json(block: object) -> dict[str, Any]:
    """A content block as the page shows it: text, media (when its type is one), or a description."""
    if isinstance(block, TextContent):
        return {"type": "text", "text": body(block.text)}
    if isinstance(block, ImageContent | AudioContent):
        shown = _MEDIA_TYPE.match(block.mime_type) and block.mime_type.startswith(block.type)
        if shown and _BASE64.match(block.data):
            return {"type": block.type, "mimeType": block.mime_type, "data": block.data}
        return {"type": "text", "text": f"[{block.type} of type {label(block.mime_type)}, not shown]"}
    if isinstance(block, ToolUseContent):
        return {
            "type": "tool_use",
            "name": label(block.name),
            "input": body(json.dumps(block.input, ensure_ascii=False)),
        }
    if isinstance(block, ToolResultContent):
        inner = " ".join(b.text if isinstance(b, TextContent) else f"[{b.type}]" for b in block.content)
        return {"type": "tool_result", "toolUseId": label(block.tool_use_id), "text": body(inner)}
    return {"type": "text", "text": f"[{label(str(getattr(block, 'type', 'content')))}]"}


def sampling_result(view: SamplingResultView) -> dict[str, Any]:
    result = view.result
    text = result_text(result)
    return {
        "model": label(result.model),
        "stopReason": label(result.stop_reason) if result.stop_reason else None,
        "content": [block_json(b) for b in _blocks(result)],
        "editable": text is not None,
    }


def _blocks(result: CreateMessageResult) -> list[Any]:
    return result.content if isinstance(result.content, list) else [result.content]


def form(view: FormView) -> dict[str, Any]:
    return {
        "message": body(view.message),
        "fields": [_field(f, view) for f in view.schema.fields],
        "problems": {name: body(p) for name, p in view.problems.items()},
    }


def _field(field: FormField, view: FormView) -> dict[str, Any]:
    value = view.values.get(field.name)
    return {
        "key": field.name,
        "name": label(field.name),
        "label": label(field.label),
        "description": body(field.description) if field.description else None,
        "type": field.kind,
        "required": field.required,
        "format": field.format,
        "minimum": field.minimum,
        "maximum": field.maximum,
        "minLength": field.min_length,
        "maxLength": field.max_length,
        "minItems": field.min_items,
        "maxItems": field.max_items,
        "options": [{"value": v, "label": label(t)} for v, t in field.options],
        "value": body(value) if isinstance(value, str) else value,
    }


def url(view: UrlView) -> dict[str, Any]:
    return {
        "message": body(view.message),
        "url": safe_text(view.url, SHOWN_LIMIT),
        "domain": label(view.domain),
        "warnings": list(view.warnings),
    }


def excerpt(kind: str, request: dict[str, Any], limit: int = 200) -> str | None:
    """A one-line excerpt of what ``request`` (already escaped) asks, for a notification's content."""
    if kind == "sampling":
        messages = request.get("messages") or [{}]
        text = " ".join(b.get("text", "") for b in messages[-1].get("content", ()) if b.get("type") == "text")
    elif kind == "result":
        text = " ".join(b.get("text", "") for b in request.get("content", ()) if b.get("type") == "text")
    elif kind == "url":
        text = f"{request.get('message', '')} ({request.get('domain', '')})"
    else:
        text = str(request.get("message", ""))
    line = " ".join(text.split())
    if not line:
        return None
    return line if len(line) <= limit else f"{line[:limit]}…"


# --- what an answer means --------------------------------------------------------


def sampling_decision(view: SamplingRequestView, answer: dict[str, Any]) -> RequestDecision:
    """``approve`` (``remember``: once, session, always; optional ``edits``), ``refuse`` or ``never``."""
    action = answer.get("action")
    if action == "refuse":
        return Refuse()
    if action == "never":
        return Refuse(remember="never")
    if action != "approve":
        raise InvalidAnswer({"action": "must be approve, refuse or never"})
    scope = answer.get("remember", "once")
    remember = _SCOPES.get(scope) if isinstance(scope, str) else None
    if remember is None:
        raise InvalidAnswer({"remember": "must be once, session or always"})
    edits = answer.get("edits") or {}
    if not isinstance(edits, dict):
        raise InvalidAnswer({"edits": "must be an object"})
    return Approve(
        system_prompt=_edited_system_prompt(view, edits.get("systemPrompt")),
        messages=_edited_messages(view, edits.get("messages")),
        max_tokens=_edited_max_tokens(view, edits.get("maxTokens")),
        remember=remember,
    )


def _edited_system_prompt(view: SamplingRequestView, text: Any) -> str | None:
    if text is None:
        return None
    if not isinstance(text, str):
        raise InvalidAnswer({"systemPrompt": "must be text"})
    original = view.params.system_prompt or ""
    return None if text == body(original) else text


def _edited_messages(view: SamplingRequestView, texts: Any) -> list[SamplingMessage] | None:
    if texts is None:
        return None
    messages = view.params.messages
    if not isinstance(texts, list) or len(texts) != len(messages):
        raise InvalidAnswer({"messages": f"must be a list of {len(messages)} texts (null: unchanged)"})
    edited, changed = [], False
    for number, (message, text) in enumerate(zip(messages, texts, strict=True), 1):
        blocks = message.blocks()
        if text is None:
            edited.append(message)
            continue
        if not (isinstance(text, str) and len(blocks) == 1 and isinstance(blocks[0], TextContent)):
            raise InvalidAnswer({"messages": f"message {number} cannot take this text"})
        if text == body(blocks[0].text):
            edited.append(message)
            continue
        edited.append(message.model_copy(update={"content": TextContent(text=text)}))
        changed = True
    return edited if changed else None


def _edited_max_tokens(view: SamplingRequestView, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= view.max_tokens:
        raise InvalidAnswer({"maxTokens": f"must be a whole number from 1 to {view.max_tokens}"})
    return None if value == view.max_tokens else value


def result_decision(view: SamplingResultView, answer: dict[str, Any]) -> ResultDecision:
    """``send`` (optional ``text``, for a text result) or ``refuse``."""
    action = answer.get("action")
    if action == "refuse":
        return Refuse()
    if action != "send":
        raise InvalidAnswer({"action": "must be send or refuse"})
    text = answer.get("text")
    if text is None:
        return Send()
    original = result_text(view.result)
    if original is None:
        raise InvalidAnswer({"text": "only a plain text result can be edited"})
    if not isinstance(text, str):
        raise InvalidAnswer({"text": "must be text"})
    if text == body(original):
        return Send()
    return Send(view.result.model_copy(update={"content": TextContent(text=text)}))


def form_answer(view: FormView, answer: dict[str, Any]) -> ElicitResult:
    """``accept`` with ``content`` the form's checks pass, ``decline`` or ``cancel``."""
    action = answer.get("action")
    if action in ("decline", "cancel"):
        return ElicitResult(action=action)
    if action != "accept":
        raise InvalidAnswer({"action": "must be accept, decline or cancel"})
    content = answer.get("content", {})
    if not isinstance(content, dict):
        raise InvalidAnswer({"content": "must be an object"})
    problems = view.schema.problems(content)
    if problems:
        raise InvalidAnswer(problems)
    return ElicitResult(action="accept", content=content)


def url_answer(answer: dict[str, Any]) -> UrlAnswer:
    """``accept`` (the person opened the link), ``decline`` or ``cancel``."""
    action = answer.get("action")
    if action in ("accept", "decline", "cancel"):
        return cast(UrlAnswer, action)
    raise InvalidAnswer({"action": "must be accept, decline or cancel"})


def link_done_answer(answer: dict[str, Any]) -> LinkDone:
    """``done`` (the person finished at the link a request needs) or ``cancel`` (gave up)."""
    action = answer.get("action")
    if action in ("done", "cancel"):
        return cast(LinkDone, action)
    raise InvalidAnswer({"action": "must be done or cancel"})
