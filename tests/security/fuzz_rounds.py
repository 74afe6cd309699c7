"""Seeded scripts of a hostile 2026-07-28 server: what it answers to one ``tools/call``, round after round.

Rules:

- :func:`script` is deterministic for ``(seed, call)``: the server
  (tests/servers/modern_fuzz_server.py) plays it, and the runner
  (tests/security/fuzz_rounds_run.py) rebuilds it to know what the call must
  end in.
- A script is a list of :class:`Step`, the answers to the successive
  ``tools/call`` attempts of one call: adversarial but valid input rounds
  (odd, escape-laden, empty and huge keys; ``requestState`` absent, empty,
  escape-laden, JSON-looking or up to megabytes; sampling, form, URL and
  roots entries whose text carries escapes), now and then a -32020 that makes
  the client list the tools (pages with odd cursors, each of which must come
  back byte for byte), and one last step that ends the call: a result (with
  ``isError`` or not), a JSON-RPC error, a malformed ``input_required``
  (entries of the wrong shape, a bad method, a non-string state, an unknown
  ``resultType``, a state JSON cannot carry), an entry the client must refuse,
  a repeated or non-string cursor, or more rounds than the client allows.
- :attr:`Script.ending` names how the call must end, and :attr:`Script.words`
  what its error message must say (a clear error, not a bare one).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any, Literal

from tests.security.fuzz_frames import ODD_TEXT

__all__ = ["MAX_ROUNDS", "Script", "Step", "script"]

#: ``--max-input-rounds`` of the runs: a script with more valid rounds in a row ends the call.
MAX_ROUNDS = 60
#: Every kind of control a terminal or a log could be fooled by, and JSON's own escapes.
EVIL = '\x1b[2J\x1b]0;owned\x07\u202e\u2066\x9b31m\x00"\\/\u2028\r\n'

Ending = Literal["result", "tool-error", "failure"]


@dataclass(frozen=True, slots=True)
class Step:
    """One answer to a ``tools/call`` attempt: a ``result`` or an ``error`` (exactly one), or
    -32020 followed by ``pages`` of ``tools/list`` (each page's raw result)."""

    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    raw: str | None = None  # the result's JSON text as sent, when it is not what json.dumps writes
    pages: tuple[dict[str, Any], ...] = ()


@dataclass(slots=True)
class Script:
    """One call's steps, how the call must end, and the words its error must carry."""

    steps: list[Step] = field(default_factory=list)
    ending: Ending = "result"
    words: tuple[str, ...] = ()
    rounds: int = 0  # valid input rounds the client answers


def script(seed: int, call: int) -> Script:
    """The script of call ``call`` of run ``seed`` (rules above)."""
    return _Maker(random.Random(f"{seed}:{call}")).make()


class _Maker:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.out = Script()

    def make(self) -> Script:
        rng = self.rng
        out = self.out
        if rng.random() < 0.08:  # more rounds than the client allows: it answers MAX_ROUNDS, then stops
            out.steps = [Step(result=self.round()) for _ in range(MAX_ROUNDS + 1)]
            out.rounds = MAX_ROUNDS
            out.ending, out.words = "failure", (f"more than {MAX_ROUNDS} times in a row",)
            return out
        rounds = rng.randint(5, 45)
        # At most one -32020 a call: the client lists the tools and starts the call again, once.
        mismatch = rng.randrange(rounds) if rng.random() < 0.3 else None
        for index in range(rounds):
            if index == mismatch:
                out.steps.append(Step(error=_header_mismatch(), pages=self.pages(valid=True)))
            out.steps.append(Step(result=self.round()))
        out.rounds = rounds
        self.end(cursors=mismatch is None)
        return out

    # --- valid rounds ----------------------------------------------------------------------------

    def round(self) -> dict[str, Any]:
        rng = self.rng
        requests = {self.key(): self.entry() for _ in range(rng.choice([0, 1, 1, 1, 2, 3]))}
        result: dict[str, Any] = {"resultType": "input_required"}
        state = self.state()
        if not requests and state is None:
            state = ""  # a round needs one of them: an empty state is one (an empty map is not)
        if requests or rng.random() < 0.3:
            result["inputRequests"] = requests  # an empty map beside a state is allowed
        if state is not None:
            result["requestState"] = state
        return result

    def key(self) -> str:
        rng = self.rng
        pick = rng.random()
        if pick < 0.4:
            return f"k{rng.randrange(10**6)}"
        if pick < 0.8:
            return rng.choice(ODD_TEXT) + EVIL[: rng.randrange(len(EVIL))] + str(rng.randrange(10**6))
        return "k" * rng.choice([1_000, 20_000]) + str(rng.randrange(10**6))

    def state(self) -> str | None:
        rng = self.rng
        pick = rng.random()
        if pick < 0.25:
            return None
        if pick < 0.35:
            return ""
        if pick < 0.7:
            return EVIL + rng.choice(ODD_TEXT) + str(rng.randrange(10**9))
        if pick < 0.9:
            return json.dumps({"step": rng.randrange(100), "note": EVIL, "nested": {"a": [1, None, "é中😀"]}})
        return "s" * rng.choice([100_000, 1_000_000, 3_000_000]) + EVIL

    def entry(self) -> dict[str, Any]:
        rng = self.rng
        pick = rng.random()
        text = EVIL + rng.choice(ODD_TEXT)
        if pick < 0.45:
            params: dict[str, Any] = {
                "messages": [{"role": "user", "content": {"type": "text", "text": text or "hi"}}],
                "maxTokens": rng.choice([1, 50, 10**6]),
            }
            if rng.random() < 0.3:
                params["systemPrompt"] = text
            return {"method": "sampling/createMessage", "params": params}
        if pick < 0.75:
            schema = {
                "type": "object",
                "properties": {
                    "name" + EVIL: {"type": "string", "title": text, "default": text},
                    "n": {"type": "integer", "default": 3, "minimum": 0},
                    "pick": {"type": "string", "enum": ["a", EVIL], "default": EVIL},
                },
            }
            return {
                "method": "elicitation/create",
                "params": {"mode": "form", "message": text, "requestedSchema": schema},
            }
        if pick < 0.9:
            url = rng.choice(["https://example.com/x", "http://[::1]:8080/", "https://xn--pple-43d.com/"])
            return {"method": "elicitation/create", "params": {"mode": "url", "message": text, "url": url}}
        return {"method": "roots/list"}

    def pages(self, *, valid: bool) -> tuple[dict[str, Any], ...]:
        rng = self.rng
        cursors = [
            f"c{i}{EVIL}{rng.choice(ODD_TEXT)}" + "c" * rng.choice([0, 5_000])
            for i in range(rng.randint(1, 3))
        ]
        pages = [
            {"tools": [{"name": "fuzz", "inputSchema": {"type": "object"}}], "nextCursor": c} for c in cursors
        ]
        if valid:
            return (*pages, {"tools": []})
        bad = rng.choice([cursors[-1], 7, None, ["c"], ""])
        if bad is None or bad == "":
            bad = cursors[0]  # repeated
        return (*pages, {"tools": [], "nextCursor": bad})

    # --- the end of a call -----------------------------------------------------------------------

    def end(self, *, cursors: bool) -> None:
        rng = self.rng
        out = self.out
        pick = rng.random()
        if pick >= 0.8 and pick < 0.9 and not cursors:
            pick = 0.0  # a second -32020 would end the call as that error: a result instead
        if pick < 0.25:
            is_error = rng.random() < 0.3
            result = {"content": [{"type": "text", "text": EVIL + rng.choice(ODD_TEXT)}], "isError": is_error}
            out.steps.append(Step(result={**result, "resultType": "complete"}))
            out.ending = "tool-error" if is_error else "result"
        elif pick < 0.4:
            code = rng.choice([-32603, -32602, -1, 12345])
            out.steps.append(Step(error={"code": code, "message": EVIL * rng.choice([1, 2_000])}))
            out.ending, out.words = "failure", (f"JSON-RPC error {code}",)
        elif pick < 0.7:
            result, words = self.malformed()
            out.steps.append(Step(result=result))
            out.ending, out.words = "failure", words
        elif pick < 0.8:
            out.steps.append(Step(result=self.refused()))
            out.ending, out.words = "failure", ("input request",)
        elif pick < 0.9:
            out.steps.append(Step(error=_header_mismatch(), pages=self.pages(valid=False)))
            out.ending, out.words = "failure", ("tools/list returned a bad or repeated cursor",)
        else:
            raw = '{"resultType": "input_required", "requestState": "\\ud800 lone"}'
            out.steps.append(Step(result={}, raw=raw))  # a lone surrogate: not JSON the client reads
            out.ending, out.words = "failure", ("sent an invalid response",)

    def malformed(self) -> tuple[dict[str, Any], tuple[str, ...]]:
        rng = self.rng
        base: dict[str, Any] = {"resultType": "input_required"}
        key = self.key()
        return rng.choice(
            [
                ({**base, "inputRequests": [1, 2]}, ("inputRequests must be an object",)),
                ({**base, "inputRequests": {key: "sampling"}}, ("must be an object, not str",)),
                (
                    {**base, "inputRequests": {key: {"method": "tools/call" + EVIL}}},
                    ("is not an input request",),
                ),
                ({**base, "inputRequests": {key: {"method": 7}}}, ("is not an input request",)),
                (
                    {**base, "inputRequests": {key: {"method": "roots/list", "params": [EVIL]}}},
                    ("params must be an object",),
                ),
                ({**base, "requestState": {"s": EVIL}}, ("requestState must be a string",)),
                ({**base, "requestState": 1e308}, ("requestState must be a string",)),
                (base, ("needs inputRequests or requestState",)),
                ({**base, "inputRequests": {}}, ("it has neither (its inputRequests is empty)",)),
                ({**base, "inputRequests": None, "requestState": "s"}, ("inputRequests must be an object",)),
                ({**base, "requestState": None}, ("requestState must be a string, not null",)),
                ({"resultType": EVIL * 100, "content": []}, ("is not one this client knows",)),
            ]
        )

    def refused(self) -> dict[str, Any]:
        rng = self.rng
        entry = rng.choice(
            [
                {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": "many" + EVIL}},
                {
                    "method": "sampling/createMessage",
                    "params": {"messages": [{"role": "user"}], "maxTokens": True},
                },
                {
                    "method": "elicitation/create",
                    "params": {"mode": "url", "message": EVIL, "url": "https://%65vil.example/"},
                },
                {
                    "method": "elicitation/create",
                    "params": {"mode": "url", "message": "x", "url": "https://0x7f000001/"},
                },
                {
                    "method": "elicitation/create",
                    "params": {"mode": "form", "message": EVIL, "requestedSchema": {"type": "array"}},
                },
            ]
        )
        return {"resultType": "input_required", "inputRequests": {self.key(): entry}}


def _header_mismatch() -> dict[str, Any]:
    return {"code": -32020, "message": "Header mismatch: list the tools again" + EVIL}
