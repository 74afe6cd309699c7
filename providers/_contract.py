"""The contract between the sampling layer and an LLM backend.

Rules:

* A :class:`Provider` turns a validated :class:`SamplingRequest` into a
  :class:`CreateMessageResult` for one model of its own catalogue. It knows nothing
  of tasks, sessions or servers.
* The result's ``model`` is the chosen :attr:`ModelInfo.id`; its ``role`` is
  ``assistant``.
* Cancellation is structured: the caller cancels the enclosing anyio scope,
  and the provider releases everything it holds (an HTTP request is closed)
  before the cancellation propagates. Providers never swallow cancellation.
* Failures are raised as :class:`~host_receiver.errors.ProviderError` with a message that
  is safe to show.
* Progress is optional: when a sink is given, the provider awaits it with a
  :class:`SamplingProgress` whenever it has produced more output, counting
  the characters so far. A slow sink slows the provider down (natural
  backpressure). The sink raises only :class:`~host_receiver.errors.ProviderError`, to
  stop the call (the reply size cap of :mod:`providers._plan`); the provider
  lets it through, closing what it holds.
* Optional: a provider whose backend is one vendor's names it in ``vendor``
  (``"openai"``, ``"anthropic"``; model choice maps hints such as
  ``claude-*`` to it), and one that leaves out fields its API does not take
  says which in ``dropped(params)`` (:class:`LeavesOut`; the plan, the audit
  line and the approval view show them).
* Time and size are bounded for every provider alike by the
  :class:`~providers.SamplingPlan` that calls it (:mod:`providers._plan`):
  a provider need not bound them itself. A provider that reads replies off
  the network is a :class:`~providers.TakesLimits` (defined beside the
  limits it takes, in :mod:`providers._limits`, which builds on this module:
  this one imports nothing of the package): the plan calls its
  ``sample_within`` with the call's limits, and it reads no more than their
  ``max_reply_bytes`` of one reply or one streamed event, so that a reply is
  not buffered whole before the plan can count it.

Fixed caps (docs/limits.md): ``PROGRESS_TEXT_LIMIT``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from host_receiver.protocol.types import CreateMessageResult, SamplingRequest

__all__ = [
    "AUDIO_VENDORS",
    "LeavesOut",
    "ListsModels",
    "ModelInfo",
    "ProgressSink",
    "Provider",
    "SamplingProgress",
    "listed_model",
]


@dataclass(frozen=True)
class ModelInfo:
    """One catalogue entry: a model, who serves it, how it rates, what it accepts.

    Ratings are in 0..1 and "higher is better" for the server's priorities:
    ``cost`` is cheapness (1 = cheapest), ``speed`` is 1 for the fastest, and
    ``intelligence`` is 1 for the most capable.
    """

    id: str
    provider: str
    cost: float = 0.5
    speed: float = 0.5
    intelligence: float = 0.5
    tools: bool = True
    images: bool = True
    audio: bool = False
    context_tokens: int = 128_000

    def __post_init__(self) -> None:
        if not self.id:
            raise ValueError("a model needs a non-empty id")
        for rating in ("cost", "speed", "intelligence"):
            value = getattr(self, rating)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"model {self.id!r}: {rating} must be between 0 and 1")
        if self.context_tokens < 1:
            raise ValueError(f"model {self.id!r}: context_tokens must be positive")


@dataclass(frozen=True)
class SamplingProgress:
    """What a provider has produced so far.

    ``output_tokens`` is the backend's count when it reports one, otherwise an
    estimate (one per streamed piece of output). ``text`` is the text so far,
    keeping only its last :data:`PROGRESS_TEXT_LIMIT` characters.
    ``characters`` is the length of everything generated so far (text, refusal,
    tool-call arguments), which the reply size cap is checked against (0: the
    provider does not count; the cap then applies to the result).
    """

    output_tokens: int
    text: str
    characters: int = 0


#: The most characters of generated text a :class:`SamplingProgress` carries.
PROGRESS_TEXT_LIMIT = 2000

ProgressSink = Callable[[SamplingProgress], Awaitable[None]]


def progress_text(text: str) -> str:
    """The tail of ``text`` that fits in a :class:`SamplingProgress`."""
    if len(text) <= PROGRESS_TEXT_LIMIT:
        return text
    return "…" + text[-(PROGRESS_TEXT_LIMIT - 1) :]


def progress_tail(parts: list[str]) -> str:
    """The tail of the text made of ``parts`` that fits in a :class:`SamplingProgress`, built without
    joining the whole text."""
    tail: list[str] = []
    size = 0
    for part in reversed(parts):
        tail.append(part)
        size += len(part)
        if size >= PROGRESS_TEXT_LIMIT:
            break
    return progress_text("".join(reversed(tail)))


@runtime_checkable
class Provider(Protocol):
    """An LLM backend: a named catalogue of models and the call that samples one."""

    @property
    def name(self) -> str:
        """The configured provider entry's name (``ModelInfo.provider``)."""
        ...

    def models(self) -> Sequence[ModelInfo]:
        """The catalogue, in preference order for ties."""
        ...

    async def sample(
        self,
        params: SamplingRequest,
        model: ModelInfo,
        progress: ProgressSink | None = None,
    ) -> CreateMessageResult:
        """Sample one assistant message from ``model``."""
        ...

    async def aclose(self) -> None:
        """Release connections; the provider is not used afterwards."""
        ...


#: The vendors whose models take audio (a model listed for them without a catalogue entry accepts it).
AUDIO_VENDORS = frozenset({"gemini"})


def listed_model(model_id: str, provider: str, vendor: str = "") -> ModelInfo:
    """A model known only by its id (listed by its API, or named by ``--model``).

    Neutral ratings (0.5) and permissive capabilities: tools and images, audio
    where the vendor's API takes it (:data:`AUDIO_VENDORS`), a 128k context.
    """
    return ModelInfo(id=model_id, provider=provider, audio=vendor in AUDIO_VENDORS)


@runtime_checkable
class ListsModels(Protocol):
    """A provider whose API lists its models (the catalogue of an entry that lists none)."""

    @property
    def name(self) -> str: ...

    async def list_models(self) -> list[str]:
        """The model ids the API lists for this key."""
        ...


@runtime_checkable
class LeavesOut(Protocol):
    """A provider that leaves out request fields its backend does not take."""

    def dropped(self, params: SamplingRequest) -> tuple[str, ...]:
        """The wire names of the fields of ``params`` that will not be sent."""
        ...
