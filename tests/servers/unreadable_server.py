"""A stdio MCP server that sends messages too long to read or not JSON, then checks it is still served.

Usage: python unreadable_server.py SIZE

After the handshake it sends, each as one line: a request over SIZE bytes
(``big-1``), a request cut off in the middle (``broken-1``, not JSON), a
broken response to an id the client never used (77), a line of SIZE bytes
that is no message at all, and then ``ping`` (``ping-after``). It records every
answer the client sends. Tools: ``huge`` answers with a result over SIZE bytes
(the client cannot read it); ``report`` returns the recorded answers as JSON.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from _jsonlines import handshake, read, result, text_result, write, write_raw


def main() -> None:
    size = int(sys.argv[1])
    answers: list[dict[str, Any]] = []
    if not handshake("unreadable", capabilities={"tools": {}}):
        return
    text = json.dumps({"type": "text", "text": "a" * size})
    write_raw(
        '{"jsonrpc": "2.0", "id": "big-1", "method": "sampling/createMessage", '
        f'"params": {{"messages": [{{"role": "user", "content": {text}}}], "maxTokens": 5}}}}'
    )
    write_raw('{"jsonrpc": "2.0", "id": "broken-1", "method": "tasks/get", "params": {"taskId": tru')
    write_raw('{"jsonrpc": "2.0", "id": 77, "result": {"oops"')
    write_raw("x" * size)
    write({"jsonrpc": "2.0", "id": "ping-after", "method": "ping"})
    while (message := read()) is not None:
        method, request_id = message.get("method"), message.get("id")
        if method is None:
            answers.append(message)
        elif method == "tools/call" and message["params"]["name"] == "huge":
            write_raw(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": text_result("b" * size)}))
        elif method == "tools/call":
            result(request_id, text_result(json.dumps(answers)))
        elif request_id is not None and method != "ping":
            write({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no"}})


if __name__ == "__main__":
    main()
