"""The sampling handler: plan the request, ask the person, generate, ask again, answer.

Before a task exists, the router plans the request (chooses the model and
bounds the request by the host's :class:`SamplingLimits`: too big is -32602
naming the field; a lowered ``maxTokens`` is written to the audit log then,
once, and shown to the person) -> the person reviews the request (approve,
edit, refuse; edits are planned again) -> the provider generates, reporting
progress when someone watches it (the requestor sent a progress token, or the
host has an observer; otherwise the call is not streamed) -> the person
reviews the result (send, edit, refuse). A refusal at either stage is
JSON-RPC error -1; a provider failure is -32603 with the provider's safe
message. While the person is asked, the task's ``statusMessage`` says so.

Deprecated until 0.3 (docs/changelog.md): a 0.1 router, with ``choose``
(returning a provider and a model) and no ``plan``, still works: its choice
goes through the one limits check (``providers.bound_request``, default
:class:`~providers.SamplingLimits`), with a ``DeprecationWarning``.

Fixed caps (docs/limits.md): ``STATUS_REFRESH``.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import anyio

from host_receiver import telemetry
from host_receiver.errors import (
    INTERNAL_ERROR,
    USER_REJECTED,
    LimitExceeded,
    ProviderError,
    RpcError,
    invalid_params,
)
from host_receiver.people.approval import (
    Approve,
    Refuse,
    SamplingApprover,
    SamplingRequestView,
    SamplingResultView,
    Send,
    asks_person,
)
from host_receiver.protocol.sampling_rules import limit_error
from host_receiver.protocol.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    SamplingRequest,
)
from host_receiver.receiver import _audit
from host_receiver.receiver.work import SamplingWork, WorkContext
from providers import SamplingLimits, SamplingPlan, SamplingProgress, bound_request

#: Seconds between statusMessage updates while a model generates.
STATUS_REFRESH = 0.5


class ModelRouter(Protocol):
    """Picks the provider and model that serve a request for a server, and bounds the request."""

    def plan(self, params: SamplingRequest, server: str, model: str | None = None) -> SamplingPlan:
        """The plan for ``params`` (``model`` forces one, if the server may use it).

        Raises ``ProviderError`` (``LimitExceeded`` for a request over the limits).
        """
        ...

    def allowed_models(self, server: str) -> Sequence[str]:
        """The model ids ``server`` may use."""
        ...


@dataclass(eq=False, slots=True)
class Generation:
    """One model call in progress: who asked, which model, tokens so far."""

    server: str
    task_id: str | None
    model: str
    max_tokens: int
    tokens: int = 0


class GenerationObserver(Protocol):
    """Told when a model call starts, progresses and ends (for a host's progress display)."""

    def generation_started(self, generation: Generation) -> None: ...

    def generation_progressed(self, generation: Generation) -> None: ...

    def generation_ended(self, generation: Generation) -> None: ...


class SamplingService:
    """A sampling handler: approval, model choice, provider call, result review."""

    def __init__(
        self, router: ModelRouter, approver: SamplingApprover, *, observer: GenerationObserver | None = None
    ) -> None:
        if not hasattr(router, "plan") and hasattr(router, "choose"):
            warnings.warn(
                "a ModelRouter with choose() and no plan() is deprecated and goes in host-receiver 0.3: "
                "implement plan(params, server, model) -> SamplingPlan; see docs/changelog.md",
                DeprecationWarning,
                stacklevel=2,
            )
            router = _ChoosingRouter(router)
        self.router = router
        self.approver = approver
        self.observer = observer

    def accept(self, params: CreateMessageRequestParams, server: str) -> SamplingWork:
        """Plan ``params`` now (before a task exists); the work reviews, samples, reviews.

        The plan (provider, model, why, fields not sent) and a lowered
        ``maxTokens`` are audited here, where they are decided: once per
        request, whether or not its work ever starts.
        """
        plan = self._plan(params, server, None)
        _audit.sampling_planned(server, plan.provider.name, plan.model.id, plan.reason, plan.dropped)
        if plan.clamped:
            requested, granted = plan.requested_max_tokens, plan.params.max_tokens
            _audit.max_tokens_clamped(server, plan.model.id, requested, granted)
        return functools.partial(self._serve, plan)

    async def __call__(self, params: CreateMessageRequestParams, context: WorkContext) -> CreateMessageResult:
        """Accept and serve ``params`` in one step."""
        return await self.accept(params, context.requestor_name)(context)

    async def _serve(self, plan: SamplingPlan, context: WorkContext) -> CreateMessageResult:
        server = context.requestor_name
        view = SamplingRequestView(
            server=server,
            task_id=context.task_id,
            params=plan.params,
            model=plan.model.id,
            allowed_models=tuple(self.router.allowed_models(server)),
            requested_max_tokens=plan.requested_max_tokens,
            provider=plan.provider.name,
            reason=plan.reason,
            not_sent=plan.dropped,
        )
        await context.set_status_message(
            f"Waiting for the user to approve the request (model {plan.model.id})"
        )
        with telemetry.current().person("approval", asks_person(self.approver)) as wait:
            decision = await self.approver.review_request(view)
            wait.chose(_decided(decision))
        if isinstance(decision, Refuse):
            raise RpcError(USER_REJECTED, decision.reason)
        edits: dict[str, object] = {}
        if decision.messages is not None:
            edits["messages"] = decision.messages
        if decision.system_prompt is not None:
            edits["system_prompt"] = decision.system_prompt
        if decision.max_tokens is not None:
            if not 0 < decision.max_tokens <= plan.requested_max_tokens:
                raise invalid_params("an edited maxTokens must be positive and no higher than requested")
            edits["max_tokens"] = decision.max_tokens
        if edits or (decision.model is not None and decision.model != plan.model.id):
            edited = plan.params.model_copy(update=edits) if edits else plan.params
            if "max_tokens" not in edits:
                edited = edited.model_copy(update={"max_tokens": plan.requested_max_tokens})
            plan = self._plan(edited, server, decision.model or plan.model.id)
        params, model = plan.params, plan.model

        await context.set_status_message(f"Generating with {model.id}")
        generation = Generation(server, context.task_id, model.id, params.max_tokens)
        observer = self.observer
        status_shown = anyio.current_time()

        async def progress(update: SamplingProgress) -> None:
            nonlocal status_shown
            generation.tokens = update.output_tokens
            if observer is not None:
                observer.generation_progressed(generation)
            message = f"Generating with {model.id}: {update.output_tokens} tokens"
            await context.report_progress(update.output_tokens, params.max_tokens, message)
            # The statusMessage is for pollers: refresh it at most every STATUS_REFRESH
            # seconds rather than storing a new task record for every streamed chunk.
            now = anyio.current_time()
            if now - status_shown >= STATUS_REFRESH:
                status_shown = now
                await context.set_status_message(message)

        if observer is not None:
            observer.generation_started(generation)
        # Progress is asked for by the requestor (a progress token) or shown by the host (an
        # observer). With neither, the call is not streamed: a stream costs the provider about
        # 10 % more CPU per call (docs/performance.md), and pollers see "Generating with ..."
        # without a token count.
        watched = context.progress_token is not None or observer is not None
        try:
            result = await plan.sample(progress if watched else None)
        except ProviderError as exc:
            raise RpcError(INTERNAL_ERROR, f"The model call failed: {exc}") from None
        finally:
            if observer is not None:
                observer.generation_ended(generation)

        await context.set_status_message("Waiting for the user to review the result")
        with telemetry.current().person("review", asks_person(self.approver)) as wait:
            verdict = await self.approver.review_result(
                SamplingResultView(server=server, task_id=context.task_id, params=params, result=result)
            )
            wait.chose(_decided(verdict))
        if isinstance(verdict, Refuse):
            raise RpcError(USER_REJECTED, verdict.reason)
        return verdict.result if verdict.result is not None else result

    def _plan(self, params: SamplingRequest, server: str, model: str | None) -> SamplingPlan:
        """The router's plan; a request it cannot serve is -32602 (naming the field of a limit)."""
        try:
            return self.router.plan(params, server, model)
        except LimitExceeded as exc:
            raise limit_error(exc) from None
        except ProviderError as exc:
            raise invalid_params(str(exc)) from None


class _ChoosingRouter:
    """A 0.1 router (``choose`` returns a provider and a model) as a :class:`ModelRouter` (goes in 0.3).

    Its choice is bounded by the one limits check, with the default :class:`SamplingLimits`.
    """

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.limits = SamplingLimits()

    def plan(self, params: SamplingRequest, server: str, model: str | None = None) -> SamplingPlan:
        provider, chosen = self._inner.choose(params, server, model)
        bounded = bound_request(params, chosen, self.limits)
        return SamplingPlan(provider, chosen, bounded, params.max_tokens, self.limits)

    def allowed_models(self, server: str) -> Sequence[str]:
        return tuple(self._inner.allowed_models(server))


def _decided(decision: Approve | Send | Refuse) -> str:
    """The outcome of a review: refused, edited (anything changed) or approved."""
    if isinstance(decision, Refuse):
        return "refused"
    if isinstance(decision, Send):
        edits: tuple[object, ...] = (decision.result,)
    else:
        edits = (decision.messages, decision.system_prompt, decision.model, decision.max_tokens)
    return "approved" if edits.count(None) == len(edits) else "edited"
