"""Model selection, as tables: hints, aliases, priorities, allow-lists, capability filters."""

from __future__ import annotations

from typing import Any

import pytest

from host_receiver.errors import NoSuitableModel
from host_receiver.protocol.types import ModelHint, ModelPreferences
from providers import ModelInfo, Requirements, select_model

CATALOGUE = (
    ModelInfo("gpt-4o-mini", "openai", cost=0.9, speed=0.8, intelligence=0.5),
    ModelInfo("gpt-4o", "openai", cost=0.3, speed=0.6, intelligence=0.8),
    ModelInfo("o3", "openai", cost=0.1, speed=0.2, intelligence=1.0),
    ModelInfo(
        "llama3.2:3b",
        "ollama",
        cost=1.0,
        speed=0.9,
        intelligence=0.2,
        tools=False,
        images=False,
        context_tokens=8192,
    ),
    ModelInfo(
        "gpt-4o-audio-preview",
        "openai",
        cost=0.3,
        speed=0.5,
        intelligence=0.7,
        images=False,
        audio=True,
    ),
)
ALIASES = {"claude-3-sonnet": "gpt-4o", "claude": "gpt-4o-mini", "gemini": "not-configured"}

IMAGES = Requirements(images=True)
AUDIO = Requirements(audio=True)
TOOLS = Requirements(tools=True)


def prefs(
    *hints: str, cost: float | None = None, speed: float | None = None, intelligence: float | None = None
) -> ModelPreferences:
    return ModelPreferences(
        hints=[ModelHint(name=h) for h in hints] or None,
        cost_priority=cost,
        speed_priority=speed,
        intelligence_priority=intelligence,
    )


# (case, preferences, allowed, needs, expected model id)
CASES: list[tuple[str, ModelPreferences | None, Any, Requirements | None, str]] = [
    # no preference: the host's own order
    ("no preferences", None, None, None, "gpt-4o-mini"),
    ("empty preferences", prefs(), None, None, "gpt-4o-mini"),
    ("all priorities zero", prefs(cost=0, speed=0, intelligence=0), None, None, "gpt-4o-mini"),
    # hints are substrings, tried in order, case-insensitive
    ("hint substring", prefs("llama"), None, None, "llama3.2:3b"),
    ("hint case-insensitive", prefs("LLAMA3"), None, None, "llama3.2:3b"),
    ("exact hint", prefs("o3"), None, None, "o3"),
    ("first hint without match skipped", prefs("mistral", "o3"), None, None, "o3"),
    ("first matching hint wins", prefs("o3", "llama"), None, None, "o3"),
    ("empty hint skipped", prefs("", "llama"), None, None, "llama3.2:3b"),
    ("ambiguous hint: catalogue order", prefs("gpt-4o"), None, None, "gpt-4o-mini"),
    ("ambiguous hint: priorities decide", prefs("gpt-4o", intelligence=1), None, None, "gpt-4o"),
    ("hint beats priorities", prefs("llama", intelligence=1), None, None, "llama3.2:3b"),
    ("no hint matches: priorities", prefs("mistral", intelligence=1), None, None, "o3"),
    # aliases: a hint for another family
    ("alias exact key", prefs("claude-3-sonnet"), None, None, "gpt-4o"),
    ("alias key inside dated hint", prefs("claude-3-sonnet-20240229"), None, None, "gpt-4o"),
    ("alias hint inside key", prefs("sonnet"), None, None, "gpt-4o"),
    ("aliases in configured order", prefs("claude"), None, None, "gpt-4o"),
    ("alias to a missing model ignored", prefs("gemini"), None, None, "gpt-4o-mini"),
    ("missing alias target, next hint", prefs("gemini-1.5-pro", "o3"), None, None, "o3"),
    ("direct match beats alias", prefs("claude", "o3"), None, None, "gpt-4o"),
    # priorities: weighted sum of ratings (cost = cheapness)
    ("cost only", prefs(cost=1), None, None, "llama3.2:3b"),
    ("speed only", prefs(speed=1), None, None, "llama3.2:3b"),
    ("intelligence only", prefs(intelligence=1), None, None, "o3"),
    ("cost and intelligence", prefs(cost=0.5, intelligence=0.5), None, None, "gpt-4o-mini"),
    ("mostly intelligence", prefs(cost=0.2, intelligence=0.8), None, None, "o3"),
    # allow-lists
    ("allow-list limits default", None, {"gpt-4o", "o3"}, None, "gpt-4o"),
    ("allow-list limits hints", prefs("mini"), {"gpt-4o", "o3"}, None, "gpt-4o"),
    ("allow-list limits aliases", prefs("claude-3-sonnet"), {"o3"}, None, "o3"),
    ("allow-list limits priorities", prefs(cost=1), {"gpt-4o", "o3"}, None, "gpt-4o"),
    ("star admits all", prefs("llama"), {"*"}, None, "llama3.2:3b"),
    # capability filters
    ("images exclude text-only hint", prefs("llama"), None, IMAGES, "gpt-4o-mini"),
    ("audio needs an audio model", None, None, AUDIO, "gpt-4o-audio-preview"),
    ("tools exclude a tool-less model", prefs(cost=1), None, TOOLS, "gpt-4o-mini"),
    (
        "context excludes small models",
        prefs("llama"),
        None,
        Requirements(input_tokens=10_000),
        "gpt-4o-mini",
    ),
    ("context fits", prefs("llama"), None, Requirements(input_tokens=8000), "llama3.2:3b"),
]


@pytest.mark.parametrize(
    ("preferences", "allowed", "needs", "expected"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_selection_table(
    preferences: ModelPreferences | None,
    allowed: set[str] | None,
    needs: Requirements | None,
    expected: str,
) -> None:
    chosen = select_model(CATALOGUE, preferences, aliases=ALIASES, allowed=allowed, needs=needs)
    assert chosen.id == expected


# (case, allowed, needs, words the message must contain)
REFUSALS: list[tuple[str, Any, Requirements | None, list[str]]] = [
    ("allow-list admits nothing", {"claude-3-opus"}, None, ["allow-list", "claude-3-opus"]),
    ("empty allow-list", set(), None, ["allow-list", "nothing"]),
    ("allowed model lacks audio", {"gpt-4o"}, AUDIO, ["gpt-4o", "audio"]),
    ("allowed model lacks images", {"llama3.2:3b"}, IMAGES, ["llama3.2:3b", "image"]),
    ("prompt too large everywhere", None, Requirements(input_tokens=10**7), ["context"]),
]


@pytest.mark.parametrize(("allowed", "needs", "words"), [pytest.param(*c[1:], id=c[0]) for c in REFUSALS])
def test_refusal_table(allowed: set[str] | None, needs: Requirements | None, words: list[str]) -> None:
    with pytest.raises(NoSuitableModel) as caught:
        select_model(CATALOGUE, prefs("gpt"), aliases=ALIASES, allowed=allowed, needs=needs)
    for word in words:
        assert word in str(caught.value)


@pytest.mark.parametrize("order", [1, -1])
def test_equal_scores_go_to_catalogue_order(order: int) -> None:
    # 0.1*0.7 + 0.3*0.1 and 0.1*0.1 + 0.3*0.3 are equal, though not in floating point.
    a = ModelInfo("a", "p", cost=0.7, intelligence=0.1)
    b = ModelInfo("b", "p", cost=0.1, intelligence=0.3)
    catalogue = (a, b)[::order]
    chosen = select_model(catalogue, prefs(cost=0.1, intelligence=0.3))
    assert chosen == catalogue[0]


def test_empty_catalogue_is_refused() -> None:
    with pytest.raises(NoSuitableModel, match="no model is configured"):
        select_model((), None)


def test_selection_is_deterministic_whatever_the_alias_map_object() -> None:
    first = select_model(CATALOGUE, prefs("claude"), aliases=dict(ALIASES))
    again = select_model(CATALOGUE, prefs("claude"), aliases=dict(ALIASES))
    assert first == again


def test_ratings_must_be_in_range() -> None:
    with pytest.raises(ValueError, match="cost must be between 0 and 1"):
        ModelInfo("m", "p", cost=1.5)
