"""CLI options beyond the contract tests: default server names, task limits."""

from __future__ import annotations

import pytest

from host_receiver.cli import build_parser, server_name


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
