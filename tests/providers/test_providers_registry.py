"""The one limits check before any provider call, and the registry the sampling layer plans with."""

from __future__ import annotations

from typing import Any

import pytest

from host_receiver.errors import LimitExceeded, NoSuitableModel, UnsupportedRequest
from host_receiver.handlers import ModelRouter
from host_receiver.protocol.types import CreateMessageRequestParams
from providers import (
    EchoProvider,
    ModelInfo,
    ProviderLimits,
    ProviderRegistry,
    Requirements,
    SamplingLimits,
    bound_request,
    check_request,
    requirements,
)

pytestmark = pytest.mark.anyio

TEXT = {"type": "text", "text": "hello there"}
IMAGE = {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"}
AUDIO = {"type": "audio", "data": "aGVsbG8=", "mimeType": "audio/wav"}
TOOL = {"name": "lookup", "inputSchema": {"type": "object"}}
USE = {"type": "tool_use", "id": "c1", "name": "lookup", "input": {}}
RESULT = {"type": "tool_result", "toolUseId": "c1", "content": [IMAGE]}


def params(*messages: dict[str, Any], **extra: Any) -> CreateMessageRequestParams:
    raw = {"messages": list(messages) or [{"role": "user", "content": TEXT}], "maxTokens": 100}
    return CreateMessageRequestParams.model_validate({**raw, **extra})


# (case, params, expected tools/images/audio)
NEEDS = [
    ("plain text", params(), (False, False, False)),
    ("image", params({"role": "user", "content": [TEXT, IMAGE]}), (False, True, False)),
    ("audio", params({"role": "user", "content": AUDIO}), (False, False, True)),
    ("tools offered", params(tools=[TOOL]), (True, False, False)),
    (
        "tool history",
        params({"role": "assistant", "content": USE}, {"role": "user", "content": RESULT}),
        (True, True, False),
    ),
]


@pytest.mark.parametrize(("p", "expected"), [pytest.param(*c[1:], id=c[0]) for c in NEEDS])
def test_requirements_table(p: CreateMessageRequestParams, expected: tuple[bool, ...]) -> None:
    needs = requirements(p)
    assert (needs.tools, needs.images, needs.audio) == expected
    assert needs.input_tokens > 0


def test_media_count_in_the_token_estimate() -> None:
    plain = requirements(params()).input_tokens
    with_image = requirements(params({"role": "user", "content": [TEXT, IMAGE]})).input_tokens
    assert with_image == plain + 1000


TEXT_ONLY = ModelInfo("text-only", "p", tools=False, images=False, audio=False, context_tokens=4000)
EVERYTHING = ModelInfo("everything", "p", tools=True, images=True, audio=True)

USE_A = {"role": "assistant", "content": {**USE, "id": "a"}}
RESULT_A = {"role": "user", "content": {**RESULT, "toolUseId": "a", "content": [TEXT]}}

# (case, params, model, limits, field, message words)
OVER_THE_LIMITS = [
    (
        "too many messages",
        params(*[{"role": "user", "content": TEXT}] * 3),
        EVERYTHING,
        SamplingLimits(max_messages=2),
        "messages",
        "3 messages exceed this host's limit of 2",
    ),
    (
        "too many tool rounds",
        params(USE_A, RESULT_A, USE_A, RESULT_A, tools=[TOOL]),
        EVERYTHING,
        SamplingLimits(max_tool_rounds=1),
        "messages",
        "2 tool rounds, more than this host's tool-loop limit of 1",
    ),
    (
        "maxTokens over the limit, refused by policy",
        params(maxTokens=1000),
        EVERYTHING,
        SamplingLimits(max_tokens=500, over_max_tokens="refuse"),
        "maxTokens",
        "maxTokens 1000 exceeds this host's limit of 500",
    ),
    (
        "maxTokens over the context, refused by policy",
        params(maxTokens=10_000),
        TEXT_ONLY,
        SamplingLimits(over_max_tokens="refuse"),
        "maxTokens",
        "tokens that model 'text-only' has left after the prompt",
    ),
]


@pytest.mark.parametrize(
    ("p", "model", "limits", "field", "words"), [pytest.param(*c[1:], id=c[0]) for c in OVER_THE_LIMITS]
)
def test_a_request_over_the_limits_is_refused_naming_the_field(
    p: CreateMessageRequestParams, model: ModelInfo, limits: SamplingLimits, field: str, words: str
) -> None:
    with pytest.raises(LimitExceeded) as caught:
        bound_request(p, model, limits)
    assert caught.value.field == field
    assert words in str(caught.value)


def test_max_tokens_is_clamped_to_the_limit_and_the_context() -> None:
    p = params(maxTokens=1_000_000)
    assert bound_request(p, EVERYTHING, SamplingLimits(max_tokens=500)).max_tokens == 500
    left = TEXT_ONLY.context_tokens - requirements(p).input_tokens
    assert bound_request(p, TEXT_ONLY, SamplingLimits()).max_tokens == left
    small = params(maxTokens=10)
    assert bound_request(small, EVERYTHING, SamplingLimits()) is small


def test_the_deprecated_check_request_still_checks_and_bounds() -> None:
    with pytest.warns(DeprecationWarning), pytest.raises(UnsupportedRequest, match="no messages"):
        check_request(CreateMessageRequestParams(messages=[], max_tokens=5), EVERYTHING)
    with pytest.warns(DeprecationWarning), pytest.raises(UnsupportedRequest, match="does not accept tools"):
        check_request(params(tools=[TOOL]), TEXT_ONLY)
    with pytest.warns(DeprecationWarning):
        assert check_request(params(maxTokens=900), EVERYTHING, ProviderLimits(max_tokens=9)).max_tokens == 9


# --- the registry ---------------------------------------------------------------


class Named(EchoProvider):
    """An echo provider with a custom catalogue."""

    def __init__(self, name: str, *ids: str) -> None:
        super().__init__(name)
        self._ids = [ModelInfo(i, name, images=i != "tiny") for i in ids]

    def models(self) -> list[ModelInfo]:
        return self._ids


def registry(**kwargs: Any) -> ProviderRegistry:
    return ProviderRegistry([Named("a", "tiny", "big"), Named("b", "other")], **kwargs)


def test_registry_is_a_model_router() -> None:
    router: ModelRouter = registry()
    assert router.allowed_models("any") == ("tiny", "big", "other")


def test_catalogue_order_and_provider_lookup() -> None:
    reg = registry()
    assert [m.id for m in reg.catalogue()] == ["tiny", "big", "other"]
    provider, model = reg.choose(params(), "srv")
    assert (provider.name, model.id) == ("a", "tiny")
    provider, model = reg.choose(params(modelPreferences={"hints": [{"name": "oth"}]}))
    assert (provider.name, model.id) == ("b", "other")


def test_per_server_allow_lists_with_a_default() -> None:
    reg = registry(allowed={"trusted": ["tiny", "big", "other"], "*": ["other"]})
    assert reg.allowed_models("trusted") == ("tiny", "big", "other")
    assert reg.allowed_models("stranger") == ("other",)
    assert reg.choose(params(), "stranger")[1].id == "other"
    assert reg.choose(params(), "trusted")[1].id == "tiny"


def test_forced_model_must_be_configured_and_allowed() -> None:
    reg = registry(allowed={"*": ["tiny"]})
    assert reg.choose(params(), "s", "tiny")[1].id == "tiny"
    with pytest.raises(NoSuitableModel, match="'big' is not allowed"):
        reg.choose(params(), "s", "big")
    with pytest.raises(NoSuitableModel, match="'nope' is not configured"):
        reg.choose(params(), "s", "nope")


def test_plan_checks_the_request_for_a_forced_model() -> None:
    with pytest.raises(NoSuitableModel, match="'tiny' does not accept image content"):
        registry().plan(params({"role": "user", "content": IMAGE}), "s", "tiny")


def test_aliases_route_to_another_provider() -> None:
    reg = registry(aliases={"claude-3-sonnet": "other"})
    prefs = {"hints": [{"name": "claude-3-sonnet"}]}
    assert reg.choose(params(modelPreferences=prefs))[1].id == "other"


async def test_a_plan_samples_the_clamped_params() -> None:
    reg = registry(limits=SamplingLimits(max_tokens=3))
    plan = reg.plan(params({"role": "user", "content": {"type": "text", "text": "a b c d e f"}}))
    assert (plan.requested_max_tokens, plan.params.max_tokens, plan.clamped) == (100, 3, True)
    result = await plan.sample()
    assert result.stop_reason == "maxTokens"  # maxTokens 100 was lowered to the limit, 3
    assert result.content.text == "echo: a b"  # type: ignore[union-attr]


async def test_sample_in_one_call() -> None:
    async with registry() as reg:
        result = await reg.sample(params(), server="s", model="big")
    assert result.model == "big"


def test_duplicate_provider_names_are_refused() -> None:
    with pytest.raises(ValueError, match="unique"):
        ProviderRegistry([Named("a", "x"), Named("a", "y")])


def test_requirements_unmet_lists_every_reason() -> None:
    needs = Requirements(tools=True, images=True, audio=True, input_tokens=10**6)
    assert len(needs.unmet_by(TEXT_ONLY)) == 4
