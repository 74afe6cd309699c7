"""Default server names of the CLI: the server, not the launcher that runs it."""

from __future__ import annotations

import pytest

from host_receiver.cli import server_name


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
