"""The terminal shared by every request: one question at a time, notices, the live line.

Rules:

- A request talks to the person only inside a :meth:`Console.turn`; turns are
  granted one at a time in arrival order (a fair lock). Inside a turn,
  :meth:`Turn.show` prints and :meth:`Turn.ask` prompts.
- :meth:`Console.say` prints from anywhere: above the open prompt when there
  is one, otherwise straight away.
- When no prompt is open and a model generates or a request shows progress, the
  bottom line shows it, redrawn every ``refresh_interval`` seconds, erased as
  soon as nothing runs (the drawing job then sleeps on an event). When a prompt
  is open, its bottom toolbar shows the same line plus how many requests wait.
- A cancelled turn says so on screen before it lets the cancellation through.
- :meth:`Turn.choose`: an option's key (either case) answers at once, without
  Enter; a word typed instead is taken on Enter. :meth:`Turn.ask` may show a
  value as a dim placeholder, which the first key typed replaces.
- Every screen and prompt names a server by the name it gives itself (its
  serverInfo title or name, :meth:`Console.describe_server`), with its command
  or URL in small print on the screens; until that is known, by the host's name.
- Printed text is wrapped to the terminal's width at word boundaries: a word
  longer than the line is the only thing ever split; a wrapped line goes on
  under its own indentation (:func:`wrap`).
- Nothing reaches the terminal raw: every piece of text printed, prompted or
  drawn goes through :func:`host_receiver.sanitize.safe_text` (multiline: newlines and
  tabs pass, every other control, escape sequence and bidi control is shown
  escaped). Cutting long values is the screens' business (:mod:`._render`).
  In an answer being edited (a pre-filled system prompt or result), which
  must stay the text it is, prompt_toolkit shows C0 and C1 controls as
  ``^[`` and ``<9b>``; every other character that is not printable (bidi and
  other format characters) is shown as ``�``, one for one.

Fixed caps (docs/limits.md): ``_LABEL_LIMIT``.
"""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from types import TracebackType

import anyio
from prompt_toolkit import PromptSession, print_formatted_text
from prompt_toolkit.application import run_in_terminal
from prompt_toolkit.completion import Completer
from prompt_toolkit.formatted_text import AnyFormattedText, FormattedText, to_formatted_text
from prompt_toolkit.formatted_text.base import OneStyleAndTextTuple
from prompt_toolkit.input import Input, create_input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout.processors import Processor, Transformation, TransformationInput
from prompt_toolkit.output import Output, create_output
from prompt_toolkit.styles import Style
from prompt_toolkit.utils import get_cwidth

from host_receiver.cli.terminal._activity import Activity, task_label
from host_receiver.cli.terminal._render import Who
from host_receiver.errors import Interrupted
from host_receiver.sanitize import safe_text

STYLE = Style.from_dict(
    {
        "title": "bold",
        "server": "bold ansicyan",
        "where": "dim",
        "label": "ansibrightblack",
        "domain": "reverse bold",
        "warn": "bold ansiyellow",
        "bad": "ansired",
        "good": "ansigreen",
        "key": "bold",
        "bottom-toolbar": "noreverse ansibrightblack",
    }
)


#: The longest server name in a turn's label.
_LABEL_LIMIT = 120


def shown(text: AnyFormattedText) -> FormattedText:
    """``text`` with every fragment made safe to show (newlines and tabs kept)."""
    fragments: list[OneStyleAndTextTuple] = []
    for fragment in to_formatted_text(text):
        piece = safe_text(fragment[1], None, multiline=True)
        if len(fragment) == 2:
            fragments.append((fragment[0], piece))
        else:
            fragments.append((fragment[0], piece, fragment[2]))
    return FormattedText(fragments)


def wrap(text: FormattedText, width: int) -> FormattedText:
    """``text`` with each line longer than ``width`` columns broken at spaces; a continuation
    starts under the line's own indentation (at most half the width); only a word longer than
    the room left on an empty line is split. Styles are kept."""
    out: list[tuple[str, str]] = []
    line: list[tuple[str, str]] = []  # (style, character) of the line being read
    for style, piece, *_ in [*text, ("", "\n")]:
        for char in piece:
            if char != "\n":
                line.append((style, char))
                continue
            out += _wrap_line(line, width)
            out.append((style, "\n"))
            line = []
    out.pop()  # the newline added above
    return FormattedText(out)


def _wrap_line(line: list[tuple[str, str]], width: int) -> list[tuple[str, str]]:
    if sum(get_cwidth(c) for _, c in line) <= width:
        return line
    indent = 0
    while indent < len(line) and line[indent][1] == " ":
        indent += 1
    indent = min(indent, width // 2)
    out: list[tuple[str, str]] = list(line[:indent])
    column = indent
    position = indent
    while position < len(line):
        start = position
        while position < len(line) and line[position][1] == " ":
            position += 1
        gap = line[start:position]
        word_start = position
        while position < len(line) and line[position][1] != " ":
            position += 1
        word = line[word_start:position]
        size = sum(get_cwidth(c) for _, c in word)
        if column > indent and column + len(gap) + size > width:
            out += _line_break(indent)
            column, gap = indent, []
        out += gap
        column += len(gap)
        for style, char in word:  # split only when the word alone is wider than the room
            if column > indent and column + get_cwidth(char) > width:
                out += _line_break(indent)
                column = indent
            out.append((style, char))
            column += get_cwidth(char)
    return out


def _line_break(indent: int) -> list[tuple[str, str]]:
    return [("", "\n"), ("", " " * indent)]


class ShowInvisible(Processor):
    """Shows each character of an edited answer that prompt_toolkit would draw raw and that is
    not printable (bidi and other format characters) as ``�``: one for one, so the cursor and
    the text being edited are unchanged."""

    def apply_transformation(self, transformation_input: TransformationInput) -> Transformation:
        fragments: list[OneStyleAndTextTuple] = []
        for fragment in transformation_input.fragments:
            text = _INVISIBLE.sub(_placeholder, fragment[1])
            if len(fragment) == 2:
                fragments.append((fragment[0], text))
            else:
                fragments.append((fragment[0], text, fragment[2]))
        return Transformation(fragments)


#: Characters beyond ASCII and C1 (which prompt_toolkit shows as ``<9b>`` itself).
_INVISIBLE = re.compile(r"[^\x00-\x9f]")


def _placeholder(match: re.Match[str]) -> str:
    char = match.group()
    return char if char.isprintable() else "\ufffd"


class Console:
    """The terminal: turns for requests, printing, and the live activity line."""

    def __init__(
        self,
        *,
        input: Input | None = None,
        output: Output | None = None,
        activity: Activity | None = None,
        refresh_interval: float = 0.5,
    ) -> None:
        self.input = input if input is not None else create_input()
        self.output = output if output is not None else create_output(stdout=sys.stderr)
        self.activity = activity if activity is not None else Activity()
        self.activity.subscribe(self._wake_up)
        self.refresh_interval = refresh_interval
        self._turns = anyio.Lock()
        self._waiting = 0
        self._prompting = False
        self._line_shown = False
        self._wake = anyio.Event()
        self._lifetime = AsyncExitStack()
        self._servers: dict[str, Who] = {}

    async def __aenter__(self) -> Console:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(
                "the terminal host runs on asyncio (prompt_toolkit needs it), not trio"
            ) from None
        group = await self._lifetime.enter_async_context(anyio.create_task_group())
        group.start_soon(self._draw_activity)
        self._lifetime.callback(group.cancel_scope.cancel)  # runs first on the way out
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        try:
            return await self._lifetime.__aexit__(exc_type, exc, tb)
        finally:
            self._clear_line()

    # --- servers --------------------------------------------------------------

    def describe_server(self, server: str, name: str, where: str = "") -> None:
        """Name the host's ``server`` on screens as ``name`` (its own, from its serverInfo), with
        ``where`` (its command or URL) in small print."""
        self._servers[server] = Who(name, where)

    def who(self, server: str) -> Who:
        """How the screens name the host's ``server``."""
        return self._servers.get(server, Who(server))

    # --- printing -------------------------------------------------------------

    def _fit(self, text: AnyFormattedText) -> FormattedText:
        """``text`` made safe to show and wrapped to the terminal's width."""
        return wrap(shown(text), max(self.output.get_size().columns, 20))

    def write(self, text: AnyFormattedText) -> None:
        """Print now; only for when no prompt is open (inside a turn, between prompts)."""
        self._clear_line()
        print_formatted_text(self._fit(text), output=self.output, style=STYLE)
        self._wake_up()

    async def say(self, text: AnyFormattedText) -> None:
        """Print from anywhere: above the open prompt, if there is one."""
        text = self._fit(text)
        if self._prompting:
            await run_in_terminal(lambda: print_formatted_text(text, output=self.output, style=STYLE))
        else:
            self.write(text)

    # --- turns ----------------------------------------------------------------

    @asynccontextmanager
    async def turn(self, server: str, task_id: str | None) -> AsyncIterator[Turn]:
        """Wait for this request's turn to talk to the person."""
        who = self.who(server)
        label = f"{safe_text(who.name, _LABEL_LIMIT)} · {task_label(task_id)}"
        self._waiting += 1
        self._wake_up()
        try:
            try:
                self._turns.acquire_nowait()
            except anyio.WouldBlock:
                notice = f"… {label}: queued behind the question on screen"
                await self.say(FormattedText([("class:label", notice)]))
                await self._turns.acquire()
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self.say(FormattedText([("class:bad", f"✗ {label}: cancelled before it was shown")]))
            raise
        finally:
            self._waiting -= 1
        try:
            yield Turn(self, label, who)
        except anyio.get_cancelled_exc_class():
            self.write(FormattedText([("class:bad", f"✗ {label}: the request was cancelled; prompt closed")]))
            raise
        finally:
            self._turns.release()
            self._wake_up()

    @property
    def waiting(self) -> int:
        """Requests waiting for their turn."""
        return self._waiting

    def toolbar(self) -> FormattedText:
        """The bottom toolbar of an open prompt: activity, queue, and the Ctrl-C hint."""
        parts = []
        line = self.activity.describe()
        if line is not None:
            parts.append(line)
        if self._waiting:
            parts.append(f"{self._waiting} more request(s) waiting")
        parts.append("Ctrl-C refuses or cancels this request")
        return shown(FormattedText([("", "  ·  ".join(parts))]))

    # --- the live line --------------------------------------------------------

    def _wake_up(self) -> None:
        if self.activity.describe() is None:  # erased at once, before a result is printed
            self._clear_line()
        self._wake.set()

    async def _draw_activity(self) -> None:
        while True:
            wake = self._wake = anyio.Event()
            line = None if self._prompting else self.activity.describe()
            if line is None:
                self._clear_line()
                await wake.wait()
                continue
            self._draw_line(line)
            with anyio.move_on_after(self.refresh_interval):
                await wake.wait()

    def _draw_line(self, line: str) -> None:
        width = max(self.output.get_size().columns - 1, 10)
        self.output.write_raw("\r")
        self.output.erase_end_of_line()
        self.output.write(safe_text(line, None)[:width])
        self.output.hide_cursor()
        self.output.flush()
        self._line_shown = True

    def _clear_line(self) -> None:
        if not self._line_shown:
            return
        self.output.write_raw("\r")
        self.output.erase_end_of_line()
        self.output.show_cursor()
        self.output.flush()
        self._line_shown = False


def _single_keys(options: Sequence[tuple[str, str]]) -> KeyBindings:
    """Each option's key (either case) answers at once, without Enter, and shows as typed."""
    bindings = KeyBindings()
    for key, _ in options:
        for typed in {key, key.upper()}:

            @bindings.add(typed)
            def _answer(event: KeyPressEvent, key: str = key) -> None:
                event.current_buffer.text = key
                event.app.exit(result=key)

    return bindings


class Turn:
    """One request's time with the person: show things and ask questions."""

    def __init__(self, console: Console, label: str, who: Who) -> None:
        self.console = console
        self.label = label
        self.who = who

    def show(self, text: AnyFormattedText) -> None:
        self.console.write(text)

    async def ask(
        self,
        message: str,
        *,
        default: str = "",
        placeholder: str = "",
        completer: Completer | None = None,
        multiline: bool = False,
        keys: KeyBindings | None = None,
    ) -> str:
        """One line (or several, ``multiline``) of input; raises :class:`Interrupted` on Ctrl-C/D.

        ``default`` is pre-filled, to be edited; ``placeholder`` is shown dim where nothing
        is typed yet, and the first key typed replaces it.
        """
        console = self.console
        console._clear_line()
        session: PromptSession[str] = PromptSession(input=console.input, output=console.output)
        console._prompting = True
        try:
            return await session.prompt_async(
                shown(FormattedText([("class:key", message)])),
                default=default,
                placeholder=FormattedText([("class:label", placeholder)]) if placeholder else None,
                completer=completer,
                complete_while_typing=False,
                reserve_space_for_menu=0,
                multiline=multiline,
                key_bindings=keys,
                bottom_toolbar=console.toolbar,
                input_processors=[ShowInvisible()],
                refresh_interval=console.refresh_interval,
                style=STYLE,
                handle_sigint=False,
                set_exception_handler=False,
            )
        except (KeyboardInterrupt, EOFError):
            raise Interrupted from None
        finally:
            console._prompting = False
            console._wake_up()

    async def choose(self, question: str, options: Sequence[tuple[str, str]]) -> str:
        """One of the ``(key, label)`` options: its key alone answers, without Enter; anything else
        typed (a label) is taken on Enter, or asked again."""
        legend: list[tuple[str, str]] = []
        for key, label in options:
            legend += [("", "  "), ("class:key", f"[{key}]"), ("", f" {label}")]
        self.show(FormattedText(legend))
        keys = "/".join(key for key, _ in options)
        while True:
            answer = (await self.ask(f"{question} [{keys}] ", keys=_single_keys(options))).strip().lower()
            for key, label in options:
                if answer in (key, label.lower()):
                    return key
            self.show(FormattedText([("class:bad", f"✗ Type one of {', '.join(k for k, _ in options)}.")]))
