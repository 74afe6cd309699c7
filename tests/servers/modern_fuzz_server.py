"""A hostile 2026-07-28 stdio server: one tools/call answered with a seeded script of input rounds.

Usage: python modern_fuzz_server.py --seed S --call N --report FILE

It answers ``server/discover`` (a modern server, with escapes in its name),
then plays :func:`tests.security.fuzz_rounds.script` for ``(S, N)``: each
``tools/call`` attempt gets the next step, each ``tools/list`` the next page.
It checks every request the client sends: valid by the 2026-07-28 schema;
a retry carries ``requestState`` exactly as the last round sent it (absent
when there was none, and after a -32020 the call starts afresh), and
``inputResponses`` under exactly that round's keys, each the answer its
method calls for; a ``tools/list`` cursor is the last page's ``nextCursor``
byte for byte. When its input ends it writes its report as JSON to
``--report`` (what it saw, the problems, the longest wait for a retry) and
exits 0. stdout is the protocol channel; nothing else is printed there.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: tests.*

from _jsonlines import error, read, result, write_raw

from tests.schema import MODERN, validate_modern_request
from tests.security.fuzz_rounds import EVIL, Step, script

SERVER_INFO = {"name": "fuzz" + EVIL, "version": "1" + EVIL}


class Player:
    """Plays one script and checks what comes back."""

    def __init__(self, steps: list[Step]) -> None:
        self.steps = list(steps)
        self.pages: list[dict[str, Any]] = []
        self.cursor: object = None  # the nextCursor the client must send back
        self.asked: dict[str, Any] | None = None  # the last input_required result sent
        self.asked_at = 0.0
        self.attempts = 0
        self.rounds_answered = 0
        self.longest_wait = 0.0
        self.problems: list[str] = []

    def problem(self, text: str) -> None:
        if len(self.problems) < 50:
            self.problems.append(text[:500])

    def serve(self, message: dict[str, Any]) -> None:
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            return  # a notification
        try:
            validate_modern_request(message)
        except Exception as exc:  # jsonschema.ValidationError or AssertionError
            self.problem(f"{method} is not a valid 2026-07-28 request: {str(exc)[:300]}")
        params = message.get("params") or {}
        if method == "server/discover":
            meta = {"io.modelcontextprotocol/serverInfo": SERVER_INFO}
            answer = {"supportedVersions": [MODERN], "capabilities": {"tools": {}}, "_meta": meta}
            result(request_id, {"resultType": "complete", **answer})
        elif method == "tools/call":
            self.call(request_id, params)
        elif method == "tools/list":
            self.list_page(request_id, params)
        else:
            error(request_id, -32601, f"Method not found: {method}")

    def call(self, request_id: Any, params: dict[str, Any]) -> None:
        self.attempts += 1
        if params.get("name") != "fuzz":
            self.problem(f"called {params.get('name')!r:.80}")
        if self.asked is not None:
            self.check_retry(params)
        elif "requestState" in params or "inputResponses" in params:
            self.problem("a first attempt carried requestState or inputResponses")
        if not self.steps:
            self.problem(f"attempt {self.attempts} is beyond the script")
            error(request_id, -32603, "beyond the script")
            return
        step = self.steps.pop(0)
        self.asked = None
        if step.error is not None:
            self.pages = list(step.pages)
            self.cursor = None
            error(request_id, step.error["code"], step.error["message"])
            return
        assert step.result is not None
        if step.raw is not None:
            write_raw(f'{{"jsonrpc": "2.0", "id": {json.dumps(request_id)}, "result": {step.raw}}}')
            return
        if step.result.get("resultType") == "input_required":
            self.asked, self.asked_at = step.result, time.monotonic()
        result(request_id, step.result)

    def check_retry(self, params: dict[str, Any]) -> None:
        assert self.asked is not None
        self.longest_wait = max(self.longest_wait, time.monotonic() - self.asked_at)
        state = self.asked.get("requestState")
        if params.get("requestState") != state or (state is None and "requestState" in params):
            self.problem(f"requestState came back as {str(params.get('requestState'))[:80]!r}")
        wanted = self.asked.get("inputRequests") or {}
        answers = params.get("inputResponses")
        if not wanted:
            if answers is not None:
                self.problem("inputResponses for a round that asked for none")
        elif not isinstance(answers, dict) or set(answers) != set(wanted):
            self.problem(f"inputResponses under keys {sorted(answers or {})!r:.200}")
        else:
            for key, entry in wanted.items():
                self.check_answer(entry["method"], answers[key])
        self.rounds_answered += 1

    def check_answer(self, method: str, answer: Any) -> None:
        good = isinstance(answer, dict) and (
            (method == "sampling/createMessage" and answer.get("role") == "assistant" and "content" in answer)
            or (method == "elicitation/create" and answer.get("action") in ("accept", "decline", "cancel"))
            or (method == "roots/list" and isinstance(answer.get("roots"), list))
        )
        if not good:
            self.problem(f"{method} answered with {str(answer)[:200]}")

    def list_page(self, request_id: Any, params: dict[str, Any]) -> None:
        if "cursor" not in params and not self.pages:
            # A new listing once the scripted ones are over (the CLI names the server's tools
            # after a failed call): one page. A cursor beyond the script is still a problem.
            self.cursor = None
            result(request_id, {"tools": [{"name": "fuzz", "inputSchema": {"type": "object"}}]})
            return
        if params.get("cursor") != self.cursor or (self.cursor is None and "cursor" in params):
            self.problem(f"tools/list cursor came back as {str(params.get('cursor'))[:80]!r}")
        if not self.pages:
            self.problem("tools/list beyond the script's pages")
            result(request_id, {"tools": []})
            return
        page = self.pages.pop(0)
        self.cursor = page.get("nextCursor")
        result(request_id, page)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--call", type=int, required=True)
    parser.add_argument("--report", required=True)
    args = parser.parse_args()
    player = Player(script(args.seed, args.call).steps)
    while (message := read()) is not None:
        player.serve(message)
    report = {
        "attempts": player.attempts,
        "rounds_answered": player.rounds_answered,
        "steps_left": len(player.steps),
        "pages_left": len(player.pages),
        "longest_wait": round(player.longest_wait, 3),
        "problems": player.problems,
    }
    Path(args.report).write_text(json.dumps(report), encoding="utf-8")


if __name__ == "__main__":
    main()
