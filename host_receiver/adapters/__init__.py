"""Adapters: host-receiver's receiver inside the MCP clients hosts already run.

Each module serves one client library's server-initiated requests (sampling,
elicitation, and the tasks chapter's ``tasks/*`` where the library has them)
through a :class:`~host_receiver.receiver.Receiver`, with its approval hooks,
providers, limits, forms and audit log:

- :mod:`host_receiver.adapters.mcp1`: mcp 1.x's ``ClientSession``
  (``host-receiver[mcp1]``);
- :mod:`host_receiver.adapters.mcp2`: mcp 2.x's ``mcp.Client``
  (``host-receiver[mcp2]``);
- :mod:`host_receiver.adapters.fastmcp`: ``fastmcp.Client`` 4.x
  (``host-receiver[fastmcp]``).

Rules: the adapters are optional. ``import host_receiver`` imports none of
them, and importing one imports nothing of its library: the library is
imported when its options function is first called. That call first checks
(:func:`require`) that each library the adapter needs is importable and its
installed version within the adapter's extra (:data:`REQUIREMENTS`, which are
pyproject.toml's extras); otherwise it raises :class:`AdapterUnavailable`
naming the range, what was found and the install command. Versions compare by
their release numbers. docs/adapters.md says which versions each supports,
what it covers and where it departs from host-receiver's own connection.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from host_receiver.errors import AdapterUnavailable

if TYPE_CHECKING:
    from host_receiver.receiver import Receiver

__all__: list[str] = []


@dataclass(frozen=True)
class Requirement:
    """One library an adapter needs: ``module``, from one of ``distributions``, version in [low, high)."""

    module: str
    distributions: tuple[str, ...]
    low: str
    high: str

    def __str__(self) -> str:
        return f"{self.distributions[0]}>={self.low},<{self.high}"

    def unmet(self) -> str | None:
        """What is installed, if it does not meet this requirement (None when it does)."""
        if importlib.util.find_spec(self.module) is None:
            return "not installed"
        for distribution in self.distributions:
            try:
                version = importlib.metadata.version(distribution)
            except importlib.metadata.PackageNotFoundError:
                continue
            inside = _release(self.low) <= _release(version) < _release(self.high)
            return None if inside else f"found {version}"
        return f"found {self.module} without version metadata"


#: What each adapter needs: its extra in pyproject.toml, requirement by requirement
#: (tests/adapters/test_bridge.py checks that they agree). fastmcp's client also
#: comes as the ``fastmcp-slim`` distribution, which is accepted alike.
REQUIREMENTS: dict[str, tuple[Requirement, ...]] = {
    "mcp1": (Requirement("mcp", ("mcp",), "1.23", "2"),),
    "mcp2": (Requirement("mcp", ("mcp",), "2.3", "3"),),
    "fastmcp": (
        Requirement("fastmcp", ("fastmcp", "fastmcp-slim"), "4.0", "5"),
        Requirement("mcp", ("mcp",), "2.3", "3"),
    ),
}


def require(adapter: str) -> None:
    """Raise :class:`AdapterUnavailable` unless every library ``adapter`` needs is there (rules above)."""
    for requirement in REQUIREMENTS[adapter]:
        found = requirement.unmet()
        if found is not None:
            raise AdapterUnavailable(
                f"host_receiver.adapters.{adapter} needs {requirement} ({found}): "
                f"pip install 'host-receiver[{adapter}]'"
            )


def _release(version: str) -> tuple[int, ...]:
    """The release numbers a version starts with: ``"2.3.0rc1"`` -> ``(2, 3, 0)``."""
    match = re.match(r"\d+(?:\.\d+)*", version)
    return tuple(int(part) for part in match.group().split(".")) if match else ()


class OptionsFunction(Protocol):
    """An adapter's public function: its client's keyword arguments serving ``server``."""

    def __call__(self, receiver: Receiver, *, server: str) -> dict[str, Any]: ...


class TargetOptionsFunction(Protocol):
    """An adapter's public function that builds its client of ``target`` too."""

    def __call__(self, target: Any, receiver: Receiver, *, server: str) -> dict[str, Any]: ...


def target_options_function(
    extra: str, implementation: str, function: str, doc: str
) -> TargetOptionsFunction:
    """Like :func:`options_function`, for a function that also takes the client's ``target``."""

    def options(target: Any, receiver: Receiver, *, server: str) -> dict[str, Any]:
        require(extra)
        return getattr(importlib.import_module(implementation), function)(target, receiver, server)  # type: ignore[no-any-return]

    options.__name__ = options.__qualname__ = function
    options.__module__ = f"host_receiver.adapters.{extra}"
    options.__doc__ = doc
    return options


def options_function(extra: str, implementation: str, function: str, client: str) -> OptionsFunction:
    """The public options function of one adapter: checks the extra (:func:`require`), then imports
    the adapter's ``implementation`` module (and so its library) and calls its ``function``."""

    def options(receiver: Receiver, *, server: str) -> dict[str, Any]:
        require(extra)
        return getattr(importlib.import_module(implementation), function)(receiver, server)  # type: ignore[no-any-return]

    options.__name__ = options.__qualname__ = function
    options.__module__ = f"host_receiver.adapters.{extra}"
    options.__doc__ = (
        f"``{client}`` keyword arguments that serve the server's requests through ``receiver``.\n\n"
        "``server`` names the server in approval views, prompts and the audit log. Raises\n"
        ":class:`AdapterUnavailable` when the library is missing or outside the extra's range.\n"
    )
    return options
