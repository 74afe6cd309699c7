"""A stdio MCP server that fuzzes its client: generated frames in, every answer checked.

Usage: python fuzz_server.py --seed S --count N --report FILE [--wait SECONDS]

After the handshake it sends N frames from tests/security/fuzz_frames.py
(malformed and adversarial requests, envelopes, cut frames, garbage,
notifications) while a reader thread collects the client's answers. Each
answer must be a schema-valid JSON-RPC message (tests/schema.py, the official
2025-11-25 schema; a result also valid for its method); each request must be
answered as often as its frame says; no answer may come for an id that is not
owed one. At the end a ``ping`` and a ``tasks/list`` check that the client
still serves. It waits at most ``--wait`` seconds for what is still owed, then
writes its report as JSON to ``--report`` and exits 0. stdout is the protocol
channel; nothing else is printed there.
"""

from __future__ import annotations

import argparse
import json
import queue
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: tests.*

from _jsonlines import handshake

from tests.schema import RESULT_OF, validate
from tests.security.fuzz_frames import Frame, Fuzzer, usable_id

#: An error reply may quote the request's id in full, and otherwise stays small.
ERROR_BUDGET = 12_000
CRASH_MESSAGES = ("Internal error", "Internal error while serving")


class Book:
    """What is owed and what came: the answers by id, checked as they arrive."""

    def __init__(self, fuzzer: Fuzzer) -> None:
        self.fuzzer = fuzzer
        self.owed: dict[Any, tuple[int, int]] = {}
        self.method: dict[Any, str | None] = {}
        self.got: Counter[Any] = Counter()
        self.unmatched = 0
        self.problems: list[str] = []
        self.kinds: Counter[str] = Counter()
        self.lock = threading.Lock()

    def sent(self, frame: Frame) -> None:
        with self.lock:
            self.kinds[frame.kind] += 1
            if frame.kind == "cancel":  # its target may now go unanswered
                if frame.id in self.owed and self.got[frame.id] == 0:
                    self.owed[frame.id] = (0, self.owed[frame.id][1])
            elif frame.id is not None:
                self.owed[frame.id] = frame.answers
                self.method[frame.id] = frame.method

    def answer(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            self.problem(f"not JSON: {line[:200]!r}")
            return
        if not isinstance(message, dict):
            self.problem(f"not an object: {line[:200]!r}")
            return
        if "method" in message:  # the client's notifications (task status, progress)
            self.check("JSONRPCMessage", message, line)
            return
        self.check("JSONRPCMessage", message, line)
        with self.lock:
            self.fuzzer.learn(message)
            if "id" not in message:
                self.unmatched += 1
                return
            answer_id = message["id"]
            self.got[answer_id] += 1
            high = self.owed.get(answer_id, (0, 0))[1]
            if self.got[answer_id] > high:
                self.problem(f"answer not owed (#{self.got[answer_id]}) for id {answer_id!r:.80}")
            method = self.method.get(answer_id)
        error = message.get("error")
        if isinstance(error, dict):
            if error.get("message") in CRASH_MESSAGES:
                self.problem(f"internal error for {method}: {line[:300]!r}")
            if len(line) - len(json.dumps(answer_id)) > ERROR_BUDGET:
                self.problem(f"error reply of {len(line)} bytes for id {answer_id!r:.80}")
        elif method in RESULT_OF and isinstance(message.get("result"), dict):
            result = message["result"]
            task = method in ("sampling/createMessage", "elicitation/create") and "task" in result
            self.check("CreateTaskResult" if task else RESULT_OF[method], result, line)

    def check(self, definition: str, instance: Any, line: bytes) -> None:
        try:
            validate(definition, instance)
        except Exception as exc:  # jsonschema.ValidationError, or a schema that cannot be read
            self.problem(f"not a valid {definition}: {str(exc)[:300]} in {line[:300]!r}")

    def problem(self, text: str) -> None:
        if len(self.problems) < 200:
            self.problems.append(text)

    def unanswered(self) -> list[Any]:
        with self.lock:
            return [i for i, (low, _) in self.owed.items() if self.got[i] < low]


def read_lines(lines: queue.Queue[bytes | None]) -> None:
    for line in sys.stdin.buffer:
        lines.put(line)
    lines.put(None)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--report", required=True)
    parser.add_argument("--wait", type=float, default=30.0)
    args = parser.parse_args()
    out = sys.stdout.buffer
    if not handshake("fuzz"):
        return
    fuzzer = Fuzzer(args.seed)
    book = Book(fuzzer)
    lines: queue.Queue[bytes | None] = queue.Queue()
    threading.Thread(target=read_lines, args=(lines,), daemon=True).start()
    started = time.monotonic()
    closed = False

    def drain(timeout: float | None) -> None:
        nonlocal closed
        try:
            line = lines.get(timeout=timeout)
            while True:
                if line is None:
                    closed = True
                    return
                book.answer(line)
                line = lines.get_nowait()
        except queue.Empty:
            return

    batch: list[bytes] = []
    for frame in fuzzer.frames(args.count):
        book.sent(frame)
        batch.append(frame.data + b"\n")
        if len(batch) >= 20:
            out.write(b"".join(batch))
            out.flush()
            batch.clear()
            drain(0)
    finals = [
        Frame(b'{"jsonrpc": "2.0", "id": "final-ping", "method": "ping"}', "final-ping", (1, 1), "ping"),
        Frame(
            b'{"jsonrpc": "2.0", "id": "final-list", "method": "tasks/list"}',
            "final-list",
            (1, 1),
            "tasks/list",
        ),
    ]
    for frame in finals:
        book.sent(frame)
        batch.append(frame.data + b"\n")
    out.write(b"".join(batch))
    out.flush()
    sent_at = time.monotonic()
    deadline = sent_at + args.wait
    while not closed and book.unanswered() and time.monotonic() < deadline:
        drain(0.1)
    drain(0.2)  # answers that came twice would come now
    missing = book.unanswered()
    report = {
        "seed": args.seed,
        "frames": args.count,
        "kinds": dict(book.kinds),
        "requests_owed": sum(1 for low, _ in book.owed.values() if low > 0),
        "answers": sum(book.got.values()),
        "answers_without_id": book.unmatched,
        "unanswered": len(missing),
        "unanswered_ids": [repr(i)[:80] for i in missing[:20]],
        "problems": book.problems,
        "still_serving": book.got["final-ping"] == 1 and book.got["final-list"] == 1,
        "client_closed": closed,
        "seconds_sending": round(sent_at - started, 2),
        "seconds_total": round(time.monotonic() - started, 2),
        "all_ids_usable": all(usable_id(i) for i in book.owed),
    }
    Path(args.report).write_text(json.dumps(report, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
