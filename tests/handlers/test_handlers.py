"""The sampling and elicitation pipelines behind the receiver, with scripted people."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from host_receiver.errors import INTERNAL_ERROR, INVALID_PARAMS, USER_REJECTED, ProviderError
from host_receiver.handlers import ElicitationService, Generation, SamplingService, open_receiver
from host_receiver.people.approval import (
    Approve,
    AutoApprove,
    DeclineAll,
    DenyAll,
    FillDefaults,
    FormView,
    Refuse,
    RequestDecision,
    ResultDecision,
    SamplingRequestView,
    SamplingResultView,
    Send,
    UrlAnswer,
    UrlView,
)
from host_receiver.protocol.types import (
    CreateMessageResult,
    ElicitResult,
    SamplingRequest,
    TextContent,
)
from host_receiver.receiver import Receiver, ReceiverConfig
from host_receiver.receiver.work import PROGRESS_INTERVAL
from host_receiver.web import WebInbox
from providers import (
    EchoProvider,
    ModelInfo,
    ProgressSink,
    ProviderRegistry,
    SamplingLimits,
    SamplingPlan,
    SamplingProgress,
    bound_request,
)
from tests.receiver_harness import connect, form_params, sampling_params, settle

pytestmark = pytest.mark.anyio
SAMPLING = "sampling/createMessage"
ELICIT = "elicitation/create"


@dataclass
class RecordingProvider:
    """A provider plug-in that answers with what it was asked, and can fail or report progress."""

    name: str = "test"
    fail: str | None = None
    progress_steps: int = 0
    seen: list[tuple[SamplingRequest, str]] = field(default_factory=list)

    def models(self) -> Sequence[ModelInfo]:
        return [ModelInfo(id="small", provider=self.name), ModelInfo(id="large", provider=self.name)]

    async def sample(
        self, params: SamplingRequest, model: ModelInfo, progress: ProgressSink | None = None
    ) -> CreateMessageResult:
        self.seen.append((params, model.id))
        for step in range(1, self.progress_steps + 1):
            if progress is not None:
                await progress(SamplingProgress(output_tokens=step * 10, text="x" * step))
        if self.fail is not None:
            raise ProviderError(self.fail)
        text = f"system={params.system_prompt} max={params.max_tokens}"
        return CreateMessageResult(role="assistant", content=TextContent(text=text), model=model.id)

    async def aclose(self) -> None:
        return None


@dataclass
class Router:
    provider: RecordingProvider
    allowed: tuple[str, ...] = ("small", "large")

    limits: SamplingLimits = field(default_factory=SamplingLimits)

    def plan(self, params: SamplingRequest, server: str, model: str | None = None) -> SamplingPlan:
        wanted = model or "small"
        if wanted not in self.allowed:
            raise ProviderError(f"model {wanted!r} is not allowed for {server}")
        chosen = next(m for m in self.provider.models() if m.id == wanted)
        return SamplingPlan(
            self.provider, chosen, bound_request(params, chosen, self.limits), params.max_tokens
        )

    def allowed_models(self, server: str) -> Sequence[str]:
        return self.allowed


@dataclass
class ScriptedPerson:
    request: RequestDecision | None = None
    result: ResultDecision = field(default_factory=Send)
    views: list[Any] = field(default_factory=list)
    asked: anyio.Event = field(default_factory=anyio.Event)
    closed: int = 0

    async def review_request(self, view: SamplingRequestView) -> RequestDecision:
        self.views.append(view)
        self.asked.set()
        if self.request is None:  # wait for ever, like a person who walked away
            try:
                await anyio.sleep_forever()
            finally:
                self.closed += 1
        assert self.request is not None
        return self.request

    async def review_result(self, view: SamplingResultView) -> ResultDecision:
        self.views.append(view)
        return self.result


def sampling_receiver(
    person: Any, provider: RecordingProvider | None = None
) -> tuple[Receiver, RecordingProvider]:
    provider = provider or RecordingProvider()
    return Receiver(sampling=SamplingService(Router(provider), person)), provider


async def test_refusal_is_minus_one_directly_and_through_tasks_result() -> None:
    receiver, provider = sampling_receiver(DenyAll())
    async with connect(receiver) as server:
        direct = await server.error(SAMPLING, sampling_params())
        assert (direct.code, direct.message) == (USER_REJECTED, "User rejected sampling request")
        task_id = await server.create_task(SAMPLING, sampling_params())
        replay = await server.error("tasks/result", {"taskId": task_id})
        assert (replay.code, replay.message) == (USER_REJECTED, "User rejected sampling request")
        task = await server.request("tasks/get", {"taskId": task_id})
        assert task["status"] == "failed" and "User rejected" in task["statusMessage"]
    assert provider.seen == []


async def test_edits_reach_the_provider() -> None:
    person = ScriptedPerson(request=Approve(system_prompt="Be brief.", max_tokens=7, model="large"))
    receiver, provider = sampling_receiver(person)
    async with connect(receiver, "notes-server") as server:
        result = await server.request(SAMPLING, sampling_params(systemPrompt="Be verbose."))
    [(params, model)] = provider.seen
    assert (params.system_prompt, params.max_tokens, model) == ("Be brief.", 7, "large")
    assert result["content"]["text"] == "system=Be brief. max=7" and result["model"] == "large"
    request_view = person.views[0]
    assert isinstance(request_view, SamplingRequestView)
    assert (request_view.server, request_view.model, request_view.max_tokens) == ("notes-server", "small", 50)
    assert request_view.allowed_models == ("small", "large")


async def test_edits_cannot_raise_max_tokens_or_pick_a_forbidden_model() -> None:
    for decision in (Approve(max_tokens=500), Approve(model="huge")):
        receiver, provider = sampling_receiver(ScriptedPerson(request=decision))
        async with connect(receiver) as server:
            assert (await server.error(SAMPLING, sampling_params())).code == INVALID_PARAMS
        assert provider.seen == []


async def test_result_review_can_refuse_or_edit() -> None:
    receiver, _ = sampling_receiver(ScriptedPerson(request=Approve(), result=Refuse("Not this answer")))
    async with connect(receiver) as server:
        error = await server.error(SAMPLING, sampling_params())
        assert (error.code, error.message) == (USER_REJECTED, "Not this answer")
    edited = CreateMessageResult(role="assistant", content=TextContent(text="edited"), model="small")
    receiver, _ = sampling_receiver(ScriptedPerson(request=Approve(), result=Send(edited)))
    async with connect(receiver) as server:
        assert (await server.request(SAMPLING, sampling_params()))["content"]["text"] == "edited"


async def test_cancel_closes_a_pending_prompt_and_task_waits_with_a_status_message() -> None:
    person = ScriptedPerson()
    receiver, provider = sampling_receiver(person)
    async with connect(receiver) as server:
        task_id = await server.create_task(SAMPLING, sampling_params())
        await person.asked.wait()
        task = await server.request("tasks/get", {"taskId": task_id})
        assert task["status"] == "working"
        assert task["statusMessage"] == "Waiting for the user to approve the request (model small)"
        await server.request("tasks/cancel", {"taskId": task_id})
        await settle()
        assert person.closed == 1
    assert provider.seen == []


async def test_provider_progress_and_failure_reach_the_server() -> None:
    receiver, _ = sampling_receiver(
        AutoApprove(), RecordingProvider(fail="rate limited (429)", progress_steps=2)
    )
    async with connect(receiver) as server:
        params = {**sampling_params(), "_meta": {"progressToken": 7}}
        task_id = await server.create_task(SAMPLING, params)
        error = await server.error("tasks/result", {"taskId": task_id})
        assert error.code == INTERNAL_ERROR and "rate limited (429)" in error.message
        task = await server.request("tasks/get", {"taskId": task_id})
        assert task["status"] == "failed" and "rate limited (429)" in task["statusMessage"]
        progress = server.progress()
        # The second step came within PROGRESS_INTERVAL of the first: it is not sent.
        assert [(p["progress"], p["total"]) for p in progress] == [(10, 50)]
        assert progress[0]["message"] == "Generating with small: 10 tokens"


async def test_progress_to_the_server_is_throttled_rising_and_done_before_the_result() -> None:
    """A pushed request with a progressToken gets the provider's progress: about 10 a second at most."""
    registry = ProviderRegistry([EchoProvider(delay=0.3)])
    receiver = Receiver(sampling=SamplingService(registry, AutoApprove()))
    words = " ".join(f"w{n}" for n in range(60))  # 60 words over 0.3 s: one every 5 ms
    async with connect(receiver) as server:
        params = {**sampling_params(words, maxTokens=200), "_meta": {"progressToken": "p"}}
        started = anyio.current_time()
        result = await server.request(SAMPLING, params)
        took = anyio.current_time() - started
        sent_before_result = server.progress()
        await settle()
        progress = server.progress()
    assert result["stopReason"] == "endTurn"
    assert progress == sent_before_result  # nothing comes after the result
    values = [p["progress"] for p in progress]
    assert values == sorted(set(values)) and len(values) >= 2  # strictly rising
    assert len(values) <= took / PROGRESS_INTERVAL + 2  # ~10 a second, not one per word


# --- elicitation -----------------------------------------------------------------


@dataclass
class ScriptedFormFiller:
    answers: list[ElicitResult]
    url_answer: UrlAnswer = "accept"
    views: list[FormView | UrlView] = field(default_factory=list)

    async def fill_form(self, view: FormView) -> ElicitResult:
        self.views.append(view)
        return self.answers.pop(0)

    async def consent_url(self, view: UrlView) -> UrlAnswer:
        self.views.append(view)
        return self.url_answer


AGE_FORM = {
    "mode": "form",
    "message": "Tell us your age",
    "requestedSchema": {
        "type": "object",
        "properties": {"age": {"type": "integer", "minimum": 18, "default": 30}},
        "required": ["age"],
    },
}


async def test_forms_prefill_defaults_and_reprompt_invalid_answers() -> None:
    person = ScriptedFormFiller(
        [
            ElicitResult(action="accept", content={"age": 12}),
            ElicitResult(action="accept", content={"age": 40}),
        ]
    )
    receiver = Receiver(elicitation=ElicitationService(person))
    async with connect(receiver, "survey") as server:
        result = await server.request(ELICIT, AGE_FORM)
    assert result == {"action": "accept", "content": {"age": 40}}
    first, second = person.views
    assert isinstance(first, FormView) and isinstance(second, FormView)
    assert (first.server, first.values, first.problems) == ("survey", {"age": 30}, {})
    assert second.values == {"age": 12} and second.problems == {"age": "must be at least 18"}


async def test_a_person_who_never_answers_validly_gives_cancel() -> None:
    person = ScriptedFormFiller([ElicitResult(action="accept", content={"age": "old"})] * 2)
    receiver = Receiver(elicitation=ElicitationService(person, max_attempts=2))
    async with connect(receiver) as server:
        assert await server.request(ELICIT, AGE_FORM) == {"action": "cancel"}


async def test_declined_form_sends_no_content() -> None:
    person = ScriptedFormFiller([ElicitResult(action="decline", content={"age": 44})])
    receiver = Receiver(elicitation=ElicitationService(person))
    async with connect(receiver) as server:
        assert await server.request(ELICIT, AGE_FORM) == {"action": "decline"}


URL_PARAMS = {
    "mode": "url",
    "message": "Sign in at example.com",
    "url": "https://xn--exmple-cua.com/login",
    "elicitationId": "e-1",
}


@pytest.mark.parametrize(
    ("answer", "opened"), [("accept", ["https://xn--exmple-cua.com/login"]), ("decline", [])]
)
async def test_urls_open_only_after_consent(answer: UrlAnswer, opened: list[str]) -> None:
    person = ScriptedFormFiller([], url_answer=answer)
    calls: list[str] = []

    def opener(url: str) -> bool:
        calls.append(url)
        return True

    receiver = Receiver(elicitation=ElicitationService(person, opener=opener))
    async with connect(receiver) as server:
        task_id = await server.create_task(ELICIT, URL_PARAMS)
        assert (await server.request("tasks/result", {"taskId": task_id}))["action"] == answer
    assert calls == opened
    [view] = person.views
    assert isinstance(view, UrlView) and view.domain == "xn--exmple-cua.com"
    assert any("punycode" in w for w in view.warnings)
    assert any("names example.com" in w for w in view.warnings)


async def test_a_link_no_browser_could_open_is_logged_so_and_shown_to_copy(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The opener returns False (``webbrowser.open`` with no browser): a warning, never "opened"."""
    person = ScriptedFormFiller([], url_answer="accept")
    told: list[UrlView] = []

    async def link_not_opened(view: UrlView) -> None:
        told.append(view)

    person.link_not_opened = link_not_opened  # type: ignore[attr-defined]
    receiver = Receiver(elicitation=ElicitationService(person, opener=lambda url: False))
    with caplog.at_level(logging.INFO, logger="host_receiver.handlers"):
        async with connect(receiver) as server:
            assert (await server.request(ELICIT, URL_PARAMS))["action"] == "accept"
    assert [view.url for view in told] == [URL_PARAMS["url"]]
    [record] = [r for r in caplog.records if r.name == "host_receiver.handlers"]
    assert record.levelno == logging.WARNING and "no browser could be opened" in record.getMessage()


async def test_the_web_inboxs_link_is_never_logged_as_opened_by_the_host(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The inbox's opener opens nothing (the person's page does): the log does not claim it."""
    person = ScriptedFormFiller([], url_answer="accept")
    receiver = Receiver(elicitation=ElicitationService(person, opener=WebInbox.opens_nothing))
    with caplog.at_level(logging.INFO, logger="host_receiver.handlers"):
        async with connect(receiver) as server:
            assert (await server.request(ELICIT, URL_PARAMS))["action"] == "accept"
    [record] = [r for r in caplog.records if r.name == "host_receiver.handlers"]
    assert "the host opens nothing (their page does)" in record.getMessage()
    assert "opened the link" not in record.getMessage()


async def test_ready_policies() -> None:
    receiver = Receiver(elicitation=ElicitationService(FillDefaults()))
    async with connect(receiver) as server:
        assert await server.request(ELICIT, form_params()) == {"action": "accept", "content": {"name": "Ada"}}
        no_default = {**AGE_FORM, "requestedSchema": {"type": "object", "properties": {
            "age": {"type": "integer"}}, "required": ["age"]}}  # fmt: skip
        assert await server.request(ELICIT, no_default) == {"action": "decline"}
        assert await server.request(ELICIT, URL_PARAMS) == {"action": "decline"}
    receiver = Receiver(elicitation=ElicitationService(DeclineAll()))
    async with connect(receiver) as server:
        assert await server.request(ELICIT, form_params()) == {"action": "decline"}


@dataclass
class RecordingObserver:
    events: list[tuple[str, str, int]] = field(default_factory=list)

    def generation_started(self, generation: Generation) -> None:
        self.events.append(("started", generation.model, generation.tokens))

    def generation_progressed(self, generation: Generation) -> None:
        self.events.append(("progressed", generation.model, generation.tokens))

    def generation_ended(self, generation: Generation) -> None:
        self.events.append(("ended", generation.model, generation.tokens))


@pytest.mark.parametrize("fail", [None, "backend down"])
async def test_observer_sees_each_generation_start_progress_and_end(fail: str | None) -> None:
    observer = RecordingObserver()
    provider = RecordingProvider(progress_steps=2, fail=fail)
    receiver = Receiver(sampling=SamplingService(Router(provider), AutoApprove(), observer=observer))
    async with connect(receiver) as server:
        task_id = await server.create_task(SAMPLING, sampling_params())
        if fail is None:
            await server.request("tasks/result", {"taskId": task_id})
        else:
            assert fail in (await server.error("tasks/result", {"taskId": task_id})).message
    assert observer.events == [
        ("started", "small", 0),
        ("progressed", "small", 10),
        ("progressed", "small", 20),
        ("ended", "small", 20),
    ]


async def test_open_receiver_samples_through_the_configured_providers_behind_the_given_hooks(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOST_RECEIVER_CONFIG", str(tmp_path / "none.toml"))  # none: the offline echo provider
    person = ScriptedPerson(request=Approve())
    async with open_receiver(person, FillDefaults(), config=ReceiverConfig(page_size=3)) as receiver:
        assert receiver.config.page_size == 3
        async with connect(receiver) as server:
            sampled = await server.request(SAMPLING, sampling_params("hi there"))
            form = await server.request(ELICIT, form_params())
    assert (sampled["model"], sampled["content"]["text"]) == ("echo-offline", "echo: hi there")
    assert [type(view).__name__ for view in person.views] == ["SamplingRequestView", "SamplingResultView"]
    assert form == {"action": "accept", "content": {"name": "Ada"}}
