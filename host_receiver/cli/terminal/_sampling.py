"""Sampling at the terminal: approve, edit or refuse a request; send, edit or refuse its result.

Rules:

- The request screen shows server, task, model (and the allowed ones), token
  budget, system prompt, tools and every message before anything is sent.
- Answers: approve once, for this session, or always; edit; refuse; refuse
  from now on ("never"). The remembering itself is done by
  :class:`~host_receiver.people.policies.RememberDecisions` around this approver.
- Edits: the system prompt, the token budget (1 up to what the server asked)
  and the model (only among the allowed ones); each is checked as typed and
  asked again when wrong.
- The result screen shows the model's answer; it can be sent, edited (text
  results) or refused. Ctrl-C at any prompt refuses.
"""

from __future__ import annotations

from prompt_toolkit.completion import WordCompleter
from prompt_toolkit.formatted_text import FormattedText

from host_receiver.cli.terminal import _render as render
from host_receiver.cli.terminal._console import Console, Turn
from host_receiver.errors import Interrupted
from host_receiver.people.approval import (
    Approve,
    Refuse,
    RememberScope,
    RequestDecision,
    ResultDecision,
    SamplingRequestView,
    SamplingResultView,
    Send,
    result_text,
)
from host_receiver.protocol.types import TextContent

REQUEST_CHOICES = (
    ("y", "approve once"),
    ("s", "approve for this session"),
    ("a", "always approve this server"),
    ("e", "edit"),
    ("n", "refuse"),
    ("x", "never (refuse this server from now on)"),
)
SCOPES: dict[str, RememberScope] = {"y": "once", "s": "session", "a": "always"}
RESULT_CHOICES = (("y", "send"), ("e", "edit the text"), ("n", "refuse"))
MULTILINE_HINT = " (Esc then Enter to finish)"


class TerminalApprover:
    """A :class:`~host_receiver.people.approval.SamplingApprover` that asks the person at the terminal."""

    def __init__(self, console: Console) -> None:
        self.console = console

    async def review_request(self, view: SamplingRequestView) -> RequestDecision:
        async with self.console.turn(view.server, view.task_id) as turn:
            turn.show(render.sampling_request(view, turn.who))
            edits = Approve()
            try:
                while True:
                    choice = await turn.choose("Approve this request?", REQUEST_CHOICES)
                    if choice == "e":
                        edits = await _edit(turn, view, edits)
                        turn.show(FormattedText(render.edit_summary(view, edits)))
                    elif choice == "n":
                        return _refused(turn)
                    elif choice == "x":
                        turn.show(
                            FormattedText(
                                [
                                    (
                                        "class:bad",
                                        f"✗ Refused; {render.label(turn.who.name)} is refused from now on",
                                    )
                                ]
                            )
                        )
                        return Refuse(remember="never")
                    else:
                        turn.show(FormattedText([("class:good", "✓ Approved")]))
                        return Approve(
                            system_prompt=edits.system_prompt,
                            max_tokens=edits.max_tokens,
                            model=edits.model,
                            remember=SCOPES[choice],
                        )
            except Interrupted:
                return _refused(turn)

    async def review_result(self, view: SamplingResultView) -> ResultDecision:
        async with self.console.turn(view.server, view.task_id) as turn:
            result = view.result
            turn.show(render.sampling_result(view, turn.who, result))
            try:
                while True:
                    choice = await turn.choose("Send this result to the server?", RESULT_CHOICES)
                    if choice == "y":
                        turn.show(FormattedText([("class:good", "✓ Sent")]))
                        return Send(result if result is not view.result else None)
                    if choice == "n":
                        return _refused(turn)
                    text = result_text(result)
                    if text is None:
                        turn.show(FormattedText([("class:bad", "✗ Only a plain text result can be edited.")]))
                        continue
                    edited = await turn.ask("Text" + MULTILINE_HINT + ": ", default=text, multiline=True)
                    result = result.model_copy(update={"content": TextContent(text=edited)})
                    turn.show(render.sampling_result(view, turn.who, result))
            except Interrupted:
                return _refused(turn)


def _refused(turn: Turn) -> Refuse:
    turn.show(FormattedText([("class:bad", "✗ Refused")]))
    return Refuse()


async def _edit(turn: Turn, view: SamplingRequestView, edits: Approve) -> Approve:
    """Ask for a new system prompt, token budget and model; returns only what changed."""
    original = view.params.system_prompt or ""
    current = edits.system_prompt if edits.system_prompt is not None else original
    system = await turn.ask("System prompt" + MULTILINE_HINT + ": ", default=current, multiline=True)
    max_tokens = await _ask_max_tokens(turn, view, edits.max_tokens or view.max_tokens)
    model = edits.model or view.model
    if len(view.allowed_models) > 1:
        model = await _ask_model(turn, view, model)
    return Approve(
        system_prompt=system if system != original else None,
        max_tokens=max_tokens if max_tokens != view.max_tokens else None,
        model=model if model != view.model else None,
    )


async def _ask_max_tokens(turn: Turn, view: SamplingRequestView, current: int) -> int:
    while True:
        text = await turn.ask(f"Max tokens (1-{view.max_tokens}): ", default=str(current))
        try:
            value = int(text.strip())
        except ValueError:
            value = 0
        if 1 <= value <= view.max_tokens:
            return value
        turn.show(FormattedText([("class:bad", f"✗ Type a whole number from 1 to {view.max_tokens}.")]))


async def _ask_model(turn: Turn, view: SamplingRequestView, current: str) -> str:
    completer = WordCompleter(list(view.allowed_models), sentence=True)
    while True:
        model = (await turn.ask("Model: ", default=current, completer=completer)).strip()
        if model in view.allowed_models:
            return model
        allowed = ", ".join(render.label(m) for m in view.allowed_models)
        server = render.label(turn.who.name)
        refusal = f"✗ {render.label(repr(model))} is not allowed for {server}; choose {allowed}."
        turn.show(FormattedText([("class:bad", refusal)]))
