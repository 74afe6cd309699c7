"""An adapter used without its library, or with a version outside its extra, says what to install.

This runs in ``.venv``, which never has the adapters' libraries (docs/adapters.md):
each options function raises :class:`AdapterUnavailable` (an ``ImportError``)
naming the extra. The wrong-major cases run in the other library's adapter venv
(tests/interop/test_adapters.py).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from host_receiver import Receiver
from host_receiver.adapters import REQUIREMENTS, Requirement, fastmcp, mcp1, mcp2
from host_receiver.errors import AdapterUnavailable, HostReceiverError

ROOT = Path(__file__).resolve().parents[2]
OPTIONS: dict[str, Callable[..., dict[str, Any]]] = {
    "mcp1": mcp1.session_options,
    "mcp2": mcp2.client_options,
    "fastmcp": fastmcp.client_options,
}


@pytest.mark.parametrize(
    ("adapter", "message"),
    [
        ("mcp1", "host_receiver.adapters.mcp1 needs mcp>=1.23,<2 (not installed)"),
        ("mcp2", "host_receiver.adapters.mcp2 needs mcp>=2.3,<3 (not installed)"),
        ("fastmcp", "host_receiver.adapters.fastmcp needs fastmcp>=4.0,<5 (not installed)"),
    ],
)
def test_an_adapter_without_its_library_names_the_extra(adapter: str, message: str) -> None:
    assert importlib.util.find_spec("mcp") is None and importlib.util.find_spec("fastmcp") is None
    with pytest.raises(AdapterUnavailable) as raised:
        OPTIONS[adapter](Receiver(), server="notes")
    assert str(raised.value) == f"{message}: pip install 'host-receiver[{adapter}]'"
    assert isinstance(raised.value, ImportError) and isinstance(raised.value, HostReceiverError)


@pytest.mark.parametrize(
    ("adapter", "options"),
    [
        ("mcp1", lambda receiver: mcp1.callback_options(receiver, server="notes")),
        ("mcp2", lambda receiver: mcp2.callback_options(receiver, server="notes")),
        ("fastmcp", lambda receiver: fastmcp.toolset_options("server.py", receiver, server="notes")),
    ],
)
def test_the_framework_options_without_their_library_name_the_extra(
    adapter: str, options: Callable[[Receiver], dict[str, Any]]
) -> None:
    with pytest.raises(AdapterUnavailable, match=rf"pip install 'host-receiver\[{adapter}\]'$"):
        options(Receiver())


def test_the_checked_ranges_are_the_extras() -> None:
    with (ROOT / "pyproject.toml").open("rb") as file:
        extras = tomllib.load(file)["project"]["optional-dependencies"]
    assert {name: [str(r) for r in needed] for name, needed in REQUIREMENTS.items()} == {
        name: extras[name] for name in REQUIREMENTS
    }


def test_a_version_outside_the_range_is_named() -> None:
    anyio_version = importlib.metadata.version("anyio")
    major = int(anyio_version.split(".")[0])
    assert Requirement("anyio", ("anyio",), f"{major}.0", f"{major + 1}").unmet() is None
    assert (
        Requirement("anyio", ("anyio",), f"{major + 1}", f"{major + 2}").unmet() == f"found {anyio_version}"
    )
    assert Requirement("anyio", ("anyio",), "0.1", f"{major}").unmet() == f"found {anyio_version}"
    # The first distribution that is installed counts (fastmcp's client also comes as fastmcp-slim).
    assert Requirement("anyio", ("no-such-distribution", "anyio"), f"{major}", f"{major + 1}").unmet() is None
    assert Requirement("json", ("json",), "1", "2").unmet() == "found json without version metadata"
    assert Requirement("no_such_module", ("anyio",), "1", "2").unmet() == "not installed"
