"""An answer checked against an item's request JSON as the store keeps it (what
:mod:`._items` made), for the store-backed board (:mod:`._board`): the rules of
:mod:`._items`'s deciders, without the host's views. The host that owns the item
decides what a valid answer means with its own decider.
"""

from __future__ import annotations

from typing import Any

from host_receiver.errors import InvalidAnswer
from host_receiver.protocol.elicitation_rules import FormField, FormSchema
from host_receiver.web._items import _SCOPES, label, link_done_answer, url_answer


def check_answer(kind: str, request: dict[str, Any], answer: dict[str, Any]) -> None:
    """Check ``answer`` against ``request``, the item JSON of :func:`sampling_request`,
    :func:`sampling_result`, :func:`form` or :func:`url` as kept in the store, by the rules of the
    deciders above (what the page may send); :class:`InvalidAnswer` naming what is wrong. The host
    that owns the item decides what a valid answer means with its own decider."""
    checks = {
        "sampling": _check_sampling,
        "result": _check_result,
        "form": _check_form,
        "url": _check_url,
        "done": _check_done,
    }
    check = checks.get(kind)
    if check is None:
        raise InvalidAnswer({"action": f"an item of kind {label(kind)} cannot be answered here"})
    check(request, answer)


def _check_sampling(request: dict[str, Any], answer: dict[str, Any]) -> None:
    action = answer.get("action")
    if action in ("refuse", "never"):
        return
    if action != "approve":
        raise InvalidAnswer({"action": "must be approve, refuse or never"})
    scope = answer.get("remember", "once")
    if not isinstance(scope, str) or scope not in _SCOPES:
        raise InvalidAnswer({"remember": "must be once, session or always"})
    edits = answer.get("edits") or {}
    if not isinstance(edits, dict):
        raise InvalidAnswer({"edits": "must be an object"})
    system = edits.get("systemPrompt")
    if system is not None and not isinstance(system, str):
        raise InvalidAnswer({"systemPrompt": "must be text"})
    texts, messages = edits.get("messages"), request.get("messages") or []
    if texts is not None:
        if not isinstance(texts, list) or len(texts) != len(messages):
            raise InvalidAnswer({"messages": f"must be a list of {len(messages)} texts (null: unchanged)"})
        for number, (message, text) in enumerate(zip(messages, texts, strict=True), 1):
            if text is not None and not (isinstance(text, str) and message.get("editable")):
                raise InvalidAnswer({"messages": f"message {number} cannot take this text"})
    value, most = edits.get("maxTokens"), request.get("maxTokens")
    if value is not None and (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not isinstance(most, int)
        or not 1 <= value <= most
    ):
        raise InvalidAnswer({"maxTokens": f"must be a whole number from 1 to {most}"})


def _check_result(request: dict[str, Any], answer: dict[str, Any]) -> None:
    action = answer.get("action")
    if action == "refuse":
        return
    if action != "send":
        raise InvalidAnswer({"action": "must be send or refuse"})
    text = answer.get("text")
    if text is None:
        return
    if not request.get("editable"):
        raise InvalidAnswer({"text": "only a plain text result can be edited"})
    if not isinstance(text, str):
        raise InvalidAnswer({"text": "must be text"})


def _check_form(request: dict[str, Any], answer: dict[str, Any]) -> None:
    action = answer.get("action")
    if action in ("decline", "cancel"):
        return
    if action != "accept":
        raise InvalidAnswer({"action": "must be accept, decline or cancel"})
    content = answer.get("content", {})
    if not isinstance(content, dict):
        raise InvalidAnswer({"content": "must be an object"})
    problems = FormSchema(tuple(_form_field(f) for f in request.get("fields") or ()), {}).problems(content)
    if problems:
        raise InvalidAnswer(problems)


def _form_field(shown: dict[str, Any]) -> FormField:
    """The field :func:`_field` showed, back as a :class:`FormField` (its checks need no text shown)."""
    return FormField(
        name=shown["key"],
        kind=shown["type"],
        required=bool(shown.get("required")),
        options=tuple((o["value"], o["label"]) for o in shown.get("options") or ()),
        min_length=shown.get("minLength"),
        max_length=shown.get("maxLength"),
        format=shown.get("format"),
        minimum=shown.get("minimum"),
        maximum=shown.get("maximum"),
        min_items=shown.get("minItems"),
        max_items=shown.get("maxItems"),
    )


def _check_url(request: dict[str, Any], answer: dict[str, Any]) -> None:
    url_answer(answer)


def _check_done(request: dict[str, Any], answer: dict[str, Any]) -> None:
    link_done_answer(answer)
