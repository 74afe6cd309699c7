"""The interactive terminal host, driven like a person would: through a pseudo-terminal.

Each pexpect test starts ``host-receiver run --approve ask --elicit ask --call
TOOL`` on a real MCP server (the Python SDK peer, or an example server), answers
the prompts by typing, and checks what the server finally got. Every expect
has a timeout, so a missing prompt fails the test instead of hanging it (the
links a call needs are driven through ``call`` against server-everything). The
last tests drive the same prompts in-process through prompt_toolkit's pipe
input, for what a stdio server cannot set up (several models, a queue).
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pexpect
import pytest
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output.plain_text import PlainTextOutput
from prompt_toolkit.utils import get_cwidth

from host_receiver.cli.terminal import Console, TerminalApprover, TerminalElicitationUI
from host_receiver.people.approval import (
    Approve,
    Refuse,
    SamplingRequestView,
    SamplingResultView,
    Send,
    UrlView,
    url_warnings,
)
from host_receiver.people.policies import stdio_identity
from host_receiver.protocol.types import CreateMessageRequestParams, CreateMessageResult, TextContent
from tests.interop import everything_command
from tests.receiver_harness import sampling_params


@pytest.fixture
def anyio_backend() -> str:
    """The terminal host runs prompt_toolkit, on asyncio only."""
    return "asyncio"


ROOT = Path(__file__).resolve().parents[2]
HOST = Path(sys.executable).parent / "host-receiver"
PEER_PYTHON = ROOT / ".peers" / "py" / "bin" / "python"
PEER_SERVER = ROOT / "tests" / "interop" / "peers" / "py_server.py"
TIMEOUT = 30  # seconds for any single expect; a hang fails instead of blocking CI
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\x1b[=>]|\r")
CLEAR_LINE = "\x15"  # Ctrl-U: erase the pre-filled answer
FINISH = "\x1b\r"  # Esc, Enter: finish a multi-line answer


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    if not PEER_PYTHON.exists():
        pytest.skip("the Python peer is not installed (run .ci/install-peers)")
    return {
        **os.environ,
        "HOST_RECEIVER_CONFIG": str(tmp_path / "config.toml"),  # absent: the offline echo provider
        "HOST_RECEIVER_DECISIONS": str(tmp_path / "decisions.json"),
        "PROMPT_TOOLKIT_NO_CPR": "1",
        "TERM": "xterm",
    }


class Terminal:
    """A host-receiver run in a pseudo-terminal, read as a person sees it (escape codes removed)."""

    def __init__(self, env: dict[str, str], *args: str, columns: int = 200) -> None:
        self.child = pexpect.spawn(
            str(HOST), list(args), env=env, encoding="utf-8", timeout=TIMEOUT, dimensions=(50, columns)
        )
        self.raw = ""
        self.seen = 0  # how far expect has read the screen

    @property
    def screen(self) -> str:
        return ANSI.sub("", self.raw)

    def _read(self, deadline: float) -> bool:
        """Read more output; False at the end of the output."""
        try:
            self.raw += self.child.read_nonblocking(
                65536, timeout=max(min(deadline - time.monotonic(), 1), 0)
            )
        except pexpect.TIMEOUT:
            pass
        except pexpect.EOF:
            return False
        return True

    def expect(self, pattern: str) -> re.Match[str]:
        """Wait (at most TIMEOUT seconds) until ``pattern`` shows after what was already matched."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + TIMEOUT
        while True:
            match = regex.search(self.screen, self.seen)
            if match is not None:
                self.seen = match.end()
                return match
            if time.monotonic() > deadline or not self._read(deadline):
                end = self.screen[-3000:]
                raise AssertionError(f"{pattern!r} never showed; the screen ends with:\n{end}")

    def answer(self, prompt: str, text: str) -> None:
        """Type ``text`` at the next ``prompt`` (a choice's key alone, as a person presses it:
        no Enter); wait until the prompt shows it accepted."""
        self.expect(re.escape(prompt.rstrip()))
        choice = prompt.rstrip().endswith(("?", "]")) and len(text) == 1  # a question, not a field
        self.child.send(text if text.endswith(FINISH) or choice else text + "\r")
        shown = text.replace(CLEAR_LINE, "").replace(FINISH, "")
        self.expect(re.escape(prompt.rstrip()) + r"[^\n]*" + re.escape(shown) + r"\n")

    def wait_exit(self) -> int:
        """Wait (at most TIMEOUT seconds) for the host to exit; its exit status."""
        deadline = time.monotonic() + TIMEOUT
        while self._read(deadline):
            if time.monotonic() > deadline:
                raise AssertionError(f"the host never ended; the screen ends with:\n{self.screen[-3000:]}")
        self.child.close()
        return int(self.child.exitstatus or 0)

    def finish(self) -> dict[str, Any]:
        """Wait for the end; the ``CallToolResult`` the host printed."""
        assert self.wait_exit() == 0, self.screen
        line = [ln for ln in self.screen.splitlines() if ln.startswith('{"content"')][-1]
        return dict(json.loads(line))

    def result(self) -> dict[str, Any]:
        """Wait for the end; the JSON report of the peer's tool."""
        return dict(json.loads(self.finish()["content"][0]["text"]))


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    started: list[Terminal] = []
    yield started
    for terminal in started:
        terminal.child.terminate(force=True)


def run(
    env: dict[str, str], terminals: list[Terminal], tool: str, server: Path = PEER_SERVER, **args: Any
) -> Terminal:
    command = ["run", "--approve", "ask", "--elicit", "ask", "--name", "peer", "--call", tool]
    command += ["--args", json.dumps(args), "--", str(PEER_PYTHON), str(server)]
    terminal = Terminal(env, *command)
    terminals.append(terminal)
    return terminal


@pytest.mark.slow
def test_approve_a_request_and_send_its_result(env: dict[str, str], terminals: list[Terminal]) -> None:
    t = run(env, terminals, "sample_task", prompt="hello there")
    task = t.expect(r"Sampling request from peer \([^\n]*\) · task (\S{8})…").group(1)
    t.expect(r"provider\s+echo\s+\(the first eligible model of the catalogue\)")  # who serves it, and why
    t.expect(r"max tokens\s+200")
    t.expect(r"\[1\] user: hello there")
    t.answer("Approve this request? [y/s/a/e/n/x]", "y")
    t.expect(rf"Sampling result from peer \([^\n]*\) · task {task}")
    t.expect(r"text\s+echo: hello there")
    t.answer("Send this result to the server? [y/e/n]", "y")
    report = t.result()
    assert report["task"]["taskId"].startswith(task)
    assert report["result"]["content"]["text"] == "echo: hello there"
    assert report["statuses"][-1] == "completed"


@pytest.mark.slow
def test_edit_the_request_then_the_result(env: dict[str, str], terminals: list[Terminal]) -> None:
    t = run(env, terminals, "sample_task", prompt="one two three four five six")
    t.answer("Approve this request?", "e")
    t.answer("System prompt (Esc then Enter to finish): ", "Be brief." + FINISH)
    t.answer("Max tokens (1-200): ", CLEAR_LINE + "0")
    t.expect("Type a whole number from 1 to 200")
    t.answer("Max tokens (1-200): ", CLEAR_LINE + "3")
    t.expect("your edits: system prompt → 'Be brief.'; max tokens 200 → 3")
    t.answer("Approve this request?", "y")
    t.expect(r"stop reason\s+maxTokens")
    t.answer("Send this result to the server?", "e")
    t.answer("Text (Esc then Enter to finish): ", CLEAR_LINE + "A shorter answer." + FINISH)
    t.expect(r"text\s+A shorter answer\.")
    t.answer("Send this result to the server?", "y")
    report = t.result()
    assert report["result"]["content"]["text"] == "A shorter answer."


@pytest.mark.slow
def test_refuse_and_never_are_remembered(env: dict[str, str], terminals: list[Terminal]) -> None:
    t = run(env, terminals, "sample_task", prompt="secret plans")
    t.answer("Approve this request?", "n")
    t.expect("✗ Refused")
    report = t.result()
    assert report["statuses"][-1] == "failed"
    assert report["result_error"]["code"] == -1

    t = run(env, terminals, "sample_plain", prompt="again")
    t.answer("Approve this request?", "x")
    t.expect("peer is refused from now on")
    assert t.result()["error"]["code"] == -1
    saved = json.loads(Path(env["HOST_RECEIVER_DECISIONS"]).read_text())["servers"]
    assert saved == {stdio_identity([str(PEER_PYTHON), str(PEER_SERVER)]): "refuse"}

    t = run(env, terminals, "sample_plain", prompt="and again")
    report = t.result()  # no prompt at all this time
    assert "remembered decision" in report["error"]["message"]
    assert "Sampling request from" not in t.screen


@pytest.mark.slow
def test_ctrl_c_at_a_prompt_refuses_only_that_request(env: dict[str, str], terminals: list[Terminal]) -> None:
    t = run(env, terminals, "sample_plain", prompt="hello")
    t.expect(re.escape("Approve this request?"))
    t.child.sendcontrol("c")
    t.expect("✗ Refused")
    assert t.result()["error"]["code"] == -1


FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "minLength": 2},
        "age": {"type": "integer", "title": "Age", "minimum": 18, "default": 30},
        "color": {"type": "string", "title": "Colour", "enum": ["red", "green", "blue"]},
        "news": {"type": "boolean", "title": "Newsletter", "default": False},
    },
    "required": ["name", "age"],
}


@pytest.mark.slow
def test_fill_a_form_with_invalid_answers_asked_again(env: dict[str, str], terminals: list[Terminal]) -> None:
    t = run(env, terminals, "elicit_task", message="Tell us about you", schema=FORM)
    t.expect(r"Form from peer \([^\n]*\) · task \S{8}…")
    t.expect("Tell us about you")
    t.expect(r"Age\*\s+whole number, at least 18\s+\[30\]")
    t.expect(r"Colour\s+one of red, green, blue")
    t.answer("Answer this form? [f/d/c]", "f")
    t.answer("Name* (text, at least 2 characters): ", "A")
    t.expect("✗ Name must be at least 2 characters")
    t.answer("Name* (text, at least 2 characters): ", CLEAR_LINE + "Ada")
    t.answer("Age* (whole number, at least 18): ", CLEAR_LINE + "twelve")
    t.expect("✗ Age must be a number")
    t.answer("Age* (whole number, at least 18): ", CLEAR_LINE + "12")
    t.expect("✗ Age must be at least 18")
    t.answer("Age* (whole number, at least 18): ", CLEAR_LINE + "42")
    t.expect(r"3\) blue")
    t.answer("Colour (a number or a value): ", "3")
    t.answer("Newsletter (yes or no): ", CLEAR_LINE + "yes")
    t.expect(r"Your answers:")
    t.expect(r"Age\s+42")
    t.answer("Send these answers? [y/e/d/c]", "y")
    report = t.result()
    assert report["result"]["action"] == "accept"
    assert report["result"]["content"] == {"name": "Ada", "age": 42, "color": "blue", "news": True}
    assert report["statuses"][-1] == "completed"


@pytest.mark.slow
def test_a_default_is_shown_typing_replaces_it_and_choices_show_their_titles(
    env: dict[str, str], terminals: list[Terminal]
) -> None:
    schema = {
        "type": "object",
        "properties": {
            "instrument": {
                "type": "string",
                "title": "Instrument",
                "oneOf": [{"const": "gtr", "title": "Guitar"}, {"const": "pno", "title": "Piano"}],
                "default": "gtr",
            },
            "count": {"type": "integer", "title": "Count", "default": 2},
        },
    }
    t = run(env, terminals, "elicit_plain", message="Pick one", schema=schema)
    t.expect(r"Instrument\s+one of Guitar \(gtr\), Piano \(pno\)\s+\[Guitar\]")  # the default by its title
    t.answer("Answer this form? [f/d/c]", "f")
    t.expect(r"2\) Piano")
    t.answer("Instrument (a number or a value): ", "2")  # not "Guitar2"
    t.answer("Count (whole number): ", "")  # Enter keeps the default
    assert "Count (whole number): 2" in t.screen  # shown where the answer goes
    t.expect(r"Instrument\s+Piano")
    t.answer("Send these answers? [y/e/d/c]", "y")
    assert t.result()["result"]["content"] == {"instrument": "pno", "count": 2}


@pytest.mark.slow
def test_screens_name_the_server_as_it_names_itself_and_booleans_in_plain_words(
    env: dict[str, str], terminals: list[Terminal]
) -> None:
    schema = {
        "type": "object",
        "properties": {"news": {"type": "boolean", "title": "Newsletter", "default": False}},
        "required": ["news"],
    }
    command = [str(PEER_PYTHON), str(PEER_SERVER)]
    args = json.dumps({"message": "Subscribe?", "schema": schema})
    t = Terminal(env, "run", "--elicit", "ask", "--call", "elicit_plain", "--args", args, "--", *command)
    terminals.append(t)
    # Its serverInfo name (py-peer), not its script's; the command line beside it, dim.
    t.expect(re.escape(f"Form from py-peer ({PEER_PYTHON} {PEER_SERVER}) · no task"))
    assert re.search(r"\x1b\[[0-9;]*2m \(" + re.escape(str(PEER_PYTHON)), t.raw)
    t.expect(r"Newsletter\*\s+yes or no\s+\[no\]")  # the default in plain words
    t.answer("Answer this form? [f/d/c]", "f")
    t.answer("Newsletter* (yes or no): ", "y")
    t.expect(r"Newsletter\s+yes\n")  # the summary too
    t.answer("Send these answers? [y/e/d/c]", "y")
    assert t.result()["result"]["content"] == {"news": True}
    assert "True" not in t.screen and "False" not in t.screen


SELF_NAMED_SERVER = """
import sys

from mcp.server.fastmcp import Context, FastMCP
from mcp.types import SamplingMessage, TextContent

mcp = FastMCP(sys.argv[1], log_level="WARNING")


@mcp.tool()
async def ask(text: str, ctx: Context) -> str:
    message = SamplingMessage(role="user", content=TextContent(type="text", text=text))
    result = await ctx.session.create_message([message], max_tokens=500)
    return result.content.text


mcp.run()
"""


@pytest.mark.slow
def test_long_text_wraps_at_word_boundaries_and_a_hostile_name_is_shown_escaped(
    env: dict[str, str], terminals: list[Terminal], tmp_path: Path
) -> None:
    server = tmp_path / "server.py"
    server.write_text(SELF_NAMED_SERVER)
    words = ["alpha", "beta", "gamma", "delta", "epsilon"] * 12
    long_word = "x" * 90
    text = " ".join([*words, long_word, "end"])
    args = json.dumps({"text": text})
    command = ["run", "--approve", "ask", "--call", "ask", "--args", args]
    command += ["--", str(PEER_PYTHON), str(server), "notes\x1b[2J\u202e"]
    t = Terminal(env, *command, columns=60)
    terminals.append(t)
    t.expect(re.escape("Sampling request from notes\\x1b[2J\\u202e"))  # escaped, not obeyed
    shown = t.expect(r"\[1\] user: ([\s\S]*?)\n\n").group(1)
    lines = shown.split("\n")
    assert len(lines) > 4 and len(lines[0]) <= 60 - len("    [1] user: ")
    assert all(len(line) <= 60 for line in lines)
    pieces = " ".join(lines).split()
    # Every word arrives whole; only the word longer than a line is split, filling its lines.
    assert [p for p in pieces if not p.startswith("x")] == [*words, "end"]
    assert "".join(p for p in pieces if p.startswith("x")) == long_word
    assert next(line for line in lines if "x" in line) == "    " + "x" * 56
    t.answer("Approve this request?", "y")
    t.answer("Send this result to the server?", "y")
    assert t.finish()["content"][0]["text"] == "echo: " + text


@pytest.mark.slow
def test_decline_a_url(env: dict[str, str], terminals: list[Terminal]) -> None:
    t = run(env, terminals, "connect_blog", server=ROOT / "examples" / "demo_server.py")
    t.expect(r"Link to open from peer \([^\n]*\) · task \S{8}…")
    t.expect(r"URL\s+https://blog\.example\.com/oauth/authorize\?client_id=release-helper&state=")
    t.expect(r"domain\s+blog\.example\.com")
    t.expect("Nothing is opened or fetched unless you agree")
    t.answer("Open this link on blog.example.com? [o/d/c]", "d")
    t.expect("✗ Declined; nothing was opened")
    report = t.result()
    assert report["result"]["action"] == "decline"
    assert "completed_notification" not in report


@pytest.mark.slow
def test_open_with_no_browser_says_so_and_shows_the_url_to_copy(
    env: dict[str, str], terminals: list[Terminal]
) -> None:
    """``webbrowser.open`` returns False (the only browser, ``false``, fails): nothing is claimed."""
    env = {k: v for k, v in env.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env = {**env, "BROWSER": "false"}
    t = run(env, terminals, "connect_blog", server=ROOT / "examples" / "demo_server.py")
    t.answer("Open this link on blog.example.com? [o/d/c]", "o")
    t.expect("✗ No browser could be opened here; open the link yourself:")
    t.expect(r"\n\s+https://blog\.example\.com/oauth/authorize\?client_id=release-helper&state=")
    report = t.result()
    assert report["result"]["action"] == "accept"


def call_needing_a_link(env: dict[str, str], terminals: list[Terminal]) -> Terminal:
    """server-everything's ``trigger-url-elicitation`` on its error path: -32042 needs a link first
    (https://modelcontextprotocol.io); its retry asks for the link of the call itself."""
    env = {**env, "BROWSER": "true"}  # a browser that opens (nothing)
    command = ["call", "--elicit", "ask", "trigger-url-elicitation", "url=https://example.com/auth"]
    terminal = Terminal(env, *command, "errorPath=true", "--", *everything_command())
    terminals.append(terminal)
    return terminal


@pytest.mark.slow
def test_a_link_a_call_needs_is_offered_and_the_call_sent_again_after_done(
    env: dict[str, str], terminals: list[Terminal]
) -> None:
    t = call_needing_a_link(env, terminals)
    t.expect(r"Link to open from Everything Reference Server")
    t.expect(r"URL\s+https://modelcontextprotocol\.io")
    t.answer("Open this link on modelcontextprotocol.io? [o/d/c]", "o")
    t.expect("✓ Opening it in your browser")
    t.answer("Done on modelcontextprotocol.io? [d/c]", "d")
    t.expect("✓ Done; sending the request again")
    t.answer("Open this link on example.com? [o/d/c]", "o")  # the retried call's own link
    t.expect("User completed the URL elicitation flow")
    assert t.wait_exit() == 0, t.screen


@pytest.mark.slow
def test_a_declined_link_a_call_needs_ends_the_call_naming_the_link(
    env: dict[str, str], terminals: list[Terminal]
) -> None:
    t = call_needing_a_link(env, terminals)
    t.answer("Open this link on modelcontextprotocol.io? [o/d/c]", "d")
    t.expect("✗ Declined; nothing was opened")
    t.expect(
        r"needs the link https://modelcontextprotocol\.io completed before tools/call: the link was declined"
    )
    assert t.wait_exit() == 2


@pytest.mark.slow
def test_concurrent_requests_are_asked_one_at_a_time(env: dict[str, str], terminals: list[Terminal]) -> None:
    server = ROOT / "examples" / "slow_summary_server.py"
    t = run(env, terminals, "summarise_many", server=server, texts=["first text", "second text"])
    screens: list[tuple[str, str]] = []
    for _ in range(4):  # two requests and two results, in whatever order they come
        kind, task = t.expect(r"Sampling (request|result) from peer \([^\n]*\) · task (\S{8})…").groups()
        screens.append((kind, task))
        t.answer("Approve this request?" if kind == "request" else "Send this result to the server?", "y")
    assert t.finish()["structuredContent"]["result"] == ["echo: first text", "echo: second text"]
    requests = [task for kind, task in screens if kind == "request"]
    results = [task for kind, task in screens if kind == "result"]
    assert len(set(requests)) == 2 and sorted(results) == sorted(requests)
    # After the first answer, two questions wanted the screen at once: one waited its turn.
    assert re.search(r"peer · task \S{8}…: queued behind the question on screen", t.screen)


@pytest.mark.slow
def test_a_cancelled_task_closes_its_prompt(env: dict[str, str], terminals: list[Terminal]) -> None:
    t = run(env, terminals, "cancel_task", prompt="never answered", delay_ms=1500)
    task = t.expect(r"Sampling request from peer \([^\n]*\) · task (\S{8})…").group(1)
    t.expect(re.escape("Approve this request?"))
    t.expect(rf"✗ peer · task {task}…: the request was cancelled; prompt closed")
    report = t.result()
    assert report["cancel"]["status"] == "cancelled"


@pytest.mark.slow
def test_live_progress_line_while_the_model_works(
    env: dict[str, str], terminals: list[Terminal], tmp_path: Path
) -> None:
    Path(env["HOST_RECEIVER_CONFIG"]).write_text('[providers.slow]\ntype = "echo"\ndelay = 1.0\n')
    t = run(env, terminals, "sample_task", prompt="a b c d e f")
    t.answer("Approve this request?", "y")
    t.expect(r"⏳ peer · task \S{8}… generating with echo-offline: \d+/200 tokens, \d+\.\d s")
    t.answer("Send this result to the server?", "y")
    assert t.result()["result"]["content"]["text"] == "echo: a b c d e f"


@pytest.mark.slow
def test_ask_needs_a_terminal(env: dict[str, str]) -> None:
    command = [str(HOST), "run", "--approve", "ask", "--", str(PEER_PYTHON), str(PEER_SERVER)]
    done = subprocess.run(
        command, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 2
    assert "'ask' needs a terminal" in done.stderr


# --- in-process, through prompt_toolkit's pipe input ---------------------------------


def request_view(task_id: str, models: tuple[str, ...] = ("small", "large")) -> SamplingRequestView:
    params = CreateMessageRequestParams.model_validate(sampling_params("hi", maxTokens=100))
    return SamplingRequestView("notes", task_id, params, models[0], models)


@pytest.mark.anyio
async def test_model_edit_offers_only_allowed_models() -> None:
    screen = io.StringIO()
    with create_pipe_input() as keys:
        async with Console(input=keys, output=PlainTextOutput(screen)) as console:
            keys.send_text("e" + FINISH + "\r" + CLEAR_LINE + "gpt-huge\r" + CLEAR_LINE + "large\r" + "s")
            decision = await TerminalApprover(console).review_request(request_view("task-one"))
    assert decision == Approve(model="large", remember="session")
    assert "'gpt-huge' is not allowed for notes; choose small, large." in screen.getvalue()


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_queued_request_cancelled_before_its_turn_is_never_shown() -> None:
    screen = io.StringIO()
    outcomes: dict[str, Any] = {}
    with create_pipe_input() as keys:
        async with Console(input=keys, output=PlainTextOutput(screen)) as console:
            approver = TerminalApprover(console)

            async def review(task_id: str, scope: anyio.CancelScope | None = None) -> None:
                with scope or anyio.CancelScope():
                    outcomes[task_id] = await approver.review_request(request_view(task_id))

            async with anyio.create_task_group() as group:
                group.start_soon(review, "first-task")
                await anyio.wait_all_tasks_blocked()
                doomed = anyio.CancelScope()
                group.start_soon(review, "second-task", doomed)
                group.start_soon(review, "third-task")
                await anyio.wait_all_tasks_blocked()
                doomed.cancel()
                await anyio.wait_all_tasks_blocked()
                keys.send_text("n")
                await anyio.wait_all_tasks_blocked()
                keys.send_text("y")
    text = screen.getvalue()
    assert outcomes == {"first-task": Refuse(), "third-task": Approve()}
    assert "notes · task third-ta…: queued behind the question on screen" in text
    assert "notes · task second-t…: cancelled before it was shown" in text
    assert "task second-t… ───" not in text
    assert text.index("task first-ta… ───") < text.index("task third-ta… ───")


@pytest.mark.anyio
async def test_a_non_text_result_cannot_be_edited() -> None:
    screen = io.StringIO()
    result = CreateMessageResult(
        role="assistant", content=[TextContent(text="a"), TextContent(text="b")], model="m"
    )
    params = CreateMessageRequestParams.model_validate(sampling_params())
    with create_pipe_input() as keys:
        async with Console(input=keys, output=PlainTextOutput(screen)) as console:
            keys.send_text("ey")
            verdict = await TerminalApprover(console).review_result(
                SamplingResultView("notes", None, params, result)
            )
    assert verdict == Send()
    assert "Only a plain text result can be edited" in screen.getvalue()


def test_the_terminal_host_says_it_needs_asyncio() -> None:
    async def open_console() -> None:
        with create_pipe_input() as keys:
            async with Console(input=keys, output=PlainTextOutput(io.StringIO())):
                pass

    with pytest.raises(RuntimeError, match="runs on asyncio"):
        anyio.run(open_console, backend="trio")


@pytest.mark.anyio
async def test_url_consent_shows_the_warnings_and_can_be_cancelled() -> None:
    screen = io.StringIO()
    link = "http://xn--pple-43d.com/login"
    warnings = url_warnings(link, "apple.com")
    view = UrlView("bank-helper", "task-url", "Log in at apple.com", link, "e1", warnings)
    with create_pipe_input() as keys:
        async with Console(input=keys, output=PlainTextOutput(screen)) as console:
            keys.send_text("maybe\rc")  # a key answers alone; other words on Enter
            answer = await TerminalElicitationUI(console).consent_url(view)
    text = screen.getvalue()
    assert answer == "cancel"
    assert f"URL          {link}" in text
    assert "domain        xn--pple-43d.com" in text
    assert "⚠ The domain 'xn--pple-43d.com' is internationalised (punycode)" in text
    assert "⚠ The link is not encrypted" in text
    assert "✗ Type one of o, d, c." in text
    assert "✗ Cancelled; nothing was opened" in text


@pytest.mark.anyio
async def test_wide_characters_wrap_by_the_columns_they_take() -> None:
    screen = io.StringIO()
    with create_pipe_input() as keys:
        async with Console(input=keys, output=PlainTextOutput(screen)) as console:
            console.write(FormattedText([("class:label", "  note: "), ("", "漢字かな " * 30)]))
    lines = screen.getvalue().splitlines()
    # A plain-text screen is 80 columns; each of these characters takes two.
    assert len(lines) > 1 and all(get_cwidth(line) <= 80 for line in lines)
    assert all(line.startswith("  漢字かな") for line in lines[1:])  # under the line's indentation
    assert "".join(lines).replace(" ", "") == "note:" + "漢字かな" * 30
