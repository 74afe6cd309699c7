"""Protocol versions and what each one allows: every era rule, in one table.

Rules:

- A version is the spec's date string. Two eras: **legacy** versions agree on
  one version per connection in the ``initialize`` handshake (2025-11-25 and
  earlier); **modern** versions carry it, with client info and capabilities,
  in every request's ``_meta`` (2026-07-28).
- What a version allows is a row of :data:`RULES`, never a comparison of
  date strings elsewhere: code asks ``rules_of(version).client_tasks``.
- Client-hosted tasks (a server task-augments its ``sampling/createMessage``
  or ``elicitation/create``, the host answers ``tasks/*``) exist only in
  2025-11-25; 2026-07-28 moved tasks to the server (the tasks extension).
- Sampling with ``tools``/``toolChoice`` and URL-mode elicitation came with
  2025-11-25; elicitation itself with 2025-06-18. In 2025-11-25 a URL
  elicitation carries an ``elicitationId`` the server may complete by
  notification; 2026-07-28 dropped both.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "LATEST_LEGACY_VERSION",
    "LATEST_MODERN_VERSION",
    "LATEST_PROTOCOL_VERSION",
    "LEGACY_VERSIONS",
    "MODERN_VERSIONS",
    "RULES",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "Era",
    "VersionRules",
    "rules_of",
]


class Era(StrEnum):
    """How a version is agreed on: once per connection (legacy) or per request (modern)."""

    LEGACY = "legacy"
    MODERN = "modern"


@dataclass(frozen=True, slots=True)
class VersionRules:
    """What one protocol version allows a client and a server to do."""

    version: str
    era: Era
    #: Server-initiated requests may be task-augmented; the client answers ``tasks/*``.
    client_tasks: bool
    #: ``sampling.tools``: sampling requests may carry ``tools`` and ``toolChoice``.
    sampling_tools: bool
    #: ``elicitation/create`` exists (form mode).
    elicitation: bool
    #: URL-mode elicitation exists.
    elicitation_url: bool
    #: A URL elicitation carries an ``elicitationId`` and may be completed by notification.
    elicitation_complete: bool


#: Every version this project knows, newest first.
RULES: dict[str, VersionRules] = {
    rules.version: rules
    for rules in (
        VersionRules("2026-07-28", Era.MODERN, False, True, True, True, False),
        VersionRules("2025-11-25", Era.LEGACY, True, True, True, True, True),
        VersionRules("2025-06-18", Era.LEGACY, False, False, True, False, False),
        VersionRules("2025-03-26", Era.LEGACY, False, False, False, False, False),
    )
}

#: Versions agreed on in an ``initialize`` handshake, newest first.
LEGACY_VERSIONS: tuple[str, ...] = tuple(v for v, r in RULES.items() if r.era is Era.LEGACY)
#: Versions carried in every request's ``_meta``, newest first.
MODERN_VERSIONS: tuple[str, ...] = tuple(v for v, r in RULES.items() if r.era is Era.MODERN)
LATEST_LEGACY_VERSION = LEGACY_VERSIONS[0]

LATEST_MODERN_VERSION = MODERN_VERSIONS[0]

#: The newest version this project speaks, and every one it speaks, newest first.
LATEST_PROTOCOL_VERSION = LATEST_MODERN_VERSION
SUPPORTED_PROTOCOL_VERSIONS: tuple[str, ...] = tuple(RULES)


def rules_of(version: str) -> VersionRules:
    """The rules of ``version``; ``KeyError`` for a version this project does not know."""
    try:
        return RULES[version]
    except KeyError:
        raise KeyError(f"unknown MCP protocol version {version!r}") from None
