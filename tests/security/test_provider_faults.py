"""Every fault of an LLM backend ends in a failed task whose diagnostic says what happened.

Each test runs against each backend: tests/fake_openai.py on 127.0.0.1 spoken
to by the real ``openai`` client (OpenAIProvider), tests/fake_anthropic.py
spoken to by the real ``anthropic`` package (AnthropicProvider), and
tests/fake_gemini.py spoken to by the real ``google-genai`` package
(GeminiProvider). The provider
faults (an HTTP status, a
reset, a reply that is not JSON, no choices, a reply over the size cap, a
backend that hangs or trickles) are run through the one place every provider
is sampled, :meth:`providers.SamplingPlan.sample` (the registry's plan, with
the host's :class:`SamplingLimits`), and end to end as sampling tasks of a
receiver: the task fails, its ``statusMessage`` names the fault, and
``tasks/result`` gives the same error.
"""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

import providers
from host_receiver import AutoApprove, Receiver, SamplingService
from host_receiver.errors import INTERNAL_ERROR, ConfigError, ProviderError
from host_receiver.protocol.types import CreateMessageRequestParams, CreateMessageResult, SamplingRequest
from providers import (
    ECHO_MODEL,
    EchoProvider,
    ModelInfo,
    ProgressSink,
    Provider,
    ProviderRegistry,
    SamplingLimits,
    SamplingProgress,
    build_registry,
    load_config,
    save_config,
)
from providers._contract import ListsModels
from tests.fake_anthropic import FakeAnthropic
from tests.fake_gemini import FakeGemini
from tests.fake_openai import Completion, Drop, Endless, ErrorReply, FakeOpenAI, RawBody, RawStream
from tests.receiver_harness import connect, sampling_params

pytestmark = pytest.mark.anyio

KEY = "sk-test-0123456789abcdef"
MODEL = ModelInfo("gpt-test", "fake")
CHUNK = {"id": "c", "object": "chat.completion.chunk", "model": "gpt-test"}
#: The start of a chunk whose content never ends.
CHUNK_HEAD = b'{"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "'


def chunk(**choice: Any) -> str:
    return json.dumps({**CHUNK, "choices": [{"index": 0, "delta": {}, "finish_reason": None, **choice}]})


def lazily(name: str) -> Callable[..., Provider]:
    """The provider class ``name`` of :mod:`providers`, imported at its first use: each loads its
    vendor's SDK (``anthropic`` about a second), which a test process that runs none of these
    tests need not import while it collects them."""

    def make(*args: Any, **kwargs: Any) -> Provider:
        kind: Callable[..., Provider] = getattr(providers, name)
        return kind(*args, **kwargs)

    return make


@dataclass(frozen=True)
class Backend:
    """One backend under test: its fake, its provider, and its wire's words for a fault."""

    fake: type[FakeOpenAI]
    provider: Callable[..., Provider]
    #: The data of a streamed event that adds this text.
    text: Callable[[str], str]
    #: A stream that carries no answer, and how the provider names it.
    empty: str
    empty_diagnostic: str


BACKENDS = {
    "openai": Backend(
        FakeOpenAI,
        lazily("OpenAIProvider"),
        lambda text: chunk(delta={"content": text}),
        json.dumps({**CHUNK, "choices": [], "usage": {"completion_tokens": 0}}),
        "the backend returned no choices",
    ),
    "anthropic": Backend(
        FakeAnthropic,
        lazily("AnthropicProvider"),
        lambda text: json.dumps(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}
        ),
        json.dumps({"type": "ping"}),
        "the backend returned no message",
    ),
    "gemini": Backend(
        FakeGemini,
        lazily("GeminiProvider"),
        lambda text: json.dumps({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}}]}),
        json.dumps({"usageMetadata": {"promptTokenCount": 3}}),
        "the backend returned no candidates",
    ),
}


@pytest.fixture(params=list(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Backend:
    return BACKENDS[request.param]


@pytest.fixture
def fake(backend: Backend) -> Iterator[FakeOpenAI]:
    with backend.fake() as server:
        yield server


def registry(fake: FakeOpenAI, limits: SamplingLimits | None = None, **options: Any) -> ProviderRegistry:
    options.setdefault("max_retries", 0)
    kind = next(b.provider for b in BACKENDS.values() if type(fake) is b.fake)
    provider = kind("fake", [MODEL], api_key=KEY, base_url=fake.url, **options)
    return ProviderRegistry([provider], limits=limits)


def request() -> CreateMessageRequestParams:
    return CreateMessageRequestParams.model_validate(sampling_params("Hi"))


async def ignore(update: SamplingProgress) -> None:
    """A progress sink (the receiver always gives one, so replies stream)."""


async def failure(routes: ProviderRegistry, *, streamed: bool = True) -> str:
    """The ProviderError of sampling ``request()`` through the plan, as shown to people."""
    async with routes:
        with pytest.raises(ProviderError) as caught:
            await routes.plan(request(), "srv").sample(ignore if streamed else None)
    return str(caught.value)


# --- each fault, through the plan -------------------------------------------------------------


async def test_a_stream_that_is_not_json_names_the_byte(fake: FakeOpenAI, backend: Backend) -> None:
    fake.queue(RawStream(events=(backend.text("Hel"), '{"choices": [oops')))
    message = await failure(registry(fake))
    assert message.startswith(f"provider 'fake' ({fake.url}): ")
    assert "the backend's stream is not JSON" in message
    assert "at byte 13" in message


async def test_a_stream_answered_as_plain_json_is_named(fake: FakeOpenAI) -> None:
    fake.queue(RawBody(body=json.dumps({**CHUNK, "choices": []}).encode()))
    message = await failure(registry(fake))
    assert "the backend's stream is not an event stream" in message
    assert "application/json" in message


async def test_a_reply_that_is_not_json_names_the_byte(fake: FakeOpenAI) -> None:
    fake.queue(RawBody(body=b'{"id": "x", "choices": [}'))
    message = await failure(registry(fake), streamed=False)
    assert "the backend's reply is not JSON" in message and "at byte 24" in message


async def test_a_stream_without_an_answer_is_a_failure_not_an_empty_answer(
    fake: FakeOpenAI, backend: Backend
) -> None:
    fake.queue(RawStream(events=(backend.empty,)))
    assert backend.empty_diagnostic in await failure(registry(fake))


async def test_an_http_status_is_named(fake: FakeOpenAI) -> None:
    fake.queue(ErrorReply(status=503, message="overloaded"))
    assert "HTTP 503, server error: overloaded" in await failure(registry(fake))


async def test_a_reset_before_the_reply_is_named(fake: FakeOpenAI) -> None:
    fake.queue(Drop())
    assert "connection failed: Server disconnected" in await failure(registry(fake))


async def test_a_reset_in_the_middle_of_the_stream_is_named(fake: FakeOpenAI) -> None:
    fake.queue(Completion(text="one two three four", drop_after=3))
    assert "connection failed: peer closed connection" in await failure(registry(fake))


async def test_a_reply_over_the_size_cap_stops_the_stream(fake: FakeOpenAI, backend: Backend) -> None:
    piece = "x" * 65_536
    fake.queue(RawStream(events=(backend.text(piece),), chunk_delay=0.002, repeat=320))  # 20 MB
    routes = registry(fake, SamplingLimits(max_reply_chars=1_048_576))  # its SDK imported first
    started = time.monotonic()
    message = await failure(routes)
    assert "the reply is longer than this host's limit of 1,048,576 characters" in message
    assert time.monotonic() - started < 10
    assert await anyio.to_thread.run_sync(fake.wait_for_disconnect, 10)  # the stream was stopped


async def test_a_plain_reply_over_the_size_cap_is_refused(fake: FakeOpenAI) -> None:
    fake.queue(Completion(text="y" * 2_000))
    message = await failure(registry(fake, SamplingLimits(max_reply_chars=1_000)), streamed=False)
    assert "longer than this host's limit of 1,000 characters" in message


SIZE_CAP = "the reply is over this host's size cap"
SMALL = SamplingLimits(max_reply_chars=1_000, deadline=30)  # the deadline: what an unbounded read meets


@pytest.mark.parametrize(
    ("reply", "streamed", "what"),
    [
        (Endless(), False, "the reply of more than 1,060,576 bytes"),
        (Endless(status=500), False, "the reply of more than"),  # an error body is bounded too
        (Endless(head=b"data: " + CHUNK_HEAD, content_type="text/event-stream"), True, "a streamed event"),
    ],
    ids=["plain", "error-body", "one-event"],
)
async def test_a_reply_that_never_ends_is_read_to_the_size_cap_and_no_further(
    fake: FakeOpenAI, reply: Any, streamed: bool, what: str
) -> None:
    """A backend cannot make the host buffer a reply whole before its characters are counted."""
    fake.queue(reply)
    message = await failure(registry(fake, SMALL), streamed=streamed)
    assert f"{SIZE_CAP}: {what}" in message and "(the most a reply of 1,000 characters takes)" in message
    assert await anyio.to_thread.run_sync(fake.wait_for_disconnect, 10)  # the response was closed


async def test_one_huge_streamed_event_is_refused_by_its_size_not_read_whole(
    fake: FakeOpenAI, backend: Backend
) -> None:
    fake.queue(RawStream(events=(backend.text("x" * 4_000_000),)))  # 4 MB against 1,000 characters
    assert f"{SIZE_CAP}: a streamed event" in await failure(registry(fake, SMALL))


@pytest.mark.slow
async def test_a_compressed_reply_is_counted_as_it_inflates(fake: FakeOpenAI) -> None:
    body = json.dumps({"choices": [{"index": 0, "message": {"content": "z" * 20_000_000}}]}).encode()
    bomb = gzip.compress(body)  # 20 MB in about 20 KB
    fake.queue(RawBody(body=bomb, headers={"Content-Encoding": "gzip"}))
    assert SIZE_CAP in await failure(registry(fake, SMALL), streamed=False)


async def test_a_reply_at_the_cap_is_taken_however_its_json_is_escaped(fake: FakeOpenAI) -> None:
    """The byte bound comes from the character cap: 12 bytes a character (an escaped surrogate pair)."""
    text = "\U0001f600" * 1_000_000  # a million characters, 12 MB as JSON writes them: \ud83d\ude00
    fake.queue(Completion(text=text))
    routes = registry(fake, SamplingLimits(max_reply_chars=1_000_000))
    async with routes:
        result = await routes.plan(request(), "srv").sample(None)
    assert result.content.text == text  # type: ignore[union-attr]


async def test_a_read_timeout_is_not_retried(fake: FakeOpenAI) -> None:
    fake.queue(Completion(delay=30), Completion(delay=30), Completion(delay=30))
    routes = registry(fake, timeout=0.3, max_retries=2)  # its SDK imported before the clock starts
    started = time.monotonic()
    message = await failure(routes)
    assert "no response within 0.3 s" in message
    assert time.monotonic() - started < 0.85  # one wait, not three (0.9 s) and the backoff between them
    assert fake.served == 1


@pytest.mark.slow
async def test_one_deadline_bounds_the_whole_call(fake: FakeOpenAI, backend: Backend) -> None:
    """A backend that trickles (each chunk in time for the read timeout) meets the total deadline."""
    fake.queue(RawStream(events=(backend.text("."),), chunk_delay=0.1, repeat=10_000))
    routes = registry(fake, SamplingLimits(deadline=1.0), timeout=5)  # its SDK imported first
    started = time.monotonic()
    message = await failure(routes)
    assert "no complete reply within 1 s (this host's deadline for one sampling call)" in message
    assert time.monotonic() - started < 3
    assert await anyio.to_thread.run_sync(fake.wait_for_disconnect, 10)


async def test_the_backend_sees_the_requests_without_the_calls_tag(fake: FakeOpenAI) -> None:
    """Requests carry the call they belong to as a header to the shared transport, which strips it."""
    fake.queue(Completion(text="one"), Completion(text="two"))
    fake.wire = fake.make_wire(["gpt-test"])
    routes = registry(fake)
    async with routes:
        for progress in (None, ignore):
            await routes.plan(request(), "srv").sample(progress)
        provider = routes.providers[0]
        assert isinstance(provider, ListsModels)
        assert "gpt-test" in await provider.list_models()
    assert len(fake.requests) == 3
    for sent in fake.requests:
        assert "x-host-receiver-call" not in sent.headers and KEY in str(sent.headers)


async def test_the_deadline_and_the_cap_hold_for_every_provider() -> None:
    """Not written per provider: the offline provider gets the same limits from the plan."""
    slow = ProviderRegistry([EchoProvider(delay=5)], limits=SamplingLimits(deadline=0.3))
    with pytest.raises(ProviderError, match="deadline for one sampling call"):
        await slow.plan(request(), "srv").sample(ignore)
    small = ProviderRegistry([EchoProvider()], limits=SamplingLimits(max_reply_chars=3))
    with pytest.raises(ProviderError, match="longer than this host's limit of 3 characters"):
        await small.plan(request(), "srv").sample(ignore)


async def test_a_provider_that_takes_limits_is_given_the_plans_and_others_are_called_as_before() -> None:
    seen: list[SamplingLimits] = []

    class Bounded(EchoProvider):
        async def sample_within(
            self,
            params: SamplingRequest,
            model: ModelInfo,
            limits: SamplingLimits,
            progress: ProgressSink | None = None,
        ) -> CreateMessageResult:
            seen.append(limits)
            return await self.sample(params, model, progress)

    limits = SamplingLimits(max_reply_chars=500, deadline=9)
    for provider in (Bounded(), EchoProvider()):
        result = await ProviderRegistry([provider], limits=limits).plan(request(), "srv").sample(None)
        assert result.model == ECHO_MODEL.id
    assert seen == [limits]


# --- end to end: a failed task with the diagnostic ----------------------------------------------


@pytest.mark.parametrize(
    "fault",
    ["http-500", "reset", "not-json", "no-answer", "over-cap"],
)
async def test_a_faulty_backend_fails_the_task_with_a_diagnostic(
    fake: FakeOpenAI, backend: Backend, fault: str
) -> None:
    reply, diagnostic = {
        "http-500": (ErrorReply(status=500, message="boom"), "HTTP 500, server error: boom"),
        "reset": (Drop(), "connection failed"),
        "not-json": (RawStream(events=('{"choices": [oops',)), "the backend's stream is not JSON"),
        "no-answer": (RawStream(events=(backend.empty,)), backend.empty_diagnostic),
        "over-cap": (RawStream(events=(backend.text("z" * 5_000),)), "longer than this host's limit"),
    }[fault]
    fake.queue(reply)
    routes = registry(fake, SamplingLimits(max_reply_chars=4_000))
    async with routes, connect(Receiver(sampling=SamplingService(routes, AutoApprove()))) as server:
        # The requestor asks for progress, so the call streams (the scripted faults are streams).
        params = sampling_params("Hi", _meta={"progressToken": "faults"})
        task_id = await server.create_task("sampling/createMessage", params)
        error = await server.error("tasks/result", {"taskId": task_id})
        task = await server.request("tasks/get", {"taskId": task_id})
    assert task["status"] == "failed"
    assert diagnostic in task["statusMessage"]
    assert error.code == INTERNAL_ERROR and diagnostic in error.message
    assert "Internal error" not in task["statusMessage"]


# --- configuration ------------------------------------------------------------------------------


def test_the_call_limits_come_from_the_config_files_limits_table(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[limits]\ndeadline = 30\nmax_reply_chars = 5000\n")
    limits = build_registry(config=load_config(path)).limits
    assert (limits.deadline, limits.max_reply_chars) == (30.0, 5000)
    save_config(load_config(path), path)  # a round trip keeps them
    assert load_config(path).limits == limits
    defaults = SamplingLimits()
    assert (defaults.deadline, defaults.max_reply_chars) == (300.0, 1_048_576)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("deadline = 0", "limits.deadline must be positive"),
        ("deadline = true", "limits.deadline must be a number"),
        ('max_reply_chars = "1 MiB"', "limits.max_reply_chars"),
        ("max_reply_chars = 0", "limits.max_reply_chars"),
    ],
)
def test_bad_call_limits_are_config_errors(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(f"[limits]\n{text}\n")
    with pytest.raises(ConfigError, match=words):
        load_config(path)
