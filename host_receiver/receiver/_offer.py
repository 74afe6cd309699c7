"""What a receiver offers: its handlers, and every capability derived from them.

Rules:

- Capabilities are derived, never configured twice: ``roots`` when the host
  offers roots (it sends no ``list_changed``), ``sampling`` (with
  ``tools`` where the version has them) for a sampling handler,
  ``elicitation`` with the host's modes for an elicitation handler (only the
  form mode, spelled ``{}``, before 2025-11-25), and ``tasks`` only for a
  version with client-hosted tasks and only for methods that are both
  handled and in ``config.task_methods``; ``tasks.list`` and
  ``tasks.cancel`` as configured.
- What a connection may ask is what it was told: the same methods decide the
  capabilities a connection advertises and the requests its requestor serves.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from host_receiver.protocol.types import Root
from host_receiver.protocol.versions import LATEST_LEGACY_VERSION, rules_of
from host_receiver.receiver._config import ELICITATION, SAMPLING, ReceiverConfig
from host_receiver.receiver.work import ElicitationHandler, SamplingHandler

__all__ = ["ElicitationMode", "Offer", "RootsFunction", "RootsSource"]

ElicitationMode = Literal["form", "url"]
#: The roots to offer a server, by its name (an async function, for roots that change).
RootsFunction = Callable[[str], Awaitable[Sequence[Root]]]
#: Fixed roots, or a function that finds them per request.
RootsSource = Sequence[Root] | RootsFunction


@dataclass(frozen=True, slots=True)
class Offer:
    """The handlers a receiver serves with, and the capabilities they make (rules above)."""

    sampling: SamplingHandler | None
    elicitation: ElicitationHandler | None
    sampling_tools: bool
    elicitation_modes: tuple[ElicitationMode, ...]
    config: ReceiverConfig
    roots: RootsSource | None = None

    def handles(self, method: str) -> bool:
        """Whether a handler serves ``method``."""
        return (method == SAMPLING and self.sampling is not None) or (
            method == ELICITATION and self.elicitation is not None
        )

    def task_capable(self, method: str, protocol_version: str = LATEST_LEGACY_VERSION) -> bool:
        """Whether ``method`` is served as a task when the requestor asks for one."""
        return (
            rules_of(protocol_version).client_tasks
            and method in self.config.task_methods
            and self.handles(method)
        )

    def offers_tasks(self, protocol_version: str = LATEST_LEGACY_VERSION) -> bool:
        """Whether any request type is served as a task for ``protocol_version``."""
        return any(self.task_capable(m, protocol_version) for m in (SAMPLING, ELICITATION))

    def elicitation_modes_for(self, protocol_version: str = LATEST_LEGACY_VERSION) -> tuple[str, ...]:
        """The elicitation modes served for ``protocol_version``."""
        rules = rules_of(protocol_version)
        if not rules.elicitation:
            return ()
        if rules.elicitation_url:
            return self.elicitation_modes
        return ("form",) if "form" in self.elicitation_modes else ()

    def capabilities(self, protocol_version: str = LATEST_LEGACY_VERSION) -> dict[str, Any]:
        """The client capabilities this receiver really serves, for ``protocol_version``."""
        rules = rules_of(protocol_version)
        caps: dict[str, Any] = {}
        if self.roots is not None:
            caps["roots"] = {}
        if self.sampling is not None:
            caps["sampling"] = {"tools": {}} if self.sampling_tools and rules.sampling_tools else {}
        modes = self.elicitation_modes_for(protocol_version)
        if modes:
            caps["elicitation"] = {mode: {} for mode in modes} if rules.elicitation_url else {}
        requests: dict[str, Any] = {}
        if self.task_capable(SAMPLING, protocol_version):
            requests["sampling"] = {"createMessage": {}}
        if self.task_capable(ELICITATION, protocol_version):
            requests["elicitation"] = {"create": {}}
        if requests:
            tasks: dict[str, Any] = {}
            if self.config.tasks_list:
                tasks["list"] = {}
            if self.config.tasks_cancel:
                tasks["cancel"] = {}
            tasks["requests"] = requests
            caps["tasks"] = tasks
        return caps
