"""The client command the conformance runner starts for its auth scenarios: its context, as CLI options.

The runner (tests/interop/test_conformance_auth.py) runs
``python tests/interop/conformance_client.py SERVER_URL`` with
``MCP_CONFORMANCE_SCENARIO`` and, for pre-registered credentials,
``MCP_CONFORMANCE_CONTEXT`` (JSON) set. This script only translates them into
``host-receiver run --url SERVER_URL --call test-tool`` options, as a user
would type them, and runs the CLI in this process:

- always ``--auth-browser none`` (the runner's authorization endpoint
  redirects at once) and a fresh ``--auth-token-file`` (so no run touches the
  user's keyring);
- ``--auth-client-metadata-url`` with the runner's fixed document URL only in
  the scenario that tests client ID metadata documents (``auth/basic-cimd``).
  The runner never serves that document; ``auth/offline-access-scope`` also
  advertises metadata document support, and there a client that used the
  URL would leave the runner unable to read its ``grant_types`` (an INFO
  check), so that scenario's client registers (its ``grant_types`` are then
  checked, SUCCESS);
- ``client_id`` -> ``--auth-client-id``; ``client_secret`` ->
  ``$HOST_RECEIVER_CLIENT_SECRET``; ``private_key_pem`` -> a 0600 key file for
  ``--auth-client-key``;
- ``idp_id_token`` and the IdP fields -> ``--auth-grant id-jag`` with
  ``$HOST_RECEIVER_ID_TOKEN``; ``valid_jwt`` (workload identity) ->
  ``--auth-grant jwt-bearer`` with ``$HOST_RECEIVER_ASSERTION``; scenarios
  named ``auth/client-credentials-*`` ->
  ``--auth-grant client-credentials`` (their context has the same shape as
  pre-registration's, which uses the code grant).

The next runner's client scenarios that are not ``auth/*``
(tests/interop/test_conformance_next.py) name the tools to call in the
context's ``toolCalls`` (``[{name, arguments}]``): each is one ``run --call``
in turn; without ``toolCalls`` the client calls every tool ``tools --json``
lists, each with arguments made from its schema's required properties (a
number 1, a string "x", ...), as a user trying a server would. The exit code
is the worst of the calls'. Three scenarios ask the driver for more, as their
descriptions say: ``json-schema-ref-no-deref`` only lists the tools (its server
has no ``tools/call``; the check is that listing fetches no ``$ref``);
``json-schema-2020-12-preservation`` passes the ``inputSchema`` it listed for
one tool back verbatim as the ``schema`` argument of the other (the one whose
only required property is ``schema``); ``elicitation-sep1034-client-defaults``
answers forms with ``--elicit defaults``.
"""

from __future__ import annotations

import io
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

#: The client metadata document URL the runner's CIMD scenario expects (it is never fetched).
CIMD_URL = "https://conformance-test.local/client-metadata.json"
#: The scenarios that test client ID metadata documents: the only ones given CIMD_URL.
CIMD_SCENARIOS = frozenset({"auth/basic-cimd"})
#: Options some scenarios' descriptions ask of the client, by scenario.
SCENARIO_OPTIONS = {"elicitation-sep1034-client-defaults": ["--elicit", "defaults"]}
#: A value of each JSON type, for a required argument the context does not give.
SAMPLES: dict[str, Any] = {
    "number": 1,
    "integer": 1,
    "string": "x",
    "boolean": False,
    "object": {},
    "array": [],
}


def arguments(
    server_url: str,
    scenario: str,
    context: dict[str, Any],
    workdir: Path,
    tool: str = "test-tool",
    tool_arguments: dict[str, Any] | None = None,
) -> list[str]:
    """The ``host-receiver`` argv for one scenario; secrets go to the environment, not here."""
    argv = [
        "--log-level",
        "INFO",
        "run",
        "--url",
        server_url,
        "--call",
        tool,
        "--args",
        json.dumps(tool_arguments or {}),
        "--auth-browser",
        "none",
        "--auth-token-file",
        str(workdir / "tokens.json"),
    ]
    if scenario in CIMD_SCENARIOS:
        argv += ["--auth-client-metadata-url", CIMD_URL]
    if "client_id" in context:
        argv += ["--auth-client-id", context["client_id"]]
    if "client_secret" in context:
        os.environ["HOST_RECEIVER_CLIENT_SECRET"] = context["client_secret"]
    if "private_key_pem" in context:
        key = workdir / "client-key.pem"
        key.touch(mode=0o600)
        key.write_text(context["private_key_pem"])
        argv += ["--auth-client-key", str(key)]
    if "idp_id_token" in context:
        os.environ["HOST_RECEIVER_ID_TOKEN"] = context["idp_id_token"]
        argv += [
            "--auth-grant",
            "id-jag",
            "--auth-idp-token-endpoint",
            context["idp_token_endpoint"],
            "--auth-idp-client-id",
            context["idp_client_id"],
        ]
    elif "valid_jwt" in context:
        os.environ["HOST_RECEIVER_ASSERTION"] = context["valid_jwt"]
        argv += ["--auth-grant", "jwt-bearer"]
    elif scenario.startswith("auth/client-credentials-"):
        argv += ["--auth-grant", "client-credentials"]
    return argv


def exit_code(argv: Sequence[str]) -> int:
    """Run the CLI in this process with ``argv``; its exit code."""
    from host_receiver.cli import main as cli_main

    try:
        cli_main(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    return 0


def tool_calls(server_url: str, scenario: str, context: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The context's ``toolCalls``, or a call of every tool the server lists (module docstring)."""
    asked = context.get("toolCalls")
    if isinstance(asked, list):
        return [(str(call["name"]), dict(call.get("arguments") or {})) for call in asked]
    listing = io.StringIO()
    with redirect_stdout(listing):
        exit_code(["tools", "--json", "--url", server_url])
    tools: list[dict[str, Any]] = json.loads(listing.getvalue() or '{"tools": []}')["tools"]
    if scenario == "json-schema-ref-no-deref":
        return []
    if scenario == "json-schema-2020-12-preservation":
        [echo] = [t for t in tools if t["inputSchema"].get("required") == ["schema"]]
        [focal] = [t for t in tools if t is not echo]
        return [(str(echo["name"]), {"schema": focal["inputSchema"]})]
    return [(str(tool["name"]), _sample_arguments(tool["inputSchema"])) for tool in tools]


def _sample_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties") or {}
    return {
        name: SAMPLES.get(str((properties.get(name) or {}).get("type")), "x")
        for name in schema.get("required") or []
    }


def main() -> None:
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    server_url = sys.argv[-1]
    with tempfile.TemporaryDirectory(prefix="conformance-client-") as workdir:
        if scenario.startswith("auth/"):
            raise SystemExit(exit_code(arguments(server_url, scenario, context, Path(workdir))))
        options = SCENARIO_OPTIONS.get(scenario, [])
        codes = [
            exit_code([*arguments(server_url, scenario, context, Path(workdir), name, args), *options])
            for name, args in tool_calls(server_url, scenario, context)
        ]
        raise SystemExit(max(codes, default=0))


if __name__ == "__main__":
    main()
