"""``tools``, ``resources``, ``prompts``, ``read``, ``prompt``, ``call``: see what a server offers, use it.

Every command names its server as ``run`` does (``--url URL`` or ``-- COMMAND
[ARG...]`` at the end of the line), takes ``run``'s options (the hooks, the
protocol, roots: the server's sampling, elicitation and roots requests are
served meanwhile) and prints for a person, or JSON with ``--json``:

- ``tools``: each tool's name, title, first line of description, parameters
  (type, ``*`` required) and task support; ``--json``: ``{"tools": [...]}``,
  every page of ``tools/list`` merged.
- ``resources``: each resource and resource template; ``--json``:
  ``{"resources": [...], "resourceTemplates": [...]}``, every page.
- ``prompts``: each prompt and its arguments; ``--json``: ``{"prompts": [...]}``.
- ``read URI``: the resource's text (other content named); ``--json``: the
  ``ReadResourceResult``.
- ``prompt NAME [key=value ...]``: the prompt's messages; ``--json``: the
  ``GetPromptResult``. Prompt arguments are strings, taken as written.
- ``call TOOL [key=value ...]`` (and/or ``--args JSON``): a value is read as
  the type the tool's ``inputSchema`` gives its property (:func:`typed_values`:
  ``string`` stays text, ``integer``, ``number``, ``boolean``, ``array``,
  ``object`` and ``null`` are parsed as JSON; a value that does not fit is exit
  2 naming the property and the type); a property the schema does not type is
  JSON when it parses as JSON, else a string. On a terminal the result is shown
  readably; with ``--json`` or when stdout is not a terminal, the
  ``CallToolResult`` JSON. Exit codes as ``run --call``: 0, 1 when the result
  has ``isError`` true, 2 when the command could not do its job.

``read``, ``prompt`` and ``call`` ask for the server's progress and show it on
stderr (:mod:`host_receiver.cli._progress`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextlib import suppress
from functools import partial
from typing import Any

import anyio

from host_receiver.cli._hooks import EXIT_FAILURE, EXIT_OK, describe_error, safe_json
from host_receiver.cli._options import add_connection_options, usage_error
from host_receiver.cli._progress import ProgressDisplay
from host_receiver.cli._run import serve
from host_receiver.cli._show import add_task_option, call_and_print, readable_content
from host_receiver.cli._target import json_object, prepare
from host_receiver.client.host import ServerConnection
from host_receiver.protocol.results import ListedTool
from host_receiver.sanitize import safe_text

__all__ = ["add_discovery_commands", "key_values", "typed_values"]

_SERVER_USAGE = "(--server NAME | --url URL | -- COMMAND [ARG...])"
#: What a command asks its connected server, and prints: its exit code.
Query = Callable[[argparse.Namespace, ServerConnection], Awaitable[int]]


def add_discovery_commands(commands: Any) -> None:
    """The six commands, added to ``commands`` (an argparse subparsers object)."""
    listings = {
        "tools": "list the server's tools: parameters, required ones, task support",
        "resources": "list the server's resources and resource templates",
        "prompts": "list the server's prompts and their arguments",
    }
    for name, summary in listings.items():
        parser = _command(commands, name, summary, f"host-receiver {name} [OPTIONS] {_SERVER_USAGE}")
        parser.set_defaults(func=partial(_run, _LISTINGS[name]))
    read = _command(
        commands, "read", "read one resource", f"host-receiver read [OPTIONS] URI {_SERVER_USAGE}"
    )
    read.add_argument("uri", metavar="URI", help="the resource's URI")
    read.set_defaults(func=_read)
    prompt = _command(
        commands,
        "prompt",
        "get one prompt's messages",
        f"host-receiver prompt [OPTIONS] NAME [key=value ...] {_SERVER_USAGE}",
    )
    prompt.add_argument("prompt_name", metavar="NAME", help="the prompt's name")
    prompt.add_argument("pairs", nargs="*", metavar="key=value", help="an argument (a string)")
    prompt.set_defaults(func=_prompt)
    call = _command(
        commands,
        "call",
        "call one tool and show its result",
        f"host-receiver call [OPTIONS] TOOL [key=value ...] {_SERVER_USAGE}",
    )
    call.add_argument("tool", metavar="TOOL", help="the tool's name")
    call.add_argument(
        "pairs",
        nargs="*",
        metavar="key=value",
        help="an argument, read as the type the tool's inputSchema gives it (a string stays text: "
        "message=42 is the text 42; numbers, booleans, arrays and objects as JSON); where the schema "
        "gives no type, JSON when it parses as JSON (42, true, [1,2], {...}), else a string",
    )
    call.add_argument("--args", metavar="JSON", help="arguments as a JSON object (key=value ones win)")
    add_task_option(call)
    call.set_defaults(func=_call)


def _command(commands: Any, name: str, summary: str, usage: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        help=summary,
        description=f"{summary[0].upper()}{summary[1:]}, serving the server's sampling, elicitation "
        "and roots requests meanwhile (the options of 'run').",
        usage=usage,
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the result as JSON (the protocol's result; every page of a listing)",
    )
    add_connection_options(parser)
    parser.set_defaults(server_command=[])
    return parser


def key_values(pairs: Sequence[str], *, as_json: bool) -> dict[str, Any] | str:
    """``key=value`` arguments (values JSON when they parse and ``as_json``), or what is wrong."""
    values: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            return f"{pair!r} is not key=value"
        values[key] = text
        if as_json:
            with suppress(json.JSONDecodeError):
                values[key] = json.loads(text)
    return values


#: The JSON types a schema may name, and the Python values that are of each.
_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}
_EXAMPLES = {
    "integer": "a whole number, like 42",
    "number": "a number, like 2.5",
    "boolean": "true or false",
    "array": 'a JSON array, like [1, "a"]',
    "object": 'a JSON object, like {"k": 1}',
    "null": "null",
}


def typed_values(values: dict[str, str], schema: Any) -> dict[str, Any] | str:
    """``key=value`` texts read as the types the tool's ``inputSchema`` gives their properties,
    or what does not fit (naming the property and the type it wanted).

    A property typed ``string`` (also among others, when the text parses as none of them) keeps
    its text; ``integer``, ``number``, ``boolean``, ``array``, ``object`` and ``null`` are parsed
    as JSON. A property without a type (or not in the schema) is JSON when it parses, else text.
    """
    properties = _object(_object(schema).get("properties"))
    typed: dict[str, Any] = {}
    for key, text in values.items():
        kinds = _types(properties.get(key))
        try:
            parsed: Any = json.loads(text)
            parses = True
        except json.JSONDecodeError:
            parsed, parses = text, False
        fits = parses and any(_JSON_TYPES[k](parsed) for k in kinds if k in _JSON_TYPES)
        if not kinds or fits:
            typed[key] = parsed
        elif "string" in kinds or not any(k in _JSON_TYPES for k in kinds):
            typed[key] = text
        else:
            wanted = " or ".join(_EXAMPLES.get(k, k) for k in kinds)
            return f"{key}={text!r}: the tool's {key!r} takes {'/'.join(kinds)} ({wanted})"
    return typed


def _types(spec: Any) -> list[str]:
    """The JSON types a property's schema names (its ``type``, or its options' types)."""
    if not isinstance(spec, dict):
        return []
    kind = spec.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list):
        return [k for k in kind if isinstance(k, str)]
    kinds: list[str] = []
    for key in ("anyOf", "oneOf"):
        for option in spec.get(key) or []:
            kinds += [k for k in _types(option) if k not in kinds]
    return kinds


def _run(body: Query, args: argparse.Namespace, progress: ProgressDisplay | None = None) -> int:
    target = prepare(args)
    if isinstance(target, int):
        return target
    return anyio.run(serve, args, target, partial(_reporting_failures, body, args), progress)


async def _reporting_failures(body: Query, args: argparse.Namespace, server: ServerConnection) -> int:
    try:
        return await body(args, server)
    except Exception as exc:
        print(f"host-receiver {args.command_name}: {describe_error(exc)}", file=sys.stderr)
        return EXIT_FAILURE


async def _pages(server: ServerConnection, method: str, key: str) -> list[dict[str, Any]]:
    """Every item of a paginated ``method`` (``key``: the result's array), following ``nextCursor``."""
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    seen: set[str] = set()
    while True:
        page = await server.request(method, {"cursor": cursor} if cursor is not None else None)
        items.extend(i for i in page.get(key) or [] if isinstance(i, dict))
        cursor = page.get("nextCursor")
        if not isinstance(cursor, str) or cursor in seen:
            return items
        seen.add(cursor)


def _offers(server: ServerConnection, capability: str, what: str) -> bool:
    if capability in server.server_capabilities:
        return True
    print(f"{safe_text(server.name)} offers no {what}", file=sys.stderr)
    return False


async def _tools(args: argparse.Namespace, server: ServerConnection) -> int:
    listed = await server.list_tools() if _offers(server, "tools", "tools") else []
    tools = [tool.model_dump() for tool in listed]
    if args.json:
        print(safe_json({"tools": tools}))
        return EXIT_OK
    for tool in tools:
        print(_heading(tool))
        schema = _object(tool.get("inputSchema"))
        properties = _object(schema.get("properties"))
        required = set(schema.get("required") or [])
        if properties:
            shown = (
                f"{name}{'*' if name in required else ''}: {_type(spec)}" for name, spec in properties.items()
            )
            print(f"    parameters: {safe_text(', '.join(shown), None)}")
        support = _object(tool.get("execution")).get("taskSupport", "forbidden")
        print(f"    tasks: {safe_text(support)}")
    return EXIT_OK


async def _resources(args: argparse.Namespace, server: ServerConnection) -> int:
    offered = _offers(server, "resources", "resources")
    resources = await _pages(server, "resources/list", "resources") if offered else []
    templates = await _pages(server, "resources/templates/list", "resourceTemplates") if offered else []
    if args.json:
        print(safe_json({"resources": resources, "resourceTemplates": templates}))
        return EXIT_OK
    for resource in resources:
        print(_heading(resource, key="uri"))
    if templates:
        print("templates:")
        for template in templates:
            print(_heading(template, key="uriTemplate"))
    return EXIT_OK


async def _prompts(args: argparse.Namespace, server: ServerConnection) -> int:
    prompts = await _pages(server, "prompts/list", "prompts") if _offers(server, "prompts", "prompts") else []
    if args.json:
        print(safe_json({"prompts": prompts}))
        return EXIT_OK
    for prompt in prompts:
        print(_heading(prompt))
        arguments = [a for a in prompt.get("arguments") or [] if isinstance(a, dict)]
        if arguments:
            shown = (f"{a.get('name')}{'*' if a.get('required') else ''}" for a in arguments)
            print(f"    arguments: {safe_text(', '.join(shown), None)}")
    return EXIT_OK


_LISTINGS = {"tools": _tools, "resources": _resources, "prompts": _prompts}


def _heading(item: dict[str, Any], *, key: str = "name") -> str:
    """``key — title`` and the first line of the description, indented."""
    line = safe_text(item.get(key, "?"))
    extra = item.get("title") or (item.get("name") if key != "name" else None)
    if extra:
        line += f" — {safe_text(extra)}"
    if item.get("mimeType"):
        line += f" ({safe_text(item['mimeType'])})"
    description = str(item.get("description") or "").strip().splitlines()
    return line + (f"\n    {safe_text(description[0])}" if description else "")


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _type(spec: Any) -> str:
    if not isinstance(spec, dict):
        return "any"
    if isinstance(spec.get("enum"), list):
        return "one of " + "|".join(str(v) for v in spec["enum"])
    if isinstance(spec.get("anyOf"), list):
        return "|".join(_type(option) for option in spec["anyOf"])
    kind = spec.get("type", "any")
    return "|".join(str(k) for k in kind) if isinstance(kind, list) else str(kind)


def _read(args: argparse.Namespace) -> int:
    progress = ProgressDisplay()

    async def body(args: argparse.Namespace, server: ServerConnection) -> int:
        with progress.watching(args.uri) as on_progress:
            read = await server.read_resource(args.uri, on_progress=on_progress)
        result = read.model_dump()
        if args.json:
            print(safe_json(result))
        else:
            print(_joined(_resource_text(c) for c in result.get("contents") or []))
        return EXIT_OK

    return _run(body, args, progress)


def _resource_text(contents: Any) -> str:
    if isinstance(contents, dict) and isinstance(contents.get("text"), str):
        return safe_text(contents["text"], None, multiline=True)
    return readable_content({"type": "resource", "resource": contents})


def _prompt(args: argparse.Namespace) -> int:
    arguments = key_values(args.pairs, as_json=False)
    if isinstance(arguments, str):
        return usage_error(args, arguments)

    progress = ProgressDisplay()

    async def body(args: argparse.Namespace, server: ServerConnection) -> int:
        with progress.watching(args.prompt_name) as on_progress:
            got = await server.get_prompt(args.prompt_name, arguments or None, on_progress=on_progress)
        result = got.model_dump()
        if args.json:
            print(safe_json(result))
            return EXIT_OK
        for message in result.get("messages") or []:
            if isinstance(message, dict):
                print(f"{safe_text(message.get('role', '?'))}: {readable_content(message.get('content'))}")
        return EXIT_OK

    return _run(body, args, progress)


def _joined(parts: Iterable[str]) -> str:
    return "\n".join(parts) or "(no content)"


def _call(args: argparse.Namespace) -> int:
    arguments: dict[str, Any] = {}
    if args.args is not None:
        parsed = json_object(args.args)
        if isinstance(parsed, str):
            return usage_error(args, parsed)
        arguments = parsed
    pairs = key_values(args.pairs, as_json=False)
    if isinstance(pairs, str):
        return usage_error(args, pairs)
    as_json = args.json or not sys.stdout.isatty()
    target = prepare(args)
    if isinstance(target, int):
        return target
    progress = ProgressDisplay()

    async def call(server: ServerConnection) -> int:
        given = dict(arguments)
        if pairs:  # read as the tool's schema types them (JSON when it does not say)
            tool: ListedTool | None = None
            with suppress(Exception):  # no definition: the call says what is wrong
                tool = await server.tool_definition(args.tool)
            typed = typed_values(pairs, tool.input_schema if tool is not None else None)
            if isinstance(typed, str):
                return usage_error(args, typed)
            given.update(typed)
        return await call_and_print(
            args.tool, given, server, as_json=as_json, task=args.task or None, progress=progress
        )

    return anyio.run(serve, args, target, call, progress)
