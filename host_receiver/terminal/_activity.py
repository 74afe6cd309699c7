"""What the models are doing right now, for the live progress line.

Rules:

- A :class:`Generation` lives exactly as long as one provider call: it starts
  when the provider is called (after approval) and ends when it returns,
  fails or is cancelled. Its tokens come from the provider's progress reports.
- The provider does not know which server or task it works for, so
  :func:`terminal_sampling` sets that in a context variable around each
  sampling request, and the watched provider reads it (the provider call runs
  in the same context as the request's handler).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field

from host_receiver.approval import SamplingApprover
from host_receiver.handlers import ModelRouter, SamplingService
from host_receiver.protocol.types import CreateMessageRequestParams, CreateMessageResult
from host_receiver.work import SamplingHandler, WorkContext
from providers import ModelInfo, ProgressSink, Provider, SamplingProgress

#: (server, task id) of the sampling request being handled in this context.
_REQUEST: ContextVar[tuple[str, str | None] | None] = ContextVar(
    "host_receiver_terminal_request", default=None
)


@dataclass(eq=False, slots=True)
class Generation:
    """One model call in progress."""

    server: str
    task_id: str | None
    model: str
    max_tokens: int
    started: float
    tokens: int = 0


@dataclass(slots=True)
class Activity:
    """The generations running now, with a listener told of each start and end."""

    clock: Callable[[], float] = time.monotonic
    running: list[Generation] = field(default_factory=list)
    on_change: Callable[[], None] = lambda: None

    def start(self, server: str, task_id: str | None, model: str, max_tokens: int) -> Generation:
        generation = Generation(server, task_id, model, max_tokens, self.clock())
        self.running.append(generation)
        self.on_change()
        return generation

    def end(self, generation: Generation) -> None:
        if generation in self.running:
            self.running.remove(generation)
        self.on_change()

    def describe(self) -> str | None:
        """One line about every running generation, or None when nothing runs."""
        if not self.running:
            return None
        now = self.clock()
        parts = [
            f"{g.server} · {task_label(g.task_id)} generating with {g.model}: "
            f"{g.tokens}/{g.max_tokens} tokens, {now - g.started:.1f} s"
            for g in self.running
        ]
        return "⏳ " + " | ".join(parts)


def task_label(task_id: str | None) -> str:
    """A task id short enough for a prompt (its first 8 characters)."""
    if task_id is None:
        return "no task"
    return f"task {task_id[:8]}" + ("…" if len(task_id) > 8 else "")


class _WatchedProvider:
    """A provider whose calls show up in an :class:`Activity`."""

    def __init__(self, inner: Provider, activity: Activity) -> None:
        self.inner = inner
        self.activity = activity

    @property
    def name(self) -> str:
        return self.inner.name

    def models(self) -> Sequence[ModelInfo]:
        return self.inner.models()

    async def sample(
        self,
        params: CreateMessageRequestParams,
        model: ModelInfo,
        progress: ProgressSink | None = None,
    ) -> CreateMessageResult:
        request = _REQUEST.get()
        if request is None:
            return await self.inner.sample(params, model, progress)
        generation = self.activity.start(request[0], request[1], model.id, params.max_tokens)

        async def report(update: SamplingProgress) -> None:
            generation.tokens = update.output_tokens
            if progress is not None:
                await progress(update)

        try:
            return await self.inner.sample(params, model, report)
        finally:
            self.activity.end(generation)

    async def aclose(self) -> None:
        """The router's owner closes the real provider."""


class _WatchedRouter:
    """A model router whose providers report to an :class:`Activity`."""

    def __init__(self, inner: ModelRouter, activity: Activity) -> None:
        self.inner = inner
        self.activity = activity

    def choose(
        self, params: CreateMessageRequestParams, server: str, model: str | None = None
    ) -> tuple[Provider, ModelInfo]:
        provider, chosen = self.inner.choose(params, server, model)
        return _WatchedProvider(provider, self.activity), chosen

    def allowed_models(self, server: str) -> Sequence[str]:
        return self.inner.allowed_models(server)


def terminal_sampling(router: ModelRouter, approver: SamplingApprover, activity: Activity) -> SamplingHandler:
    """A :class:`SamplingService` whose model calls are shown in ``activity``."""
    service = SamplingService(_WatchedRouter(router, activity), approver)

    async def handle(params: CreateMessageRequestParams, context: WorkContext) -> CreateMessageResult:
        token = _REQUEST.set((context.requestor_name, context.task_id))
        try:
            return await service(params, context)
        finally:
            _REQUEST.reset(token)

    return handle
