"""Request checks before any provider call, and the registry the sampling layer routes with."""

from __future__ import annotations

from typing import Any

import pytest

from host_receiver.handlers import ModelRouter
from host_receiver.protocol.types import CreateMessageRequestParams
from providers import (
    EchoProvider,
    ModelInfo,
    NoSuitableModel,
    ProviderLimits,
    ProviderRegistry,
    Requirements,
    UnsupportedRequest,
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

# (case, params, model, limits, message words)
REFUSED = [
    (
        "no messages",
        CreateMessageRequestParams(messages=[], max_tokens=5),
        EVERYTHING,
        None,
        "no messages",
    ),
    (
        "too many messages",
        params(*[{"role": "user", "content": TEXT}] * 3),
        EVERYTHING,
        ProviderLimits(max_messages=2),
        "3 messages; this host accepts at most 2",
    ),
    ("zero maxTokens", params(maxTokens=0), EVERYTHING, None, "maxTokens must be at least 1"),
    (
        "image to text-only",
        params({"role": "user", "content": IMAGE}),
        TEXT_ONLY,
        None,
        "'text-only' does not accept image content",
    ),
    (
        "audio to text-only",
        params({"role": "user", "content": AUDIO}),
        TEXT_ONLY,
        None,
        "does not accept audio content",
    ),
    ("tools to text-only", params(tools=[TOOL]), TEXT_ONLY, None, "does not accept tools"),
    (
        "prompt beyond context",
        params({"role": "user", "content": {"type": "text", "text": "x" * 20_000}}),
        TEXT_ONLY,
        None,
        "context of 4000 tokens",
    ),
]


@pytest.mark.parametrize(("p", "model", "limits", "words"), [pytest.param(*c[1:], id=c[0]) for c in REFUSED])
def test_check_request_refusals(
    p: CreateMessageRequestParams, model: ModelInfo, limits: ProviderLimits | None, words: str
) -> None:
    with pytest.raises(UnsupportedRequest) as caught:
        check_request(p, model, limits)
    assert words in str(caught.value)


def test_max_tokens_is_bounded_by_the_limit_and_the_context() -> None:
    p = params(maxTokens=1_000_000)
    assert check_request(p, EVERYTHING, ProviderLimits(max_tokens=500)).max_tokens == 500
    left = TEXT_ONLY.context_tokens - requirements(p).input_tokens
    assert check_request(p, TEXT_ONLY).max_tokens == left
    small = params(maxTokens=10)
    assert check_request(small, EVERYTHING) is small


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


def test_choose_checks_the_request_for_a_forced_model() -> None:
    with pytest.raises(UnsupportedRequest, match="'tiny' does not accept image content"):
        registry().choose(params({"role": "user", "content": IMAGE}), "s", "tiny")


def test_aliases_route_to_another_provider() -> None:
    reg = registry(aliases={"claude-3-sonnet": "other"})
    prefs = {"hints": [{"name": "claude-3-sonnet"}]}
    assert reg.choose(params(modelPreferences=prefs))[1].id == "other"


async def test_the_routed_provider_bounds_edited_params() -> None:
    reg = registry(limits=ProviderLimits(max_tokens=3))
    provider, model = reg.choose(params(maxTokens=3))
    edited = params({"role": "user", "content": {"type": "text", "text": "a b c d e f"}})
    result = await provider.sample(edited, model)
    assert result.stop_reason == "maxTokens"  # maxTokens 100 was lowered to the limit, 3


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
