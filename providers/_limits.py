"""The one set of bounds on a sampling request, and the one place that applies them.

Rules:

* :class:`SamplingLimits` is the host's whole policy on size and time:
  ``max_tokens``, ``max_messages``, ``max_tool_rounds`` (assistant
  ``tool_use`` turns in one conversation), and what happens to a
  ``maxTokens`` above the bound: ``"clamp"`` (the default; the spec lets a
  client sample fewer tokens than requested) or ``"refuse"``; then, for the
  call itself, ``deadline`` (seconds for one whole sampling call, retries
  included) and ``max_reply_chars`` (the longest reply taken, in characters
  of text and tool-call arguments), whose byte form ``max_reply_bytes`` bounds
  what a provider reads off the network for one reply or one streamed event.
  The request bounds are applied here, before a task exists; the call bounds
  by the :class:`~providers.SamplingPlan` that samples it, the same for every
  provider.
* The bound on ``maxTokens`` is the smaller of ``max_tokens`` and what the
  chosen model's context leaves after the estimated prompt: the *effective*
  limits of host and model.
* :func:`bound_request` is the only check of these bounds. More messages or
  tool rounds than allowed, or (policy ``refuse``) too many tokens, raise
  :class:`LimitExceeded`, which names the wire field; a clamp returns a
  copy whose ``maxTokens`` is lowered, and the caller shows it (approval
  view, audit log). It runs once per request, before a task exists, and
  again only on params a person edited.
* Protocol rules (a non-empty message list, a positive ``maxTokens``,
  tool_use/tool_result pairing) are the receiver's, checked before this.

Fixed caps (docs/limits.md): ``REPLY_OVERHEAD``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar, runtime_checkable

from host_receiver.errors import LimitExceeded, UnsupportedRequest
from host_receiver.protocol.types import CreateMessageResult, SamplingRequest, ToolUseContent

from ._contract import ModelInfo, ProgressSink
from ._selection import Requirements, requirements

__all__ = [
    "MaxTokensPolicy",
    "ProviderLimits",
    "SamplingLimits",
    "TakesLimits",
    "bound_request",
    "check_request",
]

MaxTokensPolicy = Literal["clamp", "refuse"]
#: What a reply's body may hold besides the characters counted by ``max_reply_chars``: 1 MiB.
REPLY_OVERHEAD = 1024 * 1024
_R = TypeVar("_R", bound=SamplingRequest)


@dataclass(frozen=True, slots=True)
class SamplingLimits:
    """How much one sampling request may ask for (rules in the module docstring)."""

    max_tokens: int = 32_768
    max_messages: int = 1_000
    max_tool_rounds: int = 32
    over_max_tokens: MaxTokensPolicy = "clamp"
    #: Seconds one sampling call may take in all (connecting, retries, streaming).
    deadline: float = 300.0
    #: The longest reply taken, in characters (1 Mi); a longer one stops its stream.
    max_reply_chars: int = 1_048_576

    @property
    def max_reply_bytes(self) -> int:
        """The most bytes read of one reply, or of one streamed event.

        What ``max_reply_chars`` characters can take in JSON (12 bytes for a
        character written as an escaped surrogate pair, ``\\ud83d\\ude00``),
        plus :data:`REPLY_OVERHEAD` for the rest of the body (ids, usage,
        reasoning text).
        """
        return 12 * self.max_reply_chars + REPLY_OVERHEAD

    def __post_init__(self) -> None:
        if min(self.max_tokens, self.max_messages, self.max_tool_rounds, self.max_reply_chars) < 1:
            raise ValueError("sampling limits must be positive")
        if not self.deadline > 0:
            raise ValueError("the sampling deadline must be a positive number of seconds")
        if self.over_max_tokens not in ("clamp", "refuse"):
            raise ValueError("over_max_tokens must be 'clamp' or 'refuse'")


@runtime_checkable
class TakesLimits(Protocol):
    """A provider that bounds what it reads off the network by the call's limits, given as an argument.

    :meth:`~providers.SamplingPlan.sample` calls ``sample_within`` instead of
    ``sample`` on such a provider.
    """

    async def sample_within(
        self,
        params: SamplingRequest,
        model: ModelInfo,
        limits: SamplingLimits,
        progress: ProgressSink | None = None,
    ) -> CreateMessageResult:
        """:meth:`Provider.sample`, reading no more than ``limits.max_reply_bytes`` of a reply or event."""
        ...


#: The old name of :class:`SamplingLimits` (the providers' half of what is now one object).
ProviderLimits = SamplingLimits


def bound_request(
    params: _R, model: ModelInfo, limits: SamplingLimits, needs: Requirements | None = None
) -> _R:
    """``params`` within ``limits`` for ``model``: itself when nothing changes, else a clamped copy.

    ``needs`` is ``requirements(params)`` when the caller has it already.
    Raises :class:`LimitExceeded`.
    """
    count = len(params.messages)
    if count > limits.max_messages:
        raise LimitExceeded("messages", f"{count} messages exceed this host's limit of {limits.max_messages}")
    if needs is None:
        needs = requirements(params)
    if needs.tools:
        rounds = sum(
            1
            for m in params.messages
            if m.role == "assistant" and any(isinstance(b, ToolUseContent) for b in m.blocks())
        )
        if rounds > limits.max_tool_rounds:
            raise LimitExceeded(
                "messages",
                f"the conversation has {rounds} tool rounds, more than this host's "
                f"tool-loop limit of {limits.max_tool_rounds}",
            )
    context_left = model.context_tokens - needs.input_tokens
    bound = min(limits.max_tokens, context_left)
    if params.max_tokens <= bound:
        return params
    if limits.over_max_tokens == "refuse":
        why = (
            f"this host's limit of {limits.max_tokens}"
            if bound == limits.max_tokens
            else f"the {context_left} tokens that model {model.id!r} has left after the prompt"
        )
        raise LimitExceeded("maxTokens", f"maxTokens {params.max_tokens} exceeds {why}")
    return params.model_copy(update={"max_tokens": bound})


def check_request(
    params: _R,
    model: ModelInfo,
    limits: SamplingLimits | None = None,
    needs: Requirements | None = None,
) -> _R:
    """Deprecated: what :meth:`ProviderRegistry.plan` does for a chosen model.

    Kept for one release. Refuses an empty or zero-token request and a model
    that cannot serve it, then applies :func:`bound_request`.
    """
    warnings.warn(
        "providers.check_request is deprecated; ProviderRegistry.plan chooses and bounds a request",
        DeprecationWarning,
        stacklevel=2,
    )
    if not params.messages:
        raise UnsupportedRequest("the sampling request has no messages")
    if params.max_tokens < 1:
        raise UnsupportedRequest(f"maxTokens must be at least 1 (got {params.max_tokens})")
    if needs is None:
        needs = requirements(params)
    unmet = needs.unmet_by(model)
    if unmet:
        raise UnsupportedRequest(f"model {model.id!r} {' and '.join(unmet)}")
    return bound_request(params, model, limits or SamplingLimits(), needs)
