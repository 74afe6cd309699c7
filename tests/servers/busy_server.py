"""A stdio MCP server with many sampling tasks in flight and a waiter on each, for shutdown tests.

Usage: python busy_server.py --tasks N --record FILE

After the handshake it starts a helper process of its own (which sleeps: a
stand-in for what ``npx`` or ``uv run`` leave behind), sends N task-augmented
``sampling/createMessage`` requests and one plain one (``plain``, which runs
inside its request), and for each task it gets sends ``tasks/result`` (the
waiter). Every event is appended to ``--record`` as one
JSON line as it happens: its pid and the helper's, each answer it receives,
``ready`` once all N waiters are sent, ``eof`` when its input ends (then it
exits 0). Run it with a provider that takes long, so that the tasks stay in
flight until the client is stopped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from _jsonlines import handshake, read, write


def main() -> None:
    count = int(sys.argv[sys.argv.index("--tasks") + 1])
    record = open(sys.argv[sys.argv.index("--record") + 1], "a", encoding="utf-8")  # noqa: SIM115

    def note(event: dict[str, Any]) -> None:
        record.write(json.dumps(event) + "\n")
        record.flush()

    waiters = 0
    if not handshake("busy"):
        return
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    note({"pid": os.getpid(), "helper": helper.pid})
    for index in range(count):
        params = {
            "messages": [{"role": "user", "content": {"type": "text", "text": f"task {index}"}}],
            "maxTokens": 20,
            "task": {"ttl": 600_000},
        }
        write(
            {"jsonrpc": "2.0", "id": f"create-{index}", "method": "sampling/createMessage", "params": params}
        )
    plain = {key: value for key, value in params.items() if key != "task"}  # runs in the request
    write({"jsonrpc": "2.0", "id": "plain", "method": "sampling/createMessage", "params": plain})
    while (message := read()) is not None:
        if message.get("method") is None:
            note({"answer": message})
            answer = message.get("result")
            if isinstance(answer, dict) and "task" in answer:
                params = {"taskId": answer["task"]["taskId"]}
                write(
                    {
                        "jsonrpc": "2.0",
                        "id": f"wait-{message['id']}",
                        "method": "tasks/result",
                        "params": params,
                    }
                )
                waiters += 1
                if waiters == count:
                    note({"ready": True})
    note({"eof": True})


if __name__ == "__main__":
    main()
