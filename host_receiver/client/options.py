"""How a connection is set up: one frozen :class:`ConnectionOptions`, passed once.

A :class:`~host_receiver.client.host.Host` holds one and hands it to every
connection it makes (``Host.connect*(options=...)`` replaces it for one
connection); ``ClientConnection.connect(transport, options)`` takes one.

Rules:

- The options are checked when they are made (an unknown protocol choice or
  a round cap below 1 is a ``ValueError`` there, not at the first connection).
- They never change: ``dataclasses.replace(options, protocol=...)`` makes
  another.
- The 0.2 keywords (``protocol=``, ``client_info=``, ``max_input_rounds=``,
  ``tasks_extension=``, ``discover_timeout=``, ``init_timeout=`` on ``Host``,
  ``Host.connect*`` and ``ClientConnection.connect``) still work with a
  ``DeprecationWarning`` (:func:`options_from_keywords`); they go in 0.4.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, fields, replace
from importlib import metadata
from typing import TYPE_CHECKING, Any

from host_receiver.protocol.types import Implementation
from host_receiver.protocol.versions import LEGACY_VERSIONS, MODERN_VERSIONS
from host_receiver.telemetry import Telemetry

if TYPE_CHECKING:
    from host_receiver.client.remote_tasks.store import RemoteTaskStore

__all__ = [
    "AUTO",
    "DEFAULT_DISCOVER_TIMEOUT",
    "DEFAULT_INIT_TIMEOUT",
    "DEFAULT_MAX_INPUT_ROUNDS",
    "URL_ELICITATION_WAIT",
    "ConnectionOptions",
    "default_client_info",
    "options_from_keywords",
]

#: The protocol choice that probes with ``server/discover`` and falls back to ``initialize``.
AUTO = "auto"
#: Input rounds one request may take before the call is given up.
DEFAULT_MAX_INPUT_ROUNDS = 10
#: Seconds a legacy server may stay silent on ``server/discover`` before ``initialize``.
DEFAULT_DISCOVER_TIMEOUT = 10.0
#: Seconds the agreement may take in all.
DEFAULT_INIT_TIMEOUT = 60.0
#: Seconds a request waits, after the person opened a link it needs (-32042), for their Done or
#: the server's ``notifications/elicitation/complete`` (docs/limits.md).
URL_ELICITATION_WAIT = 600.0


def default_client_info() -> Implementation:
    """``clientInfo`` naming this package and its installed version."""
    try:
        version = metadata.version("host-receiver")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a bare tree
        version = "0"
    return Implementation(name="host-receiver", version=version)


@dataclass(frozen=True, kw_only=True)
class ConnectionOptions:
    """How a connection agrees on a protocol and follows a modern server's rounds and tasks.

    ``protocol`` is ``"auto"`` (dual-era: probe, then fall back to the
    handshake), ``"2026-07-28"`` or ``"2025-11-25"``. ``client_info`` is
    sent as ``clientInfo``. ``max_input_rounds`` caps a request's
    ``input_required`` rounds. ``tasks_extension`` declares the tasks
    extension on modern requests. ``discover_timeout`` is how long a silent
    server may take on ``server/discover`` before it is taken for a legacy
    one; ``init_timeout`` bounds the whole agreement (None: no bound).
    ``telemetry`` records traces and metrics through the tracer and meter
    providers it was given (None: the global ones; docs/observability.md).
    ``task_store`` keeps the servers' tasks the connection follows until they
    end, so that they can be resumed after a restart (None: in memory only;
    :mod:`host_receiver.client.remote_tasks.store`).
    ``url_elicitation_wait`` bounds the wait for a link a request needs
    (-32042), once opened, to be done (:mod:`host_receiver.client._links`).
    """

    protocol: str = AUTO
    client_info: Implementation = field(default_factory=default_client_info)
    max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS
    tasks_extension: bool = True
    discover_timeout: float | None = DEFAULT_DISCOVER_TIMEOUT
    init_timeout: float | None = DEFAULT_INIT_TIMEOUT
    telemetry: Telemetry | None = None
    task_store: RemoteTaskStore | None = None
    url_elicitation_wait: float = URL_ELICITATION_WAIT

    def __post_init__(self) -> None:
        if self.protocol != AUTO and self.protocol not in (*LEGACY_VERSIONS, *MODERN_VERSIONS):
            known = ", ".join((AUTO, *MODERN_VERSIONS, *LEGACY_VERSIONS))
            raise ValueError(f"unknown protocol choice {self.protocol!r} (one of {known})")
        if self.max_input_rounds < 1:
            raise ValueError("max_input_rounds must be at least 1")
        if not self.url_elicitation_wait > 0:
            raise ValueError("url_elicitation_wait must be more than 0 seconds")


_NAMES = frozenset(f.name for f in fields(ConnectionOptions))
#: The options for which None is a value (no bound); for the others 0.2 read None as "the default".
_NONE_IS_A_VALUE = frozenset({"discover_timeout", "init_timeout"})


def options_from_keywords(
    options: ConnectionOptions | None, keywords: dict[str, Any], where: str
) -> ConnectionOptions:
    """``options`` (default: the defaults) with the 0.2 keywords given to ``where`` applied.

    Keywords warn (``DeprecationWarning``, attributed to the caller of
    ``where``, which calls this directly); one that is no option is a ``TypeError``; None keeps
    the option as it is, unless None is one of its values.
    """
    base = options if options is not None else ConnectionOptions()
    if unknown := sorted(keywords.keys() - _NAMES):
        raise TypeError(f"{where}() got an unexpected keyword argument {unknown[0]!r}")
    if not keywords:
        return base
    warnings.warn(
        f"{where}({'=, '.join(sorted(keywords))}=) is deprecated and goes in 0.4: "
        "pass options=ConnectionOptions(...) (docs/changelog.md)",
        DeprecationWarning,
        stacklevel=3,
    )
    given = {name: value for name, value in keywords.items() if value is not None or name in _NONE_IS_A_VALUE}
    return replace(base, **given)
