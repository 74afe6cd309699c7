"""A sampling request ready to sample, and the one place a provider call is bounded in time and size.

Rules:

* :class:`SamplingPlan` is what :meth:`ProviderRegistry.plan` returns: the
  provider and model chosen, the params within the limits, what was asked,
  and the :class:`SamplingLimits` it was planned under.
* :meth:`SamplingPlan.sample` is how every provider is called, so what it
  bounds holds for all of them alike: one total ``deadline`` for the whole
  call (the provider's own retries included; on expiry the call is
  cancelled, which closes its HTTP request, and fails naming the deadline),
  and ``max_reply_chars``: a progress update counting more characters stops
  the call at once (the sink raises into the provider, which closes its
  stream), and a result longer than that is refused too (for providers that
  do not count, and for replies that were not streamed). A provider that
  reads replies off the network (:class:`~providers.TakesLimits`) is called
  with the plan's limits as an argument (``sample_within``) and reads no
  more than their ``max_reply_bytes`` of a reply, or of one streamed event
  (a hostile backend cannot make the host buffer more), failing with
  :class:`ReplyTooLong` saying so.
* Every failure is a :class:`ProviderError` whose message names the
  provider and what happened. An exception of another kind from a provider
  (a bug) is logged with its traceback and becomes a ProviderError naming its
  type: the task fails with a diagnostic, never with a bare internal error.
"""

from __future__ import annotations

import json
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import cast
from urllib.parse import urlsplit

import anyio

from host_receiver.errors import ProviderError, ReplyTooLong
from host_receiver.protocol.types import (
    AudioContent,
    CreateMessageResult,
    ImageContent,
    SamplingRequest,
    TextContent,
    ToolUseContent,
)
from host_receiver.sanitize import safe_logger
from host_receiver.telemetry import ChatCall, current

from ._contract import ModelInfo, ProgressSink, Provider, SamplingProgress
from ._limits import SamplingLimits, TakesLimits

__all__ = ["SamplingPlan", "reply_size"]

log = safe_logger("providers.plan")

_DEFAULT_LIMITS = SamplingLimits()


@dataclass(frozen=True, slots=True)
class SamplingPlan:
    """A request ready to sample: the provider and model chosen for it, its params within the limits.

    ``params.max_tokens`` is what may be generated; ``requested_max_tokens``
    is what the server asked for (more, when the host clamped it); ``limits``
    bound the call (its deadline and reply size). ``reason`` says why this
    model was chosen, ``dropped`` which fields of ``params`` its provider will
    not send (its API does not take them).
    """

    provider: Provider
    model: ModelInfo
    params: SamplingRequest
    requested_max_tokens: int
    limits: SamplingLimits = _DEFAULT_LIMITS
    reason: str = ""
    dropped: tuple[str, ...] = ()

    @property
    def clamped(self) -> bool:
        """Whether ``maxTokens`` was lowered to fit the limits."""
        return self.params.max_tokens < self.requested_max_tokens

    async def sample(self, progress: ProgressSink | None = None) -> CreateMessageResult:
        """Run the plan: the provider samples ``params`` from ``model``, within the deadline and the cap."""
        limits = self.limits
        sink = None if progress is None else _capped(progress, limits.max_reply_chars)
        who = f"provider {self.provider.name!r}, model {self.model.id!r}"
        provider = self.provider
        try:
            with self._traced() as call, anyio.fail_after(limits.deadline):
                if hasattr(provider, "sample_within"):  # a TakesLimits (isinstance costs 8 to 20 µs)
                    result = await cast(TakesLimits, provider).sample_within(
                        self.params, self.model, limits, sink
                    )
                else:
                    result = await provider.sample(self.params, self.model, sink)
                call.result(result)
        except TimeoutError:
            raise ProviderError(
                f"{who}: no complete reply within {limits.deadline:g} s "
                "(this host's deadline for one sampling call)"
            ) from None
        except ProviderError:
            raise
        except Exception as exc:
            log.error("%s failed unexpectedly", who, exc_info=exc)
            raise ProviderError(f"{who}: the provider failed ({type(exc).__name__})") from None
        if reply_size(result) > limits.max_reply_chars:
            raise ProviderError(f"{who}: {ReplyTooLong(limits.max_reply_chars)}")
        return result

    def _traced(self) -> AbstractContextManager[ChatCall]:
        """The call's GenAI span: the provider's convention name and endpoint, the request's settings."""
        telemetry = current()
        if not telemetry.recording:  # the span's attributes are not even made
            return nullcontext(ChatCall(None))
        provider = self.provider
        address = urlsplit(getattr(provider, "base_url", None) or "")
        return telemetry.chat(
            vendor=getattr(provider, "vendor", None),
            model=self.model.id,
            request=self.params,
            address=address.hostname,
            port=address.port,
        )


def _capped(progress: ProgressSink, limit: int) -> ProgressSink:
    """``progress`` behind a check of the reply's size: over ``limit``, the sink raises."""

    async def sink(update: SamplingProgress) -> None:
        if update.characters > limit:
            raise ReplyTooLong(limit)
        await progress(update)

    return sink


def reply_size(result: CreateMessageResult) -> int:
    """The characters of a result: its text, tool-call arguments (as JSON) and media data."""
    blocks = result.content if isinstance(result.content, list) else [result.content]
    size = 0
    for block in blocks:
        if isinstance(block, TextContent):
            size += len(block.text)
        elif isinstance(block, ToolUseContent):
            size += len(block.name) + len(json.dumps(block.input, ensure_ascii=False))
        elif isinstance(block, ImageContent | AudioContent):
            size += len(block.data)
    return size
