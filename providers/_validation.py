"""Checks made before any provider call: bounds, and what the chosen model accepts.

Rules (the protocol checks, such as tool_use/tool_result pairing, belong to the
sampling layer and are not repeated here):

* at least one message, and at most ``ProviderLimits.max_messages``;
* ``maxTokens`` at least 1; above ``ProviderLimits.max_tokens``, or above what
  the model's context leaves after the estimated prompt, it is lowered (the
  spec lets the client sample fewer tokens than requested);
* tools, images and audio only for a model that accepts them, and a prompt
  that fits its context.

Violations raise :class:`UnsupportedRequest` (suggested mapping: -32602).
"""

from __future__ import annotations

from dataclasses import dataclass

from host_receiver.protocol.types import CreateMessageRequestParams

from ._contract import ModelInfo
from ._errors import UnsupportedRequest
from ._selection import Requirements, requirements

__all__ = ["ProviderLimits", "check_request"]


@dataclass(frozen=True)
class ProviderLimits:
    """The configuration's bounds on what a provider is asked for.

    ``maxTokens`` above ``max_tokens`` is lowered to it (and to what the model's
    context leaves); more than ``max_messages`` messages is refused. Not to be
    confused with ``host_receiver.SamplingLimits``, the protocol-level bounds
    checked before a task exists.
    """

    max_tokens: int = 16_384
    max_messages: int = 200

    def __post_init__(self) -> None:
        if self.max_tokens < 1 or self.max_messages < 1:
            raise ValueError("sampling limits must be positive")


def check_request(
    params: CreateMessageRequestParams,
    model: ModelInfo,
    limits: ProviderLimits | None = None,
    needs: Requirements | None = None,
) -> CreateMessageRequestParams:
    """``params`` ready for ``model``: checked, with ``maxTokens`` within bounds.

    ``needs`` is ``requirements(params)`` when the caller has it already.
    Returns ``params`` itself when nothing had to change, else a copy.
    """
    limits = limits or ProviderLimits()
    count = len(params.messages)
    if count == 0:
        raise UnsupportedRequest("the sampling request has no messages")
    if count > limits.max_messages:
        raise UnsupportedRequest(
            f"the sampling request has {count} messages; this host accepts at most {limits.max_messages}"
        )
    if params.max_tokens < 1:
        raise UnsupportedRequest(f"maxTokens must be at least 1 (got {params.max_tokens})")
    if needs is None:
        needs = requirements(params)
    unmet = needs.unmet_by(model)
    if unmet:
        raise UnsupportedRequest(f"model {model.id!r} {' and '.join(unmet)}")
    bound = min(limits.max_tokens, model.context_tokens - needs.input_tokens)
    if params.max_tokens <= bound:
        return params
    return params.model_copy(update={"max_tokens": bound})
