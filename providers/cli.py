"""Command-line pieces: ``host-receiver providers add|list|test|remove`` and ``run --provider/--model``.

(About 430 lines, one idea: the provider commands, from their arguments to what they print.)

The lead's ``host_receiver.cli`` calls :func:`add_providers_command` with its
subparsers and :func:`add_run_arguments` on its ``run`` parser, then dispatches
with ``args.func(args)`` (an exit code) and builds the registry with
:func:`registry_from_args`. ``python -m providers add|list|test|remove`` runs the
same commands on their own.

Rules: a key is read from a prompt (no echo), from stdin or from an
environment variable, and goes to the OS keyring only; it is never printed,
logged or written to the config file. A keyring that cannot keep it
(:func:`~providers.config._credentials.keyring_problem`) is named before the key is
asked for, with ``--runtime-key-env`` as the way out. ``add`` for a vendor's
API without ``--model`` lists the models from the API with the key given
(which checks the key too). ``providers`` alone lists, as ``providers list``
does. ``test`` makes one tiny call and says how long it took, or what failed
and what to do. Errors go to stderr with exit code 1.
"""

from __future__ import annotations

import argparse
import functools
import getpass
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import anyio

from host_receiver.errors import ConfigError, ProviderError
from host_receiver.sanitize import safe_url

from ._contract import ModelInfo
from ._registry import ProviderRegistry
from ._try import one_call, some, with_listed_models
from .config._build import VENDOR_BASE_URL, build_registry
from .config._config import (
    CONFIG_ENV,
    DEFAULT_BASE_URL,
    PROVIDER_TYPES,
    ProviderEntry,
    ProviderType,
    config_path,
    load_config,
    save_config,
)
from .config._credentials import (
    delete_key,
    find_key,
    keyring_key,
    keyring_problem,
    runtime_key_hint,
    store_key,
)

__all__ = ["add_providers_command", "add_run_arguments", "main", "parse_model_spec", "registry_from_args"]

Handler = Callable[[argparse.Namespace], int]

_MODEL_SPEC_HELP = (
    "a model this provider offers, repeatable: ID[,key=value...] with keys cost, speed, "
    "intelligence (0..1; cost 1 = cheapest), tools, images, audio (yes/no) and context "
    "(tokens), e.g. gpt-4o-mini,cost=0.9,speed=0.8,intelligence=0.6"
)


def add_providers_command(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """Register ``providers add|list|remove``; each sets ``func(args) -> int``."""
    parser = subparsers.add_parser(
        "providers",
        help="configure LLM providers and their API keys",
        description="Configure the LLM providers that serve sampling requests. "
        "API keys go to the OS keyring, never to the config file.",
    )
    _configure(parser)
    return parser


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--provider`` and ``--model`` to the ``run`` command."""
    parser.add_argument(
        "--provider",
        metavar="NAME",
        help="the provider that serves sampling: a configured entry, `echo` (offline), or "
        "`openai` (OPENAI_API_KEY / OPENAI_BASE_URL); default: all configured, else echo",
    )
    parser.add_argument(
        "--model", metavar="ID", help="always use this model (added to the provider if unlisted)"
    )


def registry_from_args(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> ProviderRegistry:
    """The registry for ``run``, from ``args.provider``, ``args.model`` and ``args.config``."""
    return build_registry(
        provider=getattr(args, "provider", None),
        model=getattr(args, "model", None),
        path=getattr(args, "config", None),
        environ=environ,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m providers``: the ``providers`` commands on their own."""
    parser = argparse.ArgumentParser(
        prog="python -m providers", description="Configure host-receiver's LLM providers."
    )
    _configure(parser)
    args = parser.parse_args(argv)
    handler: Handler = args.func
    return handler(args)


# --- parsers -------------------------------------------------------------------


def _configure(parser: argparse.ArgumentParser) -> None:
    config_help = f"the config file (default: ${CONFIG_ENV}, else {config_path(environ={})})"
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", metavar="PATH", help=config_help)
    actions = parser.add_subparsers(title="commands", metavar="{add,list,test,remove}")
    parser.set_defaults(func=_list, config=None)  # no action: list, as ``decisions`` does

    add = actions.add_parser(
        "add",
        parents=[common],
        help="add or update a provider and store its API key",
        description="Add a provider entry (or update the given settings of an existing one) "
        "and store its API key in the OS keyring. Without a key option, the key is asked "
        "for (no echo) on a terminal, or read from the first line of stdin. Without --model, "
        "the models are listed from the API with that key.",
    )
    add.add_argument("name", help="the entry's name, e.g. openai, anthropic, gemini, ollama, openrouter")
    add.add_argument(
        "--type",
        choices=PROVIDER_TYPES,
        help="openai: any OpenAI-compatible API; anthropic: the Anthropic Messages API; "
        "gemini: the Gemini API "
        "(default: the name's, when it is one of these, else openai)",
    )
    add.add_argument(
        "--base-url",
        metavar="URL",
        help=f"the API's base URL (default: the vendor's variable, e.g. $OPENAI_BASE_URL, else its URL, "
        f"e.g. {DEFAULT_BASE_URL})",
    )
    add.add_argument("--model", metavar="SPEC", action="append", help=_MODEL_SPEC_HELP)
    key = add.add_mutually_exclusive_group()
    key.add_argument("--api-key-env", metavar="VAR", help="read the key from $VAR now and store it")
    key.add_argument("--api-key-stdin", action="store_true", help="read the key from stdin")
    key.add_argument(
        "--runtime-key-env",
        metavar="VAR",
        help="store no key; read it from $VAR at every run (for machines without a keyring)",
    )
    key.add_argument("--no-key", action="store_true", help="the server needs no key (e.g. a local Ollama)")
    key.add_argument("--keep-key", action="store_true", help="change settings only; keep the stored key")
    add.add_argument("--timeout", type=float, metavar="SECONDS", help="connect/read timeout")
    add.add_argument("--max-retries", type=int, metavar="N", help="retries on 429/5xx/errors")
    add.add_argument("--no-stream", action="store_true", help="never stream (no progress reports)")
    add.add_argument(
        "--forward-metadata",
        action="store_true",
        help="pass the request's string metadata to the API",
    )
    add.add_argument(
        "--max-tokens-param",
        choices=["max_tokens", "max_completion_tokens"],
        help="how maxTokens is sent (default: max_completion_tokens for OpenAI/Azure, else max_tokens)",
    )
    add.add_argument(
        "--api-version",
        metavar="VERSION",
        help="anthropic: the anthropic-version to send (a date); gemini: the API version (default v1beta)",
    )
    add.add_argument("--delay", type=float, metavar="SECONDS", help="echo only: answer delay")
    add.set_defaults(func=_add)

    test = actions.add_parser(
        "test",
        parents=[common],
        help="make one tiny call to a provider and say how it went",
        description="Send one short sampling request to a provider (a configured entry, or echo, "
        "openai, anthropic, gemini) and print the model and the latency, or the cause of the failure "
        "and what to do.",
    )
    test.add_argument("name")
    test.add_argument("--model", metavar="ID", help="the model to call (default: the entry's first)")
    test.set_defaults(func=_test)

    show = actions.add_parser(
        "list",
        parents=[common],
        help="list providers, models and where their keys come from",
        description="List the configured providers. Keys are never shown, only their source.",
    )
    show.set_defaults(func=_list)

    remove = actions.add_parser(
        "remove",
        parents=[common],
        help="remove a provider and its stored key",
        description="Remove a provider entry and delete its key from the OS keyring.",
    )
    remove.add_argument("name")
    remove.add_argument("--keep-key", action="store_true", help="leave the stored key in place")
    remove.set_defaults(func=_remove)


def _guarded(handler: Callable[[argparse.Namespace], int]) -> Handler:
    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except ProviderError as exc:
            print(f"host-receiver: error: {exc}", file=sys.stderr)
            return 1
        except (KeyboardInterrupt, EOFError):
            print("host-receiver: cancelled", file=sys.stderr)
            return 1

    return run


# --- commands ----------------------------------------------------------------


@_guarded
def _add(args: argparse.Namespace) -> int:
    path = config_path(args.config)
    config = load_config(path)
    existing = config.entry(args.name)
    entry = _updated(existing or ProviderEntry(args.name, type=_type_of(args.name)), args)
    key_note = "no key needed"
    key: str | None = None
    if entry.type != "echo" and entry.api_key_required and not entry.api_key_env:
        if not args.keep_key:
            problem = keyring_problem(entry.name)
            if problem is not None:  # said before the key is asked for
                raise ConfigError(f"{problem}, so the key cannot be stored; {runtime_key_hint(entry.name)}")
            key = _read_key(args)
        key_note = "kept the stored key" if key is None and keyring_key(entry.name) else "no key stored yet"
    elif entry.api_key_env:
        key_note = f"key read from ${entry.api_key_env} at run time"
    listed = ""
    if entry.type != "echo" and not entry.models:
        entry = with_listed_models(entry, key)
        listed = f"; {len(entry.models)} models listed by the API: {some(m.id for m in entry.models)}"
    if key is not None:
        store_key(entry.name, key)
        key_note = "key stored in the OS keyring"
    save_config(config.with_entry(entry), path)
    verb = "updated" if existing else "added"
    where = safe_url(entry.base_url) if entry.base_url else "default URL"
    print(f"{verb} provider {entry.name!r} ({entry.type}, {where}){listed}; {key_note}; config: {path}")
    return 0


def _type_of(name: str) -> ProviderType:
    """A new entry's type: its name's when that is a vendor's, else ``openai``."""
    vendors: dict[str, ProviderType] = {"anthropic": "anthropic", "gemini": "gemini"}
    return vendors.get(name, "openai")


@_guarded
def _test(args: argparse.Namespace) -> int:
    registry = build_registry(provider=args.name, model=args.model, path=args.config)
    entry = load_config(config_path(args.config)).entry(args.name)
    if entry is None and args.name in VENDOR_BASE_URL:  # a vendor's defaults, without an entry
        entry = ProviderEntry(args.name, type=_type_of(args.name))
    found = find_key(entry, os.environ) if entry is not None and entry.type != "echo" else None
    return anyio.run(
        functools.partial(one_call, key_source=found.source if found else None), registry, args.name
    )


@_guarded
def _list(args: argparse.Namespace) -> int:
    path = config_path(args.config)
    config = load_config(path)
    print(f"# config: {path}")
    if not config.providers:
        print("no providers configured: sampling uses the offline echo provider")
        return 0
    for entry in config.providers:
        print(f"{entry.name}: {entry.type}, {_where(entry)}, key: {_key_source(entry, os.environ)}")
        for model in entry.models:
            print(f"  - {_describe_model(model)}")
        if entry.type != "echo" and not entry.models:
            print("  (no models listed here: the ones its API lists, read at every run)")
    for hint, target in config.aliases.items():
        print(f"alias: {hint} -> {target}")
    for server, models in config.servers.items():
        print(f"server {server}: allowed {', '.join(models) or 'nothing'}")
    return 0


@_guarded
def _remove(args: argparse.Namespace) -> int:
    path = config_path(args.config)
    config = load_config(path)
    present = config.entry(args.name) is not None
    if present:
        save_config(config.without_entry(args.name), path)
    deleted = False if args.keep_key else delete_key(args.name)
    if not present and not deleted:
        raise ConfigError(f"no provider named {args.name!r} in {path}")
    notes = [f"removed provider {args.name!r}" if present else f"no entry {args.name!r}"]
    if deleted:
        notes.append("deleted its stored key")
    print("; ".join(notes))
    return 0


# --- helpers -----------------------------------------------------------------


def _updated(entry: ProviderEntry, args: argparse.Namespace) -> ProviderEntry:
    changes: dict[str, Any] = {}
    for option, name in (
        ("type", "type"),
        ("base_url", "base_url"),
        ("timeout", "timeout"),
        ("max_retries", "max_retries"),
        ("max_tokens_param", "max_tokens_param"),
        ("api_version", "api_version"),
        ("delay", "delay"),
    ):
        if getattr(args, option) is not None:
            changes[name] = getattr(args, option)
    if args.no_stream:
        changes["stream"] = False
    if args.forward_metadata:
        changes["forward_metadata"] = True
    if args.no_key:
        changes.update(api_key_required=False, api_key_env=None)
    elif args.runtime_key_env:
        changes.update(api_key_required=True, api_key_env=args.runtime_key_env)
    elif args.api_key_env or args.api_key_stdin:
        changes.update(api_key_required=True, api_key_env=None)
    if args.model:
        changes["models"] = tuple(parse_model_spec(spec, entry.name) for spec in args.model)
    try:
        return replace(entry, **changes)
    except (TypeError, ValueError) as exc:
        raise ConfigError(str(exc)) from None


def _read_key(args: argparse.Namespace) -> str | None:
    """The key the user gives, or None with ``--keep-key``."""
    if args.keep_key:
        return None
    if args.api_key_env:
        key = os.environ.get(args.api_key_env, "")
        if not key:
            raise ConfigError(f"${args.api_key_env} is not set or empty")
        return key
    if args.api_key_stdin or not sys.stdin.isatty():
        key = sys.stdin.readline().strip()
    else:
        key = getpass.getpass(f"API key for {args.name} (input hidden): ").strip()
    if not key:
        raise ConfigError("no API key given (use --no-key for servers that need none)")
    return key


def parse_model_spec(spec: str, provider: str) -> ModelInfo:
    """``ID[,key=value...]`` (see ``providers add --help``) as a catalogue entry."""
    model_id, *pairs = [part.strip() for part in spec.split(",")]
    values: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip().lower()
        try:
            if key in ("cost", "speed", "intelligence"):
                values[key] = float(raw)
            elif key in ("tools", "images", "audio"):
                values[key] = _flag(raw if sep else "yes")
            elif key == "context":
                values["context_tokens"] = int(raw)
            else:
                raise ValueError(f"unknown key {key!r}")
        except ValueError as exc:
            raise ConfigError(f"--model {spec!r}: {exc}") from None
    try:
        return ModelInfo(id=model_id, provider=provider, **values)
    except ValueError as exc:
        raise ConfigError(f"--model {spec!r}: {exc}") from None


def _flag(raw: str) -> bool:
    value = raw.strip().lower()
    if value in ("yes", "true", "1", "on"):
        return True
    if value in ("no", "false", "0", "off"):
        return False
    raise ValueError(f"{raw!r} is not yes or no")


def _where(entry: ProviderEntry) -> str:
    if entry.type == "echo":
        return "offline"
    if entry.base_url:
        return safe_url(entry.base_url)
    variable, default = VENDOR_BASE_URL[entry.type]
    return f"${variable} or {safe_url(default)}"


def _key_source(entry: ProviderEntry, environ: Mapping[str, str]) -> str:
    """Where the key comes from: ``keyring``, ``from $VAR``, ``missing`` (or not needed)."""
    if entry.type == "echo" or not entry.api_key_required:
        return "not needed"
    found = find_key(entry, environ)
    if found is not None:
        return found.source
    if entry.api_key_env:
        return f"from ${entry.api_key_env} (not set here)"
    return "missing"


def _describe_model(model: ModelInfo) -> str:
    accepts = [k for k in ("tools", "images", "audio") if getattr(model, k)]
    return (
        f"{model.id} (cost {model.cost:g}, speed {model.speed:g}, intelligence "
        f"{model.intelligence:g}; accepts {', '.join(accepts) or 'text only'}; "
        f"context {model.context_tokens})"
    )
