"""docs/limits.md matches the code: every bound a user can set, and every fixed cap, with its value.

The rows are derived from the code, then compared with the tables parsed from
the markdown:

* Settable bounds: every field of a public dataclass, and every parameter of
  a public class's constructor and methods or of a public function, whose
  default is a number (or ``None`` with an ``int``/``float`` annotation, for
  dataclass fields); every option of the ``host-receiver`` parser that takes
  a number; every numeric key of the config file. Each needs a row naming it
  with its default, unless ``NOT_BOUNDS`` says why it is not a bound.
* Fixed caps: every module-level constant of ``host_receiver`` and
  ``providers`` whose value is a number. Each is either the default of a
  settable bound (named in that row's default), or a row of the second table
  with its value, named in its module's docstring (a ``Fixed caps`` line),
  unless ``NOT_CAPS`` says why it is not a cap.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import importlib
import inspect
import operator
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import host_receiver
import providers
from host_receiver.cli import build_parser
from host_receiver.notify import Duration
from providers import ModelInfo, SamplingLimits
from providers.config import _config

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "limits.md"
_PACKAGES = (host_receiver, providers)
#: Not searched for API arguments: the optional adapters (their libraries are not in the project's
#: environment), the command line (its options are read off its parser) and the entry points.
_SKIPPED_MODULES = re.compile(r"\.(adapters|cli|terminal|demo)(\.|$)|\.__main__$")

#: Numeric settings that do not bound anything, and why (a whole class, or one argument).
NOT_BOUNDS: dict[str, str] = {
    "Notice": "the data of one notification (which reminder, when), not a bound",
    "GeminiReply(tokens=)": "the output tokens the backend reported, read from its reply",
    "ModelInfo(cost=)": "a model's scores describe it for model choice",
    "ModelInfo(speed=)": "a model's scores describe it for model choice",
    "ModelInfo(intelligence=)": "a model's scores describe it for model choice",
    "[[providers.*.models]] cost": "a model's scores describe it for model choice",
    "[[providers.*.models]] speed": "a model's scores describe it for model choice",
    "[[providers.*.models]] intelligence": "a model's scores describe it for model choice",
    "EchoProvider(delay=)": "the offline echo provider's pretend latency",
    "ProviderEntry(delay=)": "the offline echo provider's pretend latency",
    "[providers.*] delay": "the offline echo provider's pretend latency",
    "providers add --delay": "the offline echo provider's pretend latency",
    "demo --llm-delay": "the offline echo provider's pretend latency",
    "StdioTransport(stderr_level=)": "a logging level",
    "Session": "the session is built by the connection; a host never passes its arguments",
    "safe_text(limit=)": "a helper's argument; its default is the fixed cap TEXT_LIMIT",
    "bounded(limit=)": "a helper's argument; its default is the fixed cap ID_LIMIT",
    "quote(limit=)": "a helper's argument; its default is the fixed cap _LIMIT",
    "read_limited(limit=)": "a helper's argument; its default is the fixed cap _MAX_DOCUMENT",
    "Approve": "a person's decision: the maxTokens they chose",
    "SamplingRequestView": "what a person is shown",
    "FormField": "a form field's constraints, from the server's schema",
    "Generation": "a progress report",
    "SamplingProgress": "a progress report",
    "Requirements": "an estimate computed from a request",
    "TaskRecord": "a stored task",
    "StoredAuthorization": "a stored authorization",
    "TokenSet": "what the authorization server answered",
    "RegisteredClient": "what the authorization server answered",
    "RemoteTask": "what a server reported about its task",
    "Event": "what a server sent in an SSE event",
    "Item": "a web inbox item: when it came, expires and was answered",
    "InboxItem": "a stored inbox item: when it came, expires, was answered, its lease",
    "ContinuableCall": "a stored call: its rounds, deadline, lease and creation",
    "Person": "a stored person: when they were added",
    "StoredRemoteTask": "a stored remote task: its ttl, creation and lease",
    "Decision": "a stored decision: when it was made",
    "AuditRow": "an audit row: its number and time",
    "Cursor": "where an HTTP event stream stands (the events seen so far)",
    "PlainSocketStream.receive(max_bytes=)": "anyio's stream interface; the pool reads _READ_SIZE",
}

#: Numeric module constants that are not caps, and why.
NOT_CAPS: dict[str, str] = {
    "host_receiver/errors.py:PARSE_ERROR": "a JSON-RPC or MCP error code",
    "host_receiver/errors.py:INVALID_REQUEST": "a JSON-RPC or MCP error code",
    "host_receiver/errors.py:METHOD_NOT_FOUND": "a JSON-RPC or MCP error code",
    "host_receiver/errors.py:INVALID_PARAMS": "a JSON-RPC or MCP error code",
    "host_receiver/errors.py:INTERNAL_ERROR": "a JSON-RPC or MCP error code",
    "host_receiver/errors.py:URL_ELICITATION_REQUIRED": "a JSON-RPC or MCP error code",
    "host_receiver/errors.py:USER_REJECTED": "a JSON-RPC or MCP error code",
    "host_receiver/protocol/modern.py": "2026-07-28 error codes",
    "host_receiver/transports/_http_exchange.py:CONNECTION_CLOSED": "an error code",
    "host_receiver/cli/_hooks.py": "the CLI's exit codes",
    "host_receiver/receiver/tasks/cursor.py": "the size of a cursor's MAC",
    "host_receiver/receiver/tasks/record.py": "the size of a task id",
    "host_receiver/client/_mirror.py": "JSON's safe integer range, from the spec",
    "providers/_selection.py": "the token estimate's rates",
}

_CONSTANT = r"_?[A-Z][A-Z0-9_]*"
_OPS: dict[type[ast.AST], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Pow: operator.pow,
}


def _number(node: ast.expr) -> int | float | None:
    """The value of a numeric expression (``64 * 1024``, ``2**53 - 1``), else None."""
    if isinstance(node, ast.Constant):
        value = node.value
        return value if isinstance(value, int | float) and not isinstance(value, bool) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left, right = _number(node.left), _number(node.right)
        if left is None or right is None:
            return None
        result: int | float = _OPS[type(node.op)](left, right)
        return result
    return None


def _literal(text: str) -> object:
    """A table cell's value: a number expression, or a Python literal (``None``, ``'clamp'``)."""
    node = ast.parse(text, mode="eval").body
    value = _number(node)
    return ast.literal_eval(node) if value is None else value


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# --- the code ----------------------------------------------------------------


def _module_names(package: Any) -> Iterator[str]:
    """Every module of ``package``, from its files (importing only what is searched)."""
    base = Path(package.__path__[0])
    for path in sorted(base.rglob("*.py")):
        parts = path.relative_to(base.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if not _SKIPPED_MODULES.search(name):
            yield name


def _public_objects() -> Iterator[Any]:
    """Every class and function a host can reach: in an ``__all__``, or public in a public module."""
    seen: set[int] = set()
    for name in (name for package in _PACKAGES for name in _module_names(package)):
        module = importlib.import_module(name)
        public = not any(part.startswith("_") for part in name.split("."))
        exported = getattr(module, "__all__", None)
        candidates = exported if exported is not None else [n for n in vars(module) if public]
        for attr in candidates:
            obj = getattr(module, attr)
            if attr.startswith("_") or id(obj) in seen:
                continue
            if inspect.isclass(obj) or inspect.isfunction(obj):
                if exported is None and obj.__module__ != name:
                    continue
                seen.add(id(obj))
                yield obj


def _numeric_annotation(annotation: object) -> bool:
    return bool(re.search(r"\b(int|float)\b", str(annotation)))


def _callables(obj: Any) -> Iterator[tuple[str, Callable[..., Any]]]:
    """``(label, callable)``: a class's constructor and public methods (with those it takes from the
    mixins of private modules it is made of, as ``ClientConnection``), or the function itself."""
    if not inspect.isclass(obj):
        yield obj.__name__, obj
        return
    parts = [obj, *(base for base in obj.__mro__[1:] if _private_module(base.__module__))]
    members: dict[str, Any] = {}
    for part in reversed(parts):
        members.update(vars(part))
    for name, member in members.items():
        function = getattr(member, "__func__", member)
        if inspect.isfunction(function) and (name == "__init__" or not name.startswith("_")):
            yield (obj.__name__ if name == "__init__" else f"{obj.__name__}.{name}"), function


def _private_module(name: str) -> bool:
    """Whether the module ``name`` is a private part of ``host_receiver`` or ``providers``."""
    parts = name.split(".")
    return parts[0] in ("host_receiver", "providers") and any(p.startswith("_") for p in parts[1:])


def api_arguments() -> tuple[dict[str, object], set[str]]:
    """Every argument with a default (``Owner(name=)``: default), and the bounds that need a row."""
    arguments: dict[str, object] = {}
    bounds: set[str] = set()
    for obj in _public_objects():
        if inspect.isclass(obj) and dataclasses.is_dataclass(obj):
            for f in dataclasses.fields(obj):
                key = f"{obj.__name__}({f.name}=)"
                arguments[key] = f.default
                if _is_number(f.default) or (f.default is None and _numeric_annotation(f.type)):
                    bounds.add(key)
            continue
        for label, function in _callables(obj):
            for p in inspect.signature(function).parameters.values():
                key = f"{label}({p.name}=)"
                arguments[key] = p.default
                if _is_number(p.default):
                    bounds.add(key)
    return arguments, bounds


def _subparsers(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, argparse.Action]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _subparsers(sub, f"{path} {name}".strip())
        elif action.option_strings:
            yield path, action


def cli_options() -> dict[str, object]:
    """Every option of ``host-receiver`` that takes a number (``run --max-input-rounds``) or a
    duration (``--inbox-timeout 10m``, its default in seconds): default."""
    options: dict[str, object] = {}
    for path, action in _subparsers(build_parser(), ""):
        kind = getattr(action.type, "__name__", "")
        if isinstance(action.default, Duration):
            options[f"{path} {action.option_strings[-1]}"] = action.default.seconds
        elif _is_number(action.default) or re.search(r"int|float", kind):
            options[f"{path} {action.option_strings[-1]}"] = action.default
    return options


def config_keys() -> dict[str, object]:
    """Every key of the config file a bound is set with (``[limits] max_tokens``): default."""
    limits = SamplingLimits()
    keys: dict[str, object] = {f"[limits] {k}": getattr(limits, k) for k in _config._LIMIT_KEYS}
    for f in dataclasses.fields(_config.ProviderEntry):
        if f.name in _config._ENTRY_KEYS and _is_number(f.default):
            keys[f"[providers.*] {f.name}"] = f.default
    for f in dataclasses.fields(ModelInfo):
        if _is_number(f.default):
            keys[f"[[providers.*.models]] {f.name}"] = f.default
    return keys


@functools.cache
def _module(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def module_constants() -> dict[str, int | float]:
    """Every numeric module-level constant (``path:NAME``): its value."""
    constants: dict[str, int | float] = {}
    for package in _PACKAGES:
        for path in sorted(Path(package.__path__[0]).rglob("*.py")):
            for statement in _module(path).body:
                if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
                    target, value = statement.targets[0], statement.value
                elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
                    target, value = statement.target, statement.value
                else:
                    continue
                number = _number(value)
                if isinstance(target, ast.Name) and re.fullmatch(_CONSTANT, target.id) and number is not None:
                    constants[f"{path.relative_to(ROOT).as_posix()}:{target.id}"] = number
    return constants


# --- the document ------------------------------------------------------------


def _table(heading: str) -> list[list[str]]:
    """The rows (cells, stripped) of the table under ``## heading`` in docs/limits.md."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]


def _ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


@dataclasses.dataclass(frozen=True)
class Bound:
    """One row of the settable bounds' table."""

    name: str
    default: object
    constant: str | None
    config: tuple[str, ...]
    cli: tuple[str, ...]
    api: tuple[str, ...]
    enforced: tuple[str, ...]


def bound_rows() -> list[Bound]:
    rows = []
    for name, default, config, cli, api, enforced in _table("Bounds you can set"):
        value, *rest = _ticked(default)
        constant = [t for t in rest if re.fullmatch(_CONSTANT, t)]
        rows.append(
            Bound(
                _ticked(name)[0],
                _literal(value),
                constant[0] if constant else None,
                tuple(_ticked(config)),
                tuple(_ticked(cli)),
                tuple(_ticked(api)),
                tuple(_ticked(enforced)),
            )
        )
    return rows


def cap_rows() -> dict[str, object]:
    """``path:NAME``: the value the second table gives."""
    caps = {}
    for module, name, value, _ in _table("Fixed caps"):
        caps[f"{_ticked(module)[0]}:{_ticked(name)[0]}"] = _literal(_ticked(value)[0])
    return caps


# --- the checks --------------------------------------------------------------


@pytest.fixture(scope="module")
def rows() -> list[Bound]:
    return bound_rows()


def _unlisted(derived: set[str], listed: set[str]) -> list[str]:
    """What ``derived`` has that no row lists and ``NOT_BOUNDS`` does not explain."""
    explained = {k for k in derived if k in NOT_BOUNDS or re.split(r"[(.]", k)[0] in NOT_BOUNDS}
    return sorted(derived - listed - explained)


def test_every_settable_api_argument_has_a_row_with_its_default(rows: list[Bound]) -> None:
    arguments, bounds = api_arguments()
    for row in rows:
        for api in row.api:
            assert api in arguments, f"{api}: no such argument in the code (docs/limits.md)"
            assert arguments[api] == row.default, f"{api}: the code's default is {arguments[api]!r}"
    listed = {api for row in rows for api in row.api}
    missing = _unlisted(bounds, listed)
    assert not missing, f"settable bounds without a row in docs/limits.md: {missing}"


def test_every_cli_option_has_a_row_with_its_default(rows: list[Bound]) -> None:
    options = cli_options()
    for row in rows:
        for flag in row.cli:
            assert flag in options, f"{flag}: no such numeric option of host-receiver (docs/limits.md)"
            if options[flag] is not None:
                assert options[flag] == row.default, f"{flag}: the parser's default is {options[flag]!r}"
    listed = {flag for row in rows for flag in row.cli}
    missing = _unlisted(set(options), listed)
    assert not missing, f"numeric CLI options without a row in docs/limits.md: {missing}"


def test_every_config_key_has_a_row_with_its_default(rows: list[Bound]) -> None:
    keys = config_keys()
    for row in rows:
        for key in row.config:
            assert key in keys, f"{key}: the config file has no such key (docs/limits.md)"
            assert keys[key] == row.default, f"{key}: the default is {keys[key]!r}"
    listed = {key for row in rows for key in row.config}
    missing = _unlisted(set(keys), listed)
    assert not missing, f"config keys without a row in docs/limits.md: {missing}"


def test_every_row_names_where_it_is_enforced(rows: list[Bound]) -> None:
    for row in rows:
        assert row.api or row.cli or row.config, f"{row.name}: the row says nowhere to set it"
        assert row.enforced, f"{row.name}: the row names no module that enforces it"
        for module in row.enforced:
            assert (ROOT / module).is_file(), f"{row.name}: {module} does not exist"


def test_every_fixed_cap_is_listed_with_its_value_and_named_at_its_module_top(rows: list[Bound]) -> None:
    constants = module_constants()
    defaults = {row.constant: row.default for row in rows if row.constant}
    gone = set(defaults) - {key.split(":")[1] for key in constants}
    assert not gone, f"defaults named in docs/limits.md but not in the code: {gone}"
    caps = {}
    for key, value in constants.items():
        path, name = key.split(":")
        if path in NOT_CAPS or key in NOT_CAPS:
            continue
        if name in defaults:
            assert defaults[name] == value, f"{key} is {value!r}; docs/limits.md says {defaults[name]!r}"
            continue
        caps[key] = value
    table = cap_rows()
    assert table == caps, "docs/limits.md's fixed caps differ from the code"
    for key in caps:
        path, name = key.split(":")
        docstring = ast.get_docstring(_module(ROOT / path)) or ""
        named = docstring.split("Fixed caps", 1)[1] if "Fixed caps" in docstring else ""
        assert re.search(rf"\b{name}\b", named), f"{path}: its docstring's 'Fixed caps' line omits {name}"


def test_the_table_is_linked_from_the_readme_and_the_architecture() -> None:
    for doc in ("README.md", "docs/architecture.md"):
        assert "limits.md" in (ROOT / doc).read_text(encoding="utf-8"), f"{doc} does not link docs/limits.md"
