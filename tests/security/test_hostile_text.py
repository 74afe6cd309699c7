"""Nothing a server writes reaches a terminal raw, and nothing it sends is echoed back unbounded.

``host-receiver run`` serves tests/servers/hostile_server.py, which puts ESC
sequences, BEL, U+202E and forged log lines in everything it controls. At
``--log-level INFO`` (the audit log) and DEBUG the command's stderr must hold
none of those bytes raw, and must show them escaped (so the test sees the
paths it means to). In-process, the terminal's screens are checked the same way.
"""

from __future__ import annotations

import importlib
import io
import json
import logging
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output.plain_text import PlainTextOutput

from host_receiver.cli.terminal import Console, TerminalApprover, TerminalElicitationUI
from host_receiver.people.approval import FormView, SamplingRequestView, SamplingResultView, UrlView
from host_receiver.protocol.elicitation_rules import parse_form_schema
from host_receiver.protocol.types import CreateMessageRequestParams, CreateMessageResult, TextContent
from host_receiver.sanitize import SafeRecords
from tests.cli_command import CLI, LIMIT_S
from tests.interop import RAW_SERVER

SERVERS = Path(__file__).resolve().parents[1] / "servers"
EVIL = "\x1b[2J\x1b]0;owned\x07\u202eevil\n2099-01-01 00:00:00 INFO forged: all good"
RAW = {"ESC": b"\x1b", "BEL": b"\x07", "U+202E": "\u202e".encode()}
BIG_ID = 50_000_000


def raw_counts(data: bytes) -> dict[str, int]:
    return {name: data.count(raw) for name, raw in RAW.items()}


def run_hostile(level: str, tmp_path: Path) -> tuple[bytes, dict[str, Any]]:
    config = tmp_path / "config.toml"
    config.write_text('[providers.slow]\ntype = "echo"\ndelay = 1.0\n')  # the cancelled request still runs
    record = tmp_path / "record.json"
    server = [
        sys.executable,
        str(SERVERS / "hostile_server.py"),
        "--record",
        str(record),
        "--big-id",
        str(BIG_ID),
    ]
    proc = subprocess.run(
        [*CLI, "--log-level", level, "run", "--approve", "auto", "--elicit", "defaults", "--", *server],
        env={**os.environ, "HOST_RECEIVER_CONFIG": str(config)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=LIMIT_S,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout == b""
    return proc.stderr, json.loads(record.read_text())


@pytest.mark.slow
@pytest.mark.parametrize("level", ["INFO", "DEBUG"])
def test_no_escape_bel_or_bidi_byte_reaches_stderr(level: str, tmp_path: Path) -> None:
    stderr, _ = run_hostile(level, tmp_path)
    assert raw_counts(stderr) == {"ESC": 0, "BEL": 0, "U+202E": 0}
    text = stderr.decode()
    assert "\\x1b[2J\\x1b]0;owned\\x07\\u202eevil\\n2099-01-01" in text  # shown, escaped
    assert not re.search(r"^2099-01-01", text, re.M)  # no forged line
    assert "INFO forged: all good] \\x1b[2J" in text  # the server's stderr, under its own name, escaped
    assert "cancelled request to-cancel: \\x1b[2J" in text  # the cancel reason
    assert re.search(r"task lookup refused requestor=.+ task=t\\x1b\[2J", text)  # the audit line
    assert max(len(line) for line in text.splitlines()) < 20_000  # the 50 MB id is not logged whole


@pytest.mark.slow
def test_ids_are_echoed_back_bounded(tmp_path: Path) -> None:
    _, record = run_hostile("WARNING", tmp_path)
    big = record["replies"]["get-big"]
    assert big["error"]["code"] == -32602
    assert record["sizes"]["get-big"] < 1_000  # not 50 MB
    assert big["error"]["data"]["taskId"].startswith("zzzz")
    assert big["error"]["data"]["taskId"].endswith(f"[{BIG_ID + len(EVIL):,} characters]")
    assert record["replies"]["get-evil"]["error"]["data"] == {"taskId": "t" + EVIL}  # short: whole
    assert len(record["replies"]["method"]["error"]["message"]) < 200
    assert "to-cancel" not in record["replies"]  # cancelled: no answer, as the spec says
    assert record["replies"]["result"]["result"]["content"]["text"].startswith("echo: ")


@pytest.mark.slow
def test_the_json_printed_by_call_shows_no_raw_control(tmp_path: Path) -> None:
    hostile = "\u202eevil\x9b31m\x1b[2J\x07 é 中"
    call = ["--call", "echo", "--args", json.dumps({"text": hostile})]
    proc = subprocess.run(
        [*CLI, "run", *call, "--", sys.executable, str(RAW_SERVER), "--mode", "garbage"],
        env={**os.environ, "HOST_RECEIVER_CONFIG": str(tmp_path / "absent.toml")},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=LIMIT_S,
    )
    assert proc.returncode == 0, proc.stderr
    assert raw_counts(proc.stdout) == {"ESC": 0, "BEL": 0, "U+202E": 0}
    assert "\x9b".encode() not in proc.stdout
    printed = json.loads(proc.stdout)
    assert printed["content"][0]["text"] == hostile  # the same value, escaped
    assert "é 中" in proc.stdout.decode()  # printable text stays readable


# --- the terminal's screens, in-process ------------------------------------------------


def params() -> CreateMessageRequestParams:
    return CreateMessageRequestParams.model_validate(
        {
            "messages": [{"role": "user", "content": {"type": "text", "text": EVIL}}],
            "systemPrompt": EVIL,
            "maxTokens": 10,
            "tools": [{"name": "tool" + EVIL, "inputSchema": {"type": "object"}}],
        }
    )


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_approval_and_elicitation_screens_show_no_raw_control(anyio_backend: str) -> None:
    server = "srv" + EVIL
    schema = parse_form_schema(
        {
            "type": "object",
            "properties": {
                "name" + EVIL: {"type": "string", "title": EVIL, "description": EVIL},
                "pick": {"type": "string", "enum": ["a" + EVIL, "b"]},
            },
        }
    )
    result = CreateMessageResult(role="assistant", content=TextContent(text=EVIL), model="m" + EVIL)
    screen = io.StringIO()
    with create_pipe_input() as keys:
        async with Console(input=keys, output=PlainTextOutput(screen)) as console:
            approver, ui = TerminalApprover(console), TerminalElicitationUI(console)
            keys.send_text("n\r")
            await approver.review_request(SamplingRequestView(server, "t1", params(), "m" + EVIL, ("m",)))
            keys.send_text("n\r")
            await approver.review_result(SamplingResultView(server, "t2", params(), result))
            keys.send_text("d\r")
            await ui.fill_form(FormView(server, "t3", EVIL, schema))
            keys.send_text("d\r")
            await ui.consent_url(UrlView(server, "t4", EVIL, "https://example.com/", "e1"))
    shown = screen.getvalue().encode()
    assert raw_counts(shown) == {"ESC": 0, "BEL": 0, "U+202E": 0}
    text = shown.decode()
    assert text.count("\\x1b[2J") >= 10  # every screen showed the text, escaped
    assert "Sampling request from srv\\x1b[2J\\x1b]0;owned\\x07\\u202eevil\\n2099" in text  # one line


# --- every logger of the library makes its records safe -----------------------------------------

ROOT = Path(__file__).resolve().parents[2]


def test_every_logger_of_both_packages_makes_its_records_safe() -> None:
    """A new module that made a plain ``logging.getLogger`` would log server text raw."""
    plain = [
        f"{path.relative_to(ROOT)}:{number}"
        for package in ("host_receiver", "providers")
        for path in sorted((ROOT / package).rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.match(r"^\w+\s*=\s*logging\.getLogger\(", line)
    ]
    assert plain == []
    names = [
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for package in ("host_receiver", "providers")
        for path in sorted((ROOT / package).rglob("*.py"))
        if path.name != "__main__.py"
        and path.parent.name != "_examples"
        # The adapters' inner modules import their client library (not in this venv); the
        # source check above covers them.
        and not (path.parent.name == "adapters" and path.name.startswith("_") and path.name != "__init__.py")
    ]
    unsafe = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the moved modules still import
        for name in names:
            module = importlib.import_module(name)
            loggers = [v for v in vars(module).values() if isinstance(v, logging.Logger)]
            for logger in loggers:
                ours = logger.name.startswith(("host_receiver", "providers"))
                if ours and not any(isinstance(f, SafeRecords) for f in logger.filters):
                    unsafe.append(f"{name}: {logger.name}")
    assert unsafe == []


def test_a_record_is_made_safe_whatever_its_arguments() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "a %s b %r c %d", (EVIL, EVIL, 3), None)
    assert SafeRecords().filter(record)
    text = record.getMessage()
    assert text.isprintable() and "\\x1b[2J" in text and text.endswith(" c 3")
    huge = logging.LogRecord("x", logging.INFO, __file__, 1, "%s", ("z" * 1_000_000,), None)
    SafeRecords().filter(huge)
    assert len(huge.getMessage()) < 10_000 and "[1,000,000 characters]" in huge.getMessage()
    try:
        raise ValueError(EVIL)
    except ValueError:
        failing = logging.LogRecord("x", logging.ERROR, __file__, 1, "boom", (), sys.exc_info())
    SafeRecords().filter(failing)
    assert failing.exc_text is not None and "\x1b" not in failing.exc_text and "\\x1b[2J" in failing.exc_text


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_an_answer_being_edited_shows_no_raw_bidi_and_stays_the_same_text(anyio_backend: str) -> None:
    screen = io.StringIO()
    with create_pipe_input() as keys:
        async with Console(input=keys, output=PlainTextOutput(screen)) as console:
            keys.send_text("!\r")
            async with console.turn("srv", "t1") as turn:
                answer = await turn.ask("Text: ", default=EVIL.replace("\n", " "))
    assert answer == EVIL.replace("\n", " ") + "!"  # the text edited is the text shown
    assert raw_counts(screen.getvalue().encode()) == {"ESC": 0, "BEL": 0, "U+202E": 0}
    assert "\ufffdevil" in screen.getvalue()
