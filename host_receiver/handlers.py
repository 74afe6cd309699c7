"""The sampling and elicitation handlers a host plugs into the receiver.

Sampling: before a task exists, the router plans the request (chooses the
model and bounds the request by the host's :class:`SamplingLimits`: too big
is -32602 naming the field; a lowered ``maxTokens`` is written to the audit
log then, once, and shown to the person) -> the person reviews the request (approve,
edit, refuse; edits are planned again) -> the provider generates, reporting
progress when someone watches it (the requestor sent a progress token, or the
host has an observer; otherwise the call is not streamed) -> the person
reviews the result (send, edit, refuse). A refusal at
either stage is JSON-RPC error -1; a provider failure is -32603 with the
provider's safe message.

Elicitation: a form is shown with its defaults and re-shown with the problems
of an invalid answer until it is valid (or the person gives up); a URL is
shown with its domain and warnings and opened in the system browser only
after consent, never fetched by the host. At most ``max_waiting`` forms and
links of one server wait for a person at once; one more is refused at once
with -32600 saying so (an automatic policy asks nobody and is not counted).

While a hook waits for the person, the task's ``statusMessage`` says so.

:func:`open_receiver` is the one-call default: a receiver with both services,
sampling through the configured providers.

Deprecated until 0.3 (docs/changelog.md): a 0.1 router, with ``choose``
(returning a provider and a model) and no ``plan``, still works: its choice
goes through the one limits check (``providers.bound_request``, default
:class:`~providers.SamplingLimits`), with a ``DeprecationWarning``.

Fixed caps (docs/limits.md): ``STATUS_REFRESH``.
"""

from __future__ import annotations

import functools
import warnings
import webbrowser
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import anyio

from host_receiver import telemetry
from host_receiver.approval import (
    DEFAULT_MAX_WAITING,
    Approve,
    AutoApprove,
    DeclineAll,
    DenyAll,
    ElicitationUI,
    FillDefaults,
    FormView,
    Refuse,
    SamplingApprover,
    SamplingRequestView,
    SamplingResultView,
    Send,
    UrlView,
    too_many_waiting,
    url_warnings,
)
from host_receiver.elicitation import parse_form_schema
from host_receiver.errors import (
    INTERNAL_ERROR,
    USER_REJECTED,
    LimitExceeded,
    ProviderError,
    RpcError,
    invalid_params,
)
from host_receiver.protocol.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    SamplingRequest,
)
from host_receiver.receiver import Receiver, ReceiverConfig, _audit
from host_receiver.receiver.work import ElicitationWork, SamplingWork, WorkContext
from host_receiver.sampling import limit_error
from providers import SamplingLimits, SamplingPlan, SamplingProgress, bound_request, build_registry

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
        with telemetry.current().person("approval", _asks_person(self.approver)) as wait:
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
        with telemetry.current().person("review", _asks_person(self.approver)) as wait:
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


#: The ready-made policies: they decide without asking anyone.
_AUTOMATIC = (AutoApprove, DenyAll, FillDefaults, DeclineAll)


def _asks_person(hook: object) -> bool:
    """Whether ``hook`` (an approver or an elicitation UI) may ask a person: not when it is one
    of the ready-made policies, or wraps one (a policy's ``inner``, at any depth). Only a
    person's wait is a ``person`` span (docs/observability.md)."""
    while not isinstance(hook, _AUTOMATIC):
        hook = getattr(hook, "inner", None)
        if hook is None:
            return True
    return False


#: A person's answer to a form or a URL, as the outcome of their span.
_ANSWERED = {"accept": "approved", "decline": "declined", "cancel": "cancelled"}


def _decided(decision: Approve | Send | Refuse) -> str:
    """The outcome of a review: refused, edited (anything changed) or approved."""
    if isinstance(decision, Refuse):
        return "refused"
    if isinstance(decision, Send):
        edits: tuple[object, ...] = (decision.result,)
    else:
        edits = (decision.messages, decision.system_prompt, decision.model, decision.max_tokens)
    return "edited" if any(edit is not None for edit in edits) else "approved"


def open_in_browser(url: str) -> bool:
    """Open ``url`` in the system browser; False when none could be started."""
    return webbrowser.open(url, new=2)


class ElicitationService:
    """An elicitation handler: forms checked field by field, URLs opened only after consent."""

    def __init__(
        self,
        ui: ElicitationUI,
        *,
        opener: Callable[[str], bool] = open_in_browser,
        max_attempts: int = 5,
        max_waiting: int | None = DEFAULT_MAX_WAITING,
    ) -> None:
        self.ui = ui
        self.opener = opener
        self.max_attempts = max_attempts
        self.max_waiting = max_waiting
        self._waiting: dict[str, int] = {}

    def accept(self, params: ElicitRequestParams, server: str) -> ElicitationWork:
        """The work for ``params``: the receiver has checked the mode, the schema and the URL."""
        return functools.partial(self.__call__, params)

    async def __call__(self, params: ElicitRequestParams, context: WorkContext) -> ElicitResult:
        server = context.requestor_name
        if self.max_waiting is None or not _asks_person(self.ui):
            return await self._ask(params, context)
        waiting = self._waiting.get(server, 0)
        if waiting >= self.max_waiting:
            raise too_many_waiting(server, "forms and links", self.max_waiting)
        self._waiting[server] = waiting + 1
        try:
            return await self._ask(params, context)
        finally:
            self._waiting[server] -= 1
            if not self._waiting[server]:
                del self._waiting[server]

    async def _ask(self, params: ElicitRequestParams, context: WorkContext) -> ElicitResult:
        if isinstance(params, ElicitRequestFormParams):
            return await self._form(params, context)
        view = UrlView(
            server=context.requestor_name,
            task_id=context.task_id,
            message=params.message,
            url=params.url,
            elicitation_id=params.elicitation_id,
            warnings=url_warnings(params.url, params.message),
        )
        await context.set_status_message("Waiting for the user to consent to opening a URL")
        with telemetry.current().person("url_consent", _asks_person(self.ui)) as wait:
            answer = await self.ui.consent_url(view)
            wait.chose(_ANSWERED.get(answer, answer))
        if answer == "accept":
            await anyio.to_thread.run_sync(self.opener, params.url)
        return ElicitResult(action=answer)

    async def _form(self, params: ElicitRequestFormParams, context: WorkContext) -> ElicitResult:
        schema = parse_form_schema(params.requested_schema)
        values = schema.defaults()
        problems: dict[str, str] = {}
        await context.set_status_message("Waiting for the user to fill in a form")
        for _ in range(self.max_attempts):
            view = FormView(
                server=context.requestor_name,
                task_id=context.task_id,
                message=params.message,
                schema=schema,
                values=values,
                problems=problems,
            )
            with telemetry.current().person("form", _asks_person(self.ui)) as wait:
                answer = await self.ui.fill_form(view)
                wait.chose(_ANSWERED.get(answer.action, answer.action))
            if answer.action != "accept":
                return ElicitResult(action=answer.action)
            content = dict(answer.content or {})
            problems = schema.problems(content)
            if not problems:
                return ElicitResult(action="accept", content=content)
            values = {**values, **content}
        return ElicitResult(action="cancel")


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
