"""A raw MCP server on stdio for the transport tests: no SDK, one JSON message per line.

Usage: python stdio_mcp_server.py [--version V | --modern]

``initialize`` answers the client's version when it is one this server knows,
else its newest; ``--version V`` forces the answer to V (to test negotiation).
``--modern`` makes it a 2026-07-28 server: it answers ``server/discover``
and every result carries ``resultType``.
``tools/list`` serves eight tools over three pages. ``tools/call`` by name:

- ``echo``: returns its arguments as JSON text;
- ``ask``: sends ``sampling/createMessage`` to the client, checks the answer's
  shape, and returns the text the client sampled; with ``arguments.params``
  it sends those params as they are and returns the client's whole answer
  (its ``result`` or its ``error``) as JSON text;
- ``garbage``: writes a line that is not JSON and a batch, reads the client's
  two error replies, and returns their codes;
- ``log``: writes ``arguments.text`` to stderr, then answers;
- ``env``: returns the value of the environment variable ``arguments.name``;
- ``big``: writes a line of ``arguments.size`` bytes that is no message, then answers;
- ``die``: exits at once, without answering;
- ``verbatim``: answers with ``arguments.result``, as it is.

``resources/read`` and ``prompts/get`` answer one text (the URI, the
prompt's name); when the request carries ``_meta.progressToken`` they first
send two ``notifications/progress`` under it (total 2, the message of the
first with an escape sequence in it).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from _jsonlines import error, read, result, text_result, write, write_raw

KNOWN_VERSIONS = ("2025-11-25", "2025-06-18")
TOOLS = [
    {"name": name, "inputSchema": {"type": "object"}}
    for name in ("echo", "ask", "garbage", "log", "die", "env", "big", "verbatim")
]
PAGES = {None: (0, 3, "p2"), "p2": (3, 6, "p3"), "p3": (6, 8, None)}
MODERN = "2026-07-28"
CAPABILITIES: dict[str, Any] = {"tools": {}, "resources": {}, "prompts": {}}


def main() -> None:
    forced = sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else None
    modern = "--modern" in sys.argv
    initialized = modern  # a modern server has no handshake
    while (message := read()) is not None:
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if method == "notifications/initialized":
            initialized = True
        elif method == "server/discover" and modern:
            info = {"io.modelcontextprotocol/serverInfo": {"name": "raw-stdio", "version": "1.0"}}
            discovered = {"supportedVersions": [MODERN], "capabilities": CAPABILITIES, "_meta": info}
            result(request_id, {"resultType": "complete", **discovered})
        elif method == "initialize":
            wanted = params["protocolVersion"]
            version = forced or (wanted if wanted in KNOWN_VERSIONS else KNOWN_VERSIONS[0])
            result(
                request_id,
                {
                    "protocolVersion": version,
                    "capabilities": CAPABILITIES,
                    "serverInfo": {"name": "raw-stdio", "version": "1.0"},
                    "instructions": f"client sent {json.dumps(params, sort_keys=True)}",
                },
            )
        elif method == "ping":
            result(request_id, {})
        elif method == "tools/list":
            start, stop, next_cursor = PAGES[params.get("cursor")]
            page: dict[str, Any] = {"tools": TOOLS[start:stop]}
            if next_cursor:
                page["nextCursor"] = next_cursor
            result(request_id, page)
        elif method == "tools/call" and initialized:
            call_tool(request_id, params["name"], params.get("arguments") or {})
        elif method in ("resources/read", "prompts/get") and initialized:
            answer_with_progress(request_id, method, params, modern)
        elif request_id is not None:
            error(request_id, -32601, f"Method not found: {method}")


def answer_with_progress(request_id: Any, method: str, params: dict[str, Any], modern: bool) -> None:
    token = (params.get("_meta") or {}).get("progressToken")
    if token is not None:
        for step, message in ((1, "warming \x1b[31mup"), (2, "done")):
            progress = {"progressToken": token, "progress": step, "total": 2, "message": message}
            write({"jsonrpc": "2.0", "method": "notifications/progress", "params": progress})
    if method == "resources/read":
        answer: dict[str, Any] = {"contents": [{"uri": params["uri"], "text": params["uri"]}]}
    else:
        answer = {"messages": [{"role": "user", "content": {"type": "text", "text": params["name"]}}]}
    result(request_id, {"resultType": "complete", **answer} if modern else answer)


def call_tool(request_id: Any, name: str, arguments: dict[str, Any]) -> None:
    if name == "echo":
        result(request_id, text_result(json.dumps(arguments, sort_keys=True)))
    elif name == "ask":
        plain = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 10}
        given = arguments.get("params")
        write({"jsonrpc": "2.0", "id": "s-1", "method": "sampling/createMessage", "params": given or plain})
        answer = read()
        if given is not None:
            outcome = (answer or {}).get("result", (answer or {}).get("error"))
            result(request_id, text_result(json.dumps(outcome)))
            return
        ok = (
            answer is not None
            and answer.get("id") == "s-1"
            and answer["result"]["role"] == "assistant"
            and answer["result"]["content"]["type"] == "text"
        )
        text = answer["result"]["content"]["text"] if ok and answer else f"bad answer {answer}"
        result(request_id, text_result(text, is_error=not ok))
    elif name == "garbage":
        write_raw("this is not JSON")
        write_raw('[{"jsonrpc":"2.0","id":1,"method":"ping"}]')
        replies = [read(), read()]
        codes = [reply["error"]["code"] for reply in replies if reply and "error" in reply]
        result(request_id, text_result(json.dumps(codes)))
    elif name == "log":
        print(arguments["text"], file=sys.stderr, flush=True)
        result(request_id, text_result("logged"))
    elif name == "env":
        result(request_id, text_result(os.environ.get(arguments["name"], "<unset>")))
    elif name == "big":
        write_raw("x" * arguments["size"])
        result(request_id, text_result("after big"))
    elif name == "die":
        sys.exit(3)
    elif name == "verbatim":
        result(request_id, arguments["result"])
    else:
        result(request_id, text_result(f"unknown tool {name}", is_error=True))


if __name__ == "__main__":
    main()
