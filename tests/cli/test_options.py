"""CLI options beyond the contract tests: default server names, task limits, the protocol options.

The protocol options' effect on a real server is in tests/interop/test_modern_era.py
(``test_the_cli_*``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from host_receiver.cli import build_parser, server_name
from host_receiver.cli._options import root_uri


@pytest.mark.parametrize(
    ("command", "name"),
    [
        (["/x/.peers/py/bin/python", "tests/peers/py_server.py"], "py_server.py"),
        (["python3.11", "-u", "s.py"], "s.py"),
        (["npx", "-y", "@acme/notes"], "notes"),
        (["uv", "run", "srv.py"], "srv.py"),
        (["node", "ts.mjs"], "ts.mjs"),
        (["/usr/bin/my-server", "--port", "1"], "my-server"),
        (["python"], "python"),
    ],
)
def test_default_name_names_the_server(command: list[str], name: str) -> None:
    assert server_name(command) == name


def test_task_limits_are_options_and_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(
        ["run", "--max-active-tasks", "5", "--max-stored-tasks", "9", "--", "srv"]
    )
    assert (args.max_active_tasks, args.max_stored_tasks) == (5, 9)
    defaults = build_parser().parse_args(["run", "--", "srv"])
    assert (defaults.max_active_tasks, defaults.max_stored_tasks) == (256, 10_000)
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["run", "--max-active-tasks", "0", "--", "srv"])
    assert exited.value.code == 2
    assert "not a positive whole number" in capsys.readouterr().err


def test_protocol_options_and_their_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    defaults = build_parser().parse_args(["run", "--", "srv"])
    assert (defaults.protocol, defaults.max_input_rounds, defaults.tasks_extension, defaults.root) == (
        "auto",
        10,
        True,
        [],
    )
    options = ["--protocol", "2025-11-25", "--max-input-rounds", "1", "--no-tasks-extension"]
    roots = ["--root", "notes", "--root", "file:///srv/b"]
    args = build_parser().parse_args(["run", *options, *roots, "--", "srv"])
    assert (args.protocol, args.max_input_rounds, args.tasks_extension) == ("2025-11-25", 1, False)
    assert [root_uri(r) for r in args.root] == [(Path.cwd() / "notes").resolve().as_uri(), "file:///srv/b"]
    for wrong in (["--max-input-rounds", "0"], ["--protocol", "2024-11-05"]):
        with pytest.raises(SystemExit) as exited:
            build_parser().parse_args(["run", *wrong, "--", "srv"])
        assert exited.value.code == 2
    assert "invalid choice: '2024-11-05'" in capsys.readouterr().err
