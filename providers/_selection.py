"""Model selection: which catalogue model serves a request.

The rules, applied in this order (deterministic: same inputs, same model):

1. **Eligibility.** A model is eligible when the server's allow-list admits it
   (``allowed`` is ``None`` for no restriction; otherwise it holds model ids,
   and ``"*"`` admits every model) and it accepts what the request needs
   (:class:`Requirements`: tools, images, audio, and an estimated input that
   fits its context). Nothing eligible raises :class:`NoSuitableModel` naming
   the reason.
2. **Hints**, in the order the server sent them; the first hint that leads to
   an eligible model wins, and hints always beat priorities. For one hint:

   a. the eligible models whose id contains the hint (case-insensitive);
   b. otherwise the aliases, in their configured order: an alias
      ``key -> model id`` applies when the key contains the hint or the hint
      contains the key (case-insensitive), so ``claude`` and
      ``claude-3-sonnet-20240229`` both reach an alias keyed
      ``claude-3-sonnet``; the first alias whose target is eligible wins.

   Several models matching one hint are ranked by the priorities (step 3).
3. **Priorities.** Each model scores
   ``costPriority*cost + speedPriority*speed + intelligencePriority*intelligence``
   (absent priorities count 0; ratings are "higher is better", so ``cost`` is
   cheapness). The highest score wins; scores are compared rounded to 9
   decimals, and ties go to the model listed first in the catalogue. When every
   priority is 0 or absent, the first eligible model wins: the catalogue order
   is the host's own preference.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from host_receiver.errors import NoSuitableModel
from host_receiver.protocol.types import (
    AudioContent,
    ImageContent,
    ModelPreferences,
    SamplingRequest,
    TextContent,
    ToolResultContent,
    ToolUseContent,
)

from ._contract import ModelInfo

__all__ = ["Requirements", "estimate_input_tokens", "requirements", "select_model"]

#: Tokens counted for one image or audio clip in :func:`estimate_input_tokens`.
MEDIA_TOKENS = 1000
#: Characters per token in :func:`estimate_input_tokens`.
CHARS_PER_TOKEN = 4
_NO_PREFERENCES = ModelPreferences()


@dataclass(frozen=True)
class Requirements:
    """What a request needs from a model."""

    tools: bool = False
    images: bool = False
    audio: bool = False
    input_tokens: int = 0

    def unmet_by(self, model: ModelInfo) -> list[str]:
        """Why ``model`` cannot serve a request with these needs (empty: it can)."""
        reasons = []
        if self.tools and not model.tools:
            reasons.append("does not accept tools")
        if self.images and not model.images:
            reasons.append("does not accept image content")
        if self.audio and not model.audio:
            reasons.append("does not accept audio content")
        if self.input_tokens >= model.context_tokens:
            reasons.append(
                f"has a context of {model.context_tokens} tokens, and the request "
                f"needs about {self.input_tokens}"
            )
        return reasons


def estimate_input_tokens(params: SamplingRequest) -> int:
    """A rough size of the prompt: characters / 4, plus 1000 per image or audio clip."""
    return requirements(params).input_tokens


def requirements(params: SamplingRequest) -> Requirements:
    """What ``params`` needs from a model (media inside tool results count too).

    One pass over the blocks, which also counts the prompt's size
    (:func:`estimate_input_tokens`): this runs for every request, before a
    task exists.
    """
    tools = bool(params.tools)
    images = audio = False
    chars = len(params.system_prompt or "")
    media = 0
    for message in params.messages:
        content = message.content
        for block in content if type(content) is list else (content,):
            kind = type(block)
            if kind is TextContent:
                chars += len(block.text)  # type: ignore[union-attr]
                continue
            if kind is ImageContent or kind is AudioContent:
                images = images or kind is ImageContent
                audio = audio or kind is AudioContent
                media += 1
            elif kind is ToolUseContent:
                tools = True
                chars += len(block.name) + len(json.dumps(block.input))  # type: ignore[union-attr]
            elif kind is ToolResultContent:
                tools = True
                for inner in block.content:  # type: ignore[union-attr]
                    if isinstance(inner, TextContent):
                        chars += len(inner.text)
                    elif isinstance(inner, ImageContent | AudioContent):
                        images = images or isinstance(inner, ImageContent)
                        audio = audio or isinstance(inner, AudioContent)
                        media += 1
                if block.structured_content is not None:  # type: ignore[union-attr]
                    chars += len(json.dumps(block.structured_content))  # type: ignore[union-attr]
    for tool in params.tools or ():
        chars += len(tool.name) + len(tool.description or "") + len(json.dumps(tool.input_schema))
    return Requirements(tools, images, audio, math.ceil(chars / CHARS_PER_TOKEN) + MEDIA_TOKENS * media)


def select_model(
    catalogue: Sequence[ModelInfo],
    preferences: ModelPreferences | None,
    *,
    aliases: Mapping[str, str] | None = None,
    allowed: Collection[str] | None = None,
    needs: Requirements | None = None,
) -> ModelInfo:
    """The model that serves a request, by the rules in this module's docstring."""
    eligible = _eligible(catalogue, allowed, needs or Requirements())
    prefs = preferences or _NO_PREFERENCES
    for hint in prefs.hints or ():
        name = (hint.name or "").strip().lower()
        if not name:
            continue
        direct = [m for m in eligible if name in m.id.lower()]
        if direct:
            return _best(direct, prefs)
        for key, target in (aliases or {}).items():
            key = key.lower()
            if key and (name in key or key in name):
                served = [m for m in eligible if m.id == target]
                if served:
                    return _best(served, prefs)
    return _best(eligible, prefs)


def _eligible(
    catalogue: Sequence[ModelInfo], allowed: Collection[str] | None, needs: Requirements
) -> list[ModelInfo]:
    if not catalogue:
        raise NoSuitableModel("no model is configured")
    admitted = [m for m in catalogue if allowed is None or "*" in allowed or m.id in allowed]
    if not admitted:
        listed = ", ".join(sorted(allowed or ())) or "nothing"
        raise NoSuitableModel(
            f"the host's allow-list for this server ({listed}) admits none of the "
            f"configured models ({', '.join(m.id for m in catalogue)})"
        )
    eligible = [m for m in admitted if not needs.unmet_by(m)]
    if not eligible:
        details = "; ".join(f"{m.id} {', '.join(needs.unmet_by(m))}" for m in admitted)
        raise NoSuitableModel(f"no permitted model can serve this request: {details}")
    return eligible


def _best(models: list[ModelInfo], prefs: ModelPreferences) -> ModelInfo:
    weights = (
        prefs.cost_priority or 0.0,
        prefs.speed_priority or 0.0,
        prefs.intelligence_priority or 0.0,
    )
    if not any(weights):
        return models[0]

    def score(model: ModelInfo) -> float:
        ratings = (model.cost, model.speed, model.intelligence)
        return round(sum(w * r for w, r in zip(weights, ratings, strict=True)), 9)

    best = models[0]
    for model in models[1:]:
        if score(model) > score(best):
            best = model
    return best
