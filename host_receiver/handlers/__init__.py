"""The sampling and elicitation handlers a host plugs into the receiver (docs/api.md, "Handlers").

Holds :class:`SamplingService` (:mod:`._sampling`: plan, ask the person,
generate, review) and :class:`ElicitationService` (:mod:`._elicitation`:
forms, links opened after consent), and :func:`open_receiver`, the one-call
default: a receiver with both services, sampling through the configured
providers. May import the receiver, the people's hooks and policies,
``providers``, protocol and the base; never the client, web or CLI.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from host_receiver.handlers._elicitation import ElicitationService
from host_receiver.handlers._sampling import Generation, GenerationObserver, ModelRouter, SamplingService
from host_receiver.people.approval import ElicitationUI, SamplingApprover
from host_receiver.receiver import Receiver, ReceiverConfig
from providers import build_registry

__all__ = [
    "ElicitationService",
    "Generation",
    "GenerationObserver",
    "ModelRouter",
    "SamplingService",
    "open_receiver",
]


@asynccontextmanager
async def open_receiver(
    approver: SamplingApprover, forms: ElicitationUI, *, config: ReceiverConfig | None = None
) -> AsyncIterator[Receiver]:
    """A :class:`Receiver`: sampling through the configured providers behind ``approver``, forms by ``forms``.

    The providers are :func:`providers.build_registry`'s: the config file with its
    keys, or the offline echo provider when none is configured; they are closed
    when the block ends. For your own registry, roots or task store, build the
    ``Receiver`` from :class:`SamplingService` and :class:`ElicitationService`.
    """
    async with build_registry() as registry:
        yield Receiver(
            sampling=SamplingService(registry, approver), elicitation=ElicitationService(forms), config=config
        )
