"""Elicitation at the terminal: forms field by field, and consent to open a URL.

Rules:

- A form is shown whole first (fields, kinds, bounds, defaults, choices, the
  problems of a previous answer); the person fills it in, declines or cancels.
- Fields are asked one by one, the default or the last answer shown dim in
  the input: the first key typed replaces it, Enter alone keeps it (so an
  optional field with a default cannot be left out here). An answer that
  does not parse or breaks the field's rules is explained and asked again at
  once; an empty optional field is left out.
- Choices are typed by number, value or label; several choices separated by
  commas; yes/no for booleans.
- Before anything is sent the answers are shown for review: send, edit
  again, decline or cancel. Ctrl-C at any prompt cancels.
- A URL is shown in full with its domain highlighted and its warnings; it is
  opened only on "open" (by the elicitation service, never here). When no
  browser could be started, the URL is shown again to copy.
"""

from __future__ import annotations

import math

from prompt_toolkit.completion import WordCompleter
from prompt_toolkit.formatted_text import FormattedText

from host_receiver.cli.terminal import _render as render
from host_receiver.cli.terminal._console import Console, Turn
from host_receiver.errors import Interrupted
from host_receiver.people.approval import FormView, LinkDone, UrlAnswer, UrlView
from host_receiver.protocol.elicitation_rules import FormField
from host_receiver.protocol.types import ElicitResult, ElicitValue
from host_receiver.sanitize import TEXT_LIMIT, safe_text

START_CHOICES = (("f", "fill in"), ("d", "decline"), ("c", "cancel"))
REVIEW_CHOICES = (("y", "send"), ("e", "edit again"), ("d", "decline"), ("c", "cancel"))
URL_CHOICES = (("o", "open in my browser"), ("d", "decline"), ("c", "cancel"))
#: Once a link a request needs is open: done there, or give up.
LINK_DONE_CHOICES = (("d", "done"), ("c", "cancel"))
_DONE = {"d": "Declined", "c": "Cancelled"}
_HINTS = {"enum": "a number or a value", "multi_enum": "numbers or values, comma-separated"}
_YES = {"y", "yes", "true", "1"}
_NO = {"n", "no", "false", "0"}


def parse_answer(field: FormField, text: str) -> tuple[ElicitValue | None, str | None]:
    """``(value, None)`` for a valid answer (None value: left empty), or ``(None, problem)``."""
    text = text.strip()
    if not text:
        return None, ("is required" if field.required else None)
    value: ElicitValue
    if field.kind == "boolean":
        if text.lower() not in _YES | _NO:
            return None, "type yes or no"
        value = text.lower() in _YES
    elif field.kind in ("number", "integer"):
        try:
            number = float(text)
        except ValueError:
            return None, "must be a number"
        if not math.isfinite(number):
            return None, "must be a finite number"
        value = (
            int(number) if number.is_integer() and (field.kind == "integer" or "." not in text) else number
        )
    elif field.kind == "enum":
        choice = _choice(field, text)
        if choice is None:
            return None, f"must be one of {_choices(field)}"
        value = choice
    elif field.kind == "multi_enum":
        picked = []
        for part in (p.strip() for p in text.split(",")):
            choice = _choice(field, part)
            if choice is None:
                return None, f"{part!r} is not among {_choices(field)}"
            picked.append(choice)
        value = picked
    else:
        value = text
    return value, field.check(value)


def _choice(field: FormField, text: str) -> str | None:
    if text.isdigit() and 1 <= int(text) <= len(field.options):
        return field.options[int(text) - 1][0]
    for value, label in field.options:
        if text == value or text.lower() == label.lower():
            return value
    return None


def _choices(field: FormField) -> str:
    return ", ".join(f"{n} {label}" for n, (_, label) in enumerate(field.options, 1))


class TerminalElicitationUI:
    """An :class:`~host_receiver.people.approval.ElicitationUI` that asks the person at the terminal."""

    def __init__(self, console: Console) -> None:
        self.console = console

    async def fill_form(self, view: FormView) -> ElicitResult:
        async with self.console.turn(view.server, view.task_id) as turn:
            turn.show(render.form(view, turn.who))
            try:
                choice = await turn.choose("Answer this form?", START_CHOICES)
                values = dict(view.values)
                while choice in ("f", "e"):
                    for field in view.schema.fields:
                        await _ask_field(turn, field, values, view.problems.get(field.name))
                    turn.show(render.answers(view.schema, values))
                    choice = await turn.choose("Send these answers?", REVIEW_CHOICES)
                    if choice == "y":
                        turn.show(FormattedText([("class:good", "✓ Sent")]))
                        return ElicitResult(action="accept", content=values)
            except Interrupted:
                choice = "c"
            turn.show(FormattedText([("class:bad", f"✗ {_DONE[choice]}")]))
            return ElicitResult(action="decline" if choice == "d" else "cancel")

    async def consent_url(self, view: UrlView) -> UrlAnswer:
        async with self.console.turn(view.server, view.task_id) as turn:
            turn.show(render.url(view, turn.who))
            try:
                choice = await turn.choose(f"Open this link on {render.label(view.domain)}?", URL_CHOICES)
            except Interrupted:
                choice = "c"
            if choice == "o":
                turn.show(FormattedText([("class:good", "✓ Opening it in your browser")]))
                return "accept"
            turn.show(FormattedText([("class:bad", f"✗ {_DONE[choice]}; nothing was opened")]))
            return "decline" if choice == "d" else "cancel"

    async def link_done(self, view: UrlView) -> LinkDone:
        """A request waits for the link ``view`` (opened): the person says when they are done there.
        The prompt closes by itself when the server says the link is complete first."""
        async with self.console.turn(view.server, view.task_id) as turn:
            domain = render.label(view.domain)
            turn.show(
                FormattedText(
                    [("", f"The request waits until you have finished on {domain}; then it is sent again.")]
                )
            )
            try:
                choice = await turn.choose(f"Done on {domain}?", LINK_DONE_CHOICES)
            except Interrupted:
                choice = "c"
            if choice == "d":
                turn.show(FormattedText([("class:good", "✓ Done; sending the request again")]))
                return "done"
            turn.show(FormattedText([("class:bad", "✗ Given up; the request ends")]))
            return "cancel"

    async def link_not_opened(self, view: UrlView) -> None:
        """The elicitation service found no browser to open ``view``'s link: show it to copy."""
        await self.console.say(
            FormattedText(
                [
                    ("class:bad", "✗ No browser could be opened here; open the link yourself:\n"),
                    ("", f"  {safe_text(view.url, TEXT_LIMIT)}"),
                ]
            )
        )


async def _ask_field(
    turn: Turn, field: FormField, values: dict[str, ElicitValue], problem: str | None
) -> None:
    """Ask one field until its answer is valid; store it in ``values`` (or drop it when empty)."""
    if field.kind in ("enum", "multi_enum"):
        listing = [
            ("class:label", f"  {n}) {render.label(name)}\n") for n, (_, name) in enumerate(field.options, 1)
        ]
        turn.show(FormattedText(listing))
    if problem is not None:
        turn.show(FormattedText([("class:bad", f"✗ {render.label(field.label)} {render.body(problem)}")]))
    completer = None
    if field.options:
        words = [v for v, _ in field.options] + [label for _, label in field.options]
        completer = WordCompleter(list(dict.fromkeys(words)), sentence=True)
    mark = "*" if field.required else ""
    hint = _HINTS.get(field.kind) or render.describe_field(field)
    question = f"{render.label(field.label)}{mark} ({render.body(hint)}): "
    current = render.format_value(field, values.get(field.name))
    while True:
        # The current value is shown, not pre-filled: typing replaces it, Enter keeps it.
        text = await turn.ask(question, placeholder=current, completer=completer) or current
        value, problem = parse_answer(field, text)
        if problem is None:
            if value is None:
                values.pop(field.name, None)
            else:
                values[field.name] = value
            return
        turn.show(FormattedText([("class:bad", f"✗ {render.label(field.label)} {render.body(problem)}")]))
