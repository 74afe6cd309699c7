"""The adapters against the real client libraries and the real peer servers.

Each adapter runs where it would in a host: in a venv holding host-receiver with
that adapter's extra (``.peers/adapter-*``, made by ``.ci/install-adapters``),
beside the client library it adapts; this process never imports ``mcp``. A
driver (tests/interop/adapters/) connects the library's client plus the adapter
to a peer server over stdio and Streamable HTTP, runs its scenarios, and prints
what the server reported it received and what the host side saw (approval and
form views, cancelled work, audit lines). One driver run per adapter and
transport serves every test of that pair; the assertions are on the server's
reports first.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.interop import (
    ADAPTER_DRIVERS,
    FASTMCP_SERVER,
    PY2_SERVER,
    PY_SERVER,
    AdapterEnv,
    adapter_python,
    peer_command,
    peer_python,
)
from tests.interop.conftest import HttpPeers
from tests.interop.test_modern_peers import http_peer

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DRIVER_TIMEOUT_S = 90
TRANSPORTS = ["stdio", "http"]
ECHO = "echo-offline"
MCP1_TTL_DEFAULT, MCP1_TTL_MAX = 90_000, 120_000  # the drivers' ReceiverConfig


def drive(python: Path, driver: str, *args: str) -> dict[str, Any]:
    """Run one driver in its adapter venv; return its JSON (scenarios, host)."""
    done = subprocess.run(
        [str(python), str(ADAPTER_DRIVERS / driver), *args],
        capture_output=True,
        text=True,
        timeout=DRIVER_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, f"{driver} failed: {done.stderr[-3000:]}"
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def views(out: dict[str, Any], **match: Any) -> list[dict[str, Any]]:
    """The host's views (approval prompts, forms, URLs) with the given fields."""
    return [v for v in out["host"]["views"] if all(v.get(k) == want for k, want in match.items())]


def rounds(report: dict[str, Any]) -> list[list[str]]:
    """The ``inputResponses`` keys of every request the mcp 2 peer got for one logical call."""
    return [sorted(r["input_responses"] or {}) for r in report["rounds"]]


# --- mcp 1.x ClientSession ------------------------------------------------------------------


@pytest.fixture(scope="module", params=TRANSPORTS)
def mcp1(request: pytest.FixtureRequest, http_peers: HttpPeers) -> dict[str, Any]:
    python = adapter_python("mcp1")
    if request.param == "http":
        return drive(python, "mcp1_driver.py", "--url", http_peers.url("python"))
    peer = peer_command("python")
    return drive(python, "mcp1_driver.py", "--server", peer.argv[0], str(PY_SERVER))


def test_mcp1_session_declares_what_the_receiver_serves(mcp1: dict[str, Any]) -> None:
    s = mcp1["scenarios"]
    expected = s["receiver_capabilities"]
    # mcp 1.x adds listChanged to the receiver's roots itself; everything else is the receiver's.
    assert expected["notes"]["roots"] == {}
    assert s["sample_task"]["client_capabilities"] == {**expected["notes"], "roots": {"listChanged": True}}
    assert s["sample_task"]["client_declared"] == dict.fromkeys(
        ("sampling_task", "elicitation_task", "tasks_list", "tasks_cancel"), True
    )
    # A receiver without elicitation or tasks/list: the session declares neither.
    assert s["narrow_sample"]["client_capabilities"] == expected["narrow"]
    assert "elicitation" not in expected["narrow"] and "list" not in expected["narrow"]["tasks"]
    assert s["narrow_sample"]["statuses"] == ["completed"]
    assert s["narrow_elicit"]["error"]["message"] == "Elicitation not supported"  # the SDK's own refusal


def test_mcp1_task_augmented_sampling_becomes_a_host_receiver_task(mcp1: dict[str, Any]) -> None:
    report = mcp1["scenarios"]["sample_task"]
    task_id = report["task"]["taskId"]
    assert report["task"]["status"] == "working"
    assert (report["task"]["ttl"], report["task"]["pollInterval"]) == (MCP1_TTL_DEFAULT, 50)  # asked none
    assert report["last_task"]["status"] == "completed"
    assert report["result"]["content"] == {"type": "text", "text": "echo: hello adapters"}
    assert report["result"]["model"] == ECHO
    assert report["result_related_task_meta"] is True
    assert views(mcp1, kind="sampling", server="notes", task_id=task_id)
    audit = mcp1["host"]["audit"]
    assert f"task created requestor=notes task={task_id} method=sampling/createMessage ttl=90000" in audit
    assert f"task result retrieved requestor=notes task={task_id} status=completed" in audit


def test_mcp1_task_augmented_elicitation_gets_the_form_answer_and_the_capped_ttl(
    mcp1: dict[str, Any],
) -> None:
    report = mcp1["scenarios"]["elicit_task"]
    assert report["task"]["ttl"] == MCP1_TTL_MAX  # asked 10**9
    assert report["last_task"]["status"] == "completed"
    assert report["result"]["action"] == "accept"
    assert report["result"]["content"] == {"name": "Ada"}
    assert views(mcp1, kind="form", server="notes", task_id=report["task"]["taskId"])


def test_mcp1_plain_requests_go_through_the_same_pipeline(mcp1: dict[str, Any]) -> None:
    s = mcp1["scenarios"]
    assert s["sample_plain"]["result"]["content"]["text"] == "echo: hello plain"
    assert s["elicit_plain"]["result"] == {"action": "accept", "content": {"name": "Ada"}}
    assert views(mcp1, kind="sampling", text="hello plain", task_id=None, server="notes")


def test_mcp1_refusals_reach_the_server_as_minus_one(mcp1: dict[str, Any]) -> None:
    s = mcp1["scenarios"]
    assert s["refuse_plain"]["error"]["code"] == -1
    task = s["refuse_task"]
    assert task["last_task"]["status"] == "failed"
    assert task["result_error"] == {"code": -1, "message": "User rejected sampling request"}


def test_mcp1_declines_and_invalid_forms(mcp1: dict[str, Any]) -> None:
    s = mcp1["scenarios"]
    assert s["decline_task"]["last_task"]["status"] == "completed"
    assert s["decline_task"]["result"]["action"] == "decline"
    assert s["invalid_form"]["error"]["code"] == -32602
    assert "address" in s["invalid_form"]["error"]["message"]


def test_mcp1_cancel_cancels_the_work(mcp1: dict[str, Any]) -> None:
    cancel = mcp1["scenarios"]["cancel"]
    task_id = cancel["started"]["task"]["taskId"]
    report = cancel["report"]
    assert report["cancel"]["status"] == "cancelled"
    assert report["get"]["status"] == "cancelled"
    assert report["result_error"]["code"] == -32603
    assert report["cancel_again_error"]["code"] == -32602
    # The approval the task's work waited on was cancelled with it.
    assert [c["task_id"] for c in mcp1["host"]["cancelled"] if c["server"] == "notes"] == [task_id]


def test_mcp1_tasks_list_pages_through_this_sessions_tasks(mcp1: dict[str, Any]) -> None:
    report = mcp1["scenarios"]["list"]
    assert report["missing"] == [] and report["duplicates"] == []
    assert report["page_size_ok"] is True  # the receiver's page_size, 2
    assert report["invalid_cursor"]["code"] == -32602
    listed = {task_id for page in report["pages"] for task_id in page}
    assert not listed & {r["task"]["taskId"] for r in mcp1["scenarios"]["limits"][:-1]}  # none of notes-b's


def test_mcp1_sessions_are_isolated_and_each_has_its_quota(mcp1: dict[str, Any]) -> None:
    s = mcp1["scenarios"]
    probe = s["probe"]
    for method in ("get", "result", "cancel"):
        assert probe[method]["error"]["code"] == -32602
        assert "another connection" in probe[method]["error"]["message"]
    assert probe["list"]["result"]["listed"] is False
    *held, over = s["limits"]
    assert [r["task"]["status"] for r in held] == ["working"] * 4
    assert over["error"]["code"] == -32600 and over["error"]["data"] == {"limit": 4}
    # notes-b's held tasks ended with its session: their approvals were cancelled.
    assert sorted(c["task_id"] for c in mcp1["host"]["cancelled"] if c["server"] == "notes-b") == sorted(
        r["task"]["taskId"] for r in held
    )
    assert any("lookup refused requestor=notes-b" in line for line in mcp1["host"]["audit"])
    assert s["tasks_stored_after"] == 0  # every session's tasks ended with it


def test_mcp1_sessions_are_served_at_once(mcp1: dict[str, Any]) -> None:
    both = mcp1["scenarios"]["concurrent"]
    for name in ("notes", "notes-b"):
        assert both[name]["result"]["content"]["text"] == f"echo: at once from {name}"
        assert views(mcp1, server=name, text=f"at once from {name}")


def test_mcp1_status_notifications_reach_the_server(mcp1: dict[str, Any]) -> None:
    s = mcp1["scenarios"]
    sent = {(n["taskId"], n["status"]) for n in s["notifications"]["tasks_status"]}
    assert (s["sample_task"]["task"]["taskId"], "completed") in sent
    assert (s["refuse_task"]["task"]["taskId"], "failed") in sent
    assert (s["cancel"]["started"]["task"]["taskId"], "cancelled") in sent


def test_mcp1_unknown_task_is_minus_32602(mcp1: dict[str, Any]) -> None:
    error = mcp1["scenarios"]["unknown"]["error"]
    assert error["code"] == -32602 and error["message"] == "Failed to retrieve task: Task not found"


def test_mcp1_an_adapter_session_and_the_own_connection_on_one_receiver_are_isolated(
    mcp1: dict[str, Any],
) -> None:
    report = mcp1["scenarios"]["across_kinds"]
    own_task = report["tasks"]["own"]["task"]["taskId"]
    adapter_task = report["tasks"]["adapter"]["task"]["taskId"]
    for probe, probed in (
        (report["adapter_probes_own"], own_task),
        (report["own_probes_adapter"], adapter_task),
    ):
        assert probe["task_id"] == probed
        for method in ("get", "result", "cancel"):
            assert probe[method]["error"]["code"] == -32602
            assert "Task belongs to another connection" in probe[method]["error"]["message"]
        assert probe["list"]["result"]["listed"] is False
    for name, task_id in (("adapter", own_task), ("own", adapter_task)):
        refused = (
            f"task lookup refused requestor={name} task={task_id} reason=Task belongs to another connection"
        )
        assert mcp1["host"]["audit"].count(refused) == 3  # get, result and cancel


def test_mcp1_the_adapters_audit_lines_are_the_own_connections(mcp1: dict[str, Any]) -> None:
    s = mcp1["scenarios"]
    own, adapter = without_ids(s["audit_own"]), without_ids(s["audit_adapter"])
    assert own == adapter
    assert own[:3] == [
        "task created requestor=same task=T1 method=sampling/createMessage ttl=60000",
        "task completed requestor=same task=T1",
        "task result retrieved requestor=same task=T1 status=completed",
    ]
    assert {line.split()[1] for line in own} >= {"created", "completed", "failed", "cancelled", "lookup"}


def without_ids(lines: list[str]) -> list[str]:
    """Audit lines with each task id replaced by T1, T2, ... in the order they first appear."""
    ids: dict[str, str] = {}

    def name(match: re.Match[str]) -> str:
        return "task=" + ids.setdefault(match.group(1), f"T{len(ids) + 1}")

    return [re.sub(r"task=(\S+)", name, line) for line in lines]


# --- mcp 2.x mcp.Client -----------------------------------------------------------------------


@pytest.fixture(scope="module", params=["stdio", "stateless-http"])
def mcp2(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    python, server = adapter_python("mcp2"), peer_python("py2")
    if request.param == "stateless-http":
        with http_peer(server, PY2_SERVER, "--http", "stateless") as url:
            yield drive(python, "mcp2_driver.py", "--url", url)
        return
    legacy = peer_command("python")
    yield drive(
        python,
        "mcp2_driver.py",
        "--server",
        str(server),
        str(PY2_SERVER),
        "--legacy-peer",
        legacy.argv[0],
        str(PY_SERVER),
    )


#: Legacy pushes need a connection that can carry them: the stdio run has them (stateless HTTP cannot).
stdio_only = pytest.mark.parametrize("mcp2", ["stdio"], indirect=True)


def test_mcp2_client_declares_what_the_receiver_serves(mcp2: dict[str, Any]) -> None:
    report = mcp2["scenarios"]["one_round"]
    assert report["era"] == "modern"
    assert report["client_capabilities"] == {
        "sampling": {"tools": {}},
        "elicitation": {"form": {}, "url": {}},
        "roots": {"listChanged": True},  # mcp 2.x adds listChanged to the receiver's roots itself
    }


def test_mcp2_a_narrower_receiver_declares_less(mcp2: dict[str, Any]) -> None:
    s = mcp2["scenarios"]
    # A receiver that samples without tools and has no forms or roots: the client declares just that.
    assert s["narrow_capabilities"] == {"sampling": {}}
    assert s["narrow_sample"]["client_capabilities"] == {"sampling": {}}
    assert s["narrow_sample"]["sampling"]["content"]["text"] == "echo: narrow"
    # The server's form needs the capability the client did not declare: refused before the host.
    assert s["narrow_elicit"]["raised"]["code"] == -32021
    assert [v["kind"] for v in views(mcp2, server="narrow")] == ["sampling"]


def test_mcp2_a_url_round_of_2026_needs_no_elicitation_id(mcp2: dict[str, Any]) -> None:
    report = mcp2["scenarios"]["url"]
    assert report["era"] == "modern"
    # The person consented: "accept" (the spec: consent to open the URL, not that the interaction
    # is done), not refused -32602 for the elicitationId the 2026 schema does not have.
    assert report["elicitation"] == {"action": "accept"}
    assert views(mcp2, kind="url", server="notes", text="Connect your account")
    assert "https://example.com/connect" in mcp2["host"]["opened"]  # after consent, by the host


def test_mcp2_a_roots_round_gets_the_receivers_roots(mcp2: dict[str, Any]) -> None:
    report = mcp2["scenarios"]["roots"]
    assert report["roots"] == {"roots": [{"uri": "file:///srv/notes"}]}
    assert rounds(report) == [[], ["__main__:ask_roots"]]


def test_mcp2_one_input_round(mcp2: dict[str, Any]) -> None:
    report = mcp2["scenarios"]["one_round"]
    assert report["elicitation"] == {
        "action": "accept",
        "content": {"name": "Ada", "age": 42, "subscribe": False},
    }
    assert rounds(report) == [[], ["__main__:ask_person"]]
    assert views(mcp2, kind="form", server="notes", task_id=None, text="Who are you?")


def test_mcp2_two_rounds_in_a_row_within_the_hosts_limits(mcp2: dict[str, Any]) -> None:
    report = mcp2["scenarios"]["two_rounds"]
    assert rounds(report) == [[], ["__main__:ask_person"], ["__main__:llm_after_form"]]
    # The host's maxTokens limit (4) clamped the peer's 100: the echo answer stops at 4 words.
    assert report["sampling"]["content"]["text"] == "echo: Write one line"
    assert report["sampling"]["stopReason"] == "maxTokens"
    assert any(
        "maxTokens clamped requestor=notes " in line and "model=echo-offline requested=100 granted=4" in line
        for line in mcp2["host"]["audit"]
    )


def test_mcp2_two_requests_in_one_round(mcp2: dict[str, Any]) -> None:
    report = mcp2["scenarios"]["same_round"]
    assert rounds(report) == [[], ["__main__:ask_llm", "__main__:ask_person"]]
    assert report["elicitation"]["action"] == "accept"
    assert report["sampling"]["model"] == ECHO


def test_mcp2_sampling_with_tools_returns_a_tool_call(mcp2: dict[str, Any]) -> None:
    sampling = mcp2["scenarios"]["tools"]["sampling"]
    assert sampling["stopReason"] == "toolUse"
    assert [block["type"] for block in sampling["content"]] == ["text", "tool_use"]
    assert sampling["content"][1]["name"] == "get_weather"


def test_mcp2_decline(mcp2: dict[str, Any]) -> None:
    report = mcp2["scenarios"]["decline"]
    assert report["elicitation"] == {"action": "decline"}
    assert rounds(report) == [[], ["__main__:ask_person"]]


def test_mcp2_refused_sampling_is_minus_one_and_sends_no_retry(mcp2: dict[str, Any]) -> None:
    s = mcp2["scenarios"]
    assert s["refuse"]["raised"]["code"] == -1
    # The same call again: the server's rounds show the refused call never got an answer.
    assert rounds(s["refuse_again"]) == [[], [], ["__main__:ask_llm"]]
    assert s["refuse_again"]["sampling"]["content"]["text"] == "echo: refuse once"


def test_mcp2_cancelled_call_cancels_the_work(mcp2: dict[str, Any]) -> None:
    s = mcp2["scenarios"]
    assert mcp2["host"]["cancelled"] == [
        {"kind": "form", "server": "notes", "task_id": None, "text": "hold once"}
    ]
    assert rounds(s["cancel_again"]) == [[], [], ["__main__:ask_person"]]


def test_mcp2_clients_are_served_at_once(mcp2: dict[str, Any]) -> None:
    both = mcp2["scenarios"]["concurrent"]
    for name in ("notes", "notes-b"):
        assert both[name]["elicitation"]["action"] == "accept"
        assert views(mcp2, server=name, text=f"at once {name}")


@stdio_only
def test_mcp2_legacy_connection_gets_pushed_requests(mcp2: dict[str, Any]) -> None:
    s = mcp2["scenarios"]
    assert (s["legacy_one"]["era"], s["legacy_one"]["protocol_version"]) == ("legacy", "2025-11-25")
    assert s["legacy_one"]["elicitation"]["content"]["name"] == "Ada"
    assert s["legacy_two"]["sampling"]["content"]["text"] == "echo: Write one line"
    assert s["legacy_url"]["elicitation"] == {"action": "accept"}
    assert views(mcp2, kind="url", server="notes")


@stdio_only
def test_mcp2_ignores_the_task_of_a_legacy_server(mcp2: dict[str, Any]) -> None:
    s = mcp2["scenarios"]
    report = s["legacy_task_ignored"]
    assert report["client_declared"] == dict.fromkeys(
        ("sampling_task", "elicitation_task", "tasks_list", "tasks_cancel"), False
    )
    # A plain result came back for the task-augmented request: no task was made.
    assert report["error"]["stage"] == "create" and "CreateTaskResult" in report["error"]["invalid_response"]
    assert not [line for line in mcp2["host"]["audit"] if line.startswith("task created")]


# --- fastmcp.Client ---------------------------------------------------------------------------


#: The fastmcp venvs: the pinned one (4.1.4 with fastmcp-tasks), and the two ends of the
#: extra's range as a host gets them, without fastmcp-tasks (.ci/install-adapters).
FASTMCP_ENVS: list[AdapterEnv] = ["fastmcp", "fastmcp-newest", "fastmcp-floor"]


@pytest.fixture(
    scope="module",
    params=[(env, transport) for env in FASTMCP_ENVS for transport in TRANSPORTS],
    ids=lambda param: "-".join(param),
)
def fast(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    env, transport = request.param
    python, server = adapter_python(env), peer_python("fastmcp")
    py2 = ["--py2", str(peer_python("py2")), str(PY2_SERVER)]
    if transport == "http":
        with http_peer(server, FASTMCP_SERVER) as url:
            yield {"env": env, **drive(python, "fastmcp_driver.py", "--url", url, *py2)}
        return
    yield {
        "env": env,
        **drive(python, "fastmcp_driver.py", "--server", str(server), str(FASTMCP_SERVER), *py2),
    }


def with_tasks(fast: dict[str, Any]) -> dict[str, Any]:
    """The scenarios, where the venv has fastmcp-tasks (the pinned one); skips elsewhere."""
    if fast["env"] != "fastmcp":
        pytest.skip(f"{fast['env']} has no fastmcp-tasks: the task scenarios run in the pinned venv")
    assert fast["scenarios"]["tasks_extension"] is True
    return dict(fast["scenarios"])


def input_rounds(report: dict[str, Any]) -> list[list[str]]:
    """The ``inputResponses`` keys of every tools/call the fastmcp peer got for one logical call."""
    calls = [r["params"] for r in report["requests"] if r["method"] == "tools/call"]
    return [sorted(params.get("inputResponses") or {}) for params in calls]


def test_fastmcp_venvs_run_the_versions_they_stand_for(fast: dict[str, Any]) -> None:
    version = fast["scenarios"]["fastmcp_version"]
    release = tuple(int(part) for part in version.split(".")[:3])
    if fast["env"] == "fastmcp":
        assert (version, fast["scenarios"]["tasks_extension"]) == ("4.1.4", True)
    elif fast["env"] == "fastmcp-floor":
        assert (version, fast["scenarios"]["tasks_extension"]) == ("4.0.0", False)
    else:  # the newest 4.x at install time: at least the pinned one
        assert (4, 1, 4) <= release < (5,) and fast["scenarios"]["tasks_extension"] is False


def test_fastmcp_legacy_connection_gets_ctx_elicit_and_create_message(fast: dict[str, Any]) -> None:
    s = fast["scenarios"]
    assert s["legacy_protocol"] == "2025-11-25"
    assert s["legacy_elicit"]["elicitation"] == {"action": "accept", "content": {"name": "Ada", "age": 42}}
    assert s["legacy_sample"]["sampling"]["content"] == {"type": "text", "text": "echo: Say hi."}
    assert s["legacy_sample"]["sampling"]["model"] == ECHO
    assert s["legacy_refuse"]["is_error"] is True
    assert "User rejected sampling request" in s["legacy_refuse"]["text"]
    assert views(fast, kind="sampling", server="fast", text="refuse this")


def test_fastmcp_a_refused_legacy_form_reaches_the_server_as_minus_32603(fast: dict[str, Any]) -> None:
    # The receiver refuses the form -32602 (an object in an object); fastmcp has no way for an
    # elicitation handler to answer an error, so it sends -32603 with the receiver's message.
    error = fast["scenarios"]["legacy_invalid_form"]["error"]
    assert error["code"] == -32603
    assert error["message"].startswith("requestedSchema.properties.address: type 'object' is not allowed")


def test_fastmcp_a_cancelled_call_cancels_the_held_form_and_the_servers_tool(fast: dict[str, Any]) -> None:
    events = fast["scenarios"]["legacy_cancel"]
    assert events["events"] == [{"event": "cancelled"}]  # ctx.elicit raised CancelledError in the tool
    # The receiver's work (the form held open) was cancelled while the session was still open.
    assert fast["host"]["cancelled"] == [
        {"kind": "form", "server": "fast", "task_id": None, "text": "hold legacy"}
    ]


def test_fastmcp_modern_input_required_in_the_foreground(fast: dict[str, Any]) -> None:
    s = fast["scenarios"]
    assert s["modern_protocol"] == "2026-07-28"
    assert s["mrtr_form"]["background_task"] is False
    assert s["mrtr_form"]["elicitation"] == {"action": "accept", "content": {"name": "Ada", "age": 42}}
    assert input_rounds(s["mrtr_form"]) == [[], ["form"]]


def test_fastmcp_modern_llm_call_through_input_required(fast: dict[str, Any]) -> None:
    report = fast["scenarios"]["mrtr_llm"]
    assert report["protocol_version"] == "2026-07-28" and report["background_task"] is False
    assert report["sampling"]["content"] == {"type": "text", "text": "echo: hello modern llm"}
    assert report["sampling"]["model"] == ECHO
    assert input_rounds(report) == [[], ["llm"]]
    assert views(fast, kind="sampling", server="fast", task_id=None, text="hello modern llm")


def test_fastmcp_modern_form_then_llm_call_in_two_rounds(fast: dict[str, Any]) -> None:
    report = fast["scenarios"]["mrtr_form_then_llm"]
    assert report["first"] == {"form": {"action": "accept", "content": {"name": "Ada", "age": 42}}}
    # The second round's LLM call was built from the first round's answer.
    assert report["sampling"]["content"] == {"type": "text", "text": "echo: Greet Ada."}
    assert input_rounds(report) == [[], ["form"], ["llm"]]


def test_fastmcp_a_narrower_receiver_declares_less(fast: dict[str, Any]) -> None:
    s = fast["scenarios"]
    assert s["narrow_capabilities"] == {"sampling": {}}
    (first, *_) = s["narrow_llm"]["requests"]
    declared = first["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    declared.pop("extensions", None)  # fastmcp-tasks' own, where it is installed
    assert declared == {"sampling": {}}
    assert s["narrow_llm"]["sampling"]["content"]["text"] == "echo: narrow"
    # A form round reaches a client without an elicitation handler: mcp 2.x refuses it itself.
    assert s["narrow_form"]["raised"] == {
        "code": -32600,
        "message": "Elicitation not supported",
        "type": "MCPError",
    }
    assert [v["kind"] for v in views(fast, server="narrow")] == ["sampling"]


def test_fastmcp_task_asks_a_form_answered_by_tasks_update(fast: dict[str, Any]) -> None:
    s = with_tasks(fast)
    report = s["task_form"]
    assert report["background_task"] is True
    assert report["elicitation"] == {"action": "accept", "content": {"name": "Ada", "age": 42}}
    methods = [r["method"] for r in report["requests"]]
    assert methods[0] == "tools/call" and "tasks/update" in methods
    caps = report["requests"][0]["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    assert (caps["sampling"], caps["elicitation"]) == ({"tools": {}}, {"form": {}, "url": {}})
    assert s["task_decline"]["elicitation"] == {"action": "decline"}


def test_one_receiver_serves_fastmcp_and_mcp2_sessions_at_once(fast: dict[str, Any]) -> None:
    kinds = fast["scenarios"]["kinds"]
    assert kinds["fast"]["elicitation"]["action"] == "accept"
    assert kinds["py2"]["sampling"]["content"]["text"] == "echo: Write one line greeting Ada."
    # Isolation: each session's approval and form views name its own server, and only those.
    shown = sorted((v["server"], v["kind"], v["text"]) for v in kinds["views"])
    assert shown == [
        ("fast", "form", "at once fast"),
        ("py2", "form", "at once py2"),
        ("py2", "sampling", "Write one line greeting Ada."),
    ]


# --- the wrong library -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("adapter", "env", "found"),
    [
        ("mcp1", "mcp2", "mcp>=1.23,<2 (found 2.3.0)"),
        ("mcp2", "mcp1", "mcp>=2.3,<3 (found 1.30.0)"),
        ("fastmcp", "mcp2", "fastmcp>=4.0,<5 (not installed)"),  # mcp 2.x alone is not enough
    ],
)
def test_an_adapter_in_the_other_librarys_venv_names_its_extra(
    adapter: str, env: AdapterEnv, found: str
) -> None:
    options = "session_options" if adapter == "mcp1" else "client_options"
    probe = (
        f"from host_receiver import Receiver\n"
        f"from host_receiver.adapters.{adapter} import {options}\n"
        f"from host_receiver.errors import AdapterUnavailable\n"
        f"try:\n"
        f"    {options}(Receiver(), server='notes')\n"
        f"except AdapterUnavailable as exc:\n"
        f"    assert isinstance(exc, ImportError)\n"
        f"    print(exc)\n"
    )
    done = subprocess.run(
        [str(adapter_python(env)), "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    expected = f"host_receiver.adapters.{adapter} needs {found}: pip install 'host-receiver[{adapter}]'"
    assert done.stdout.strip() == expected


# --- the examples -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "printed"),
    [
        # demo_server.py's report: its sampling task, form task and URL task, as the server saw them.
        ("mcp1", '"text": "echo: Announce release 2.0.0'),
        ("mcp2", "echo: Greet world in one line."),
        ("fastmcp", "echo: Greet world in one line."),
    ],
    ids=["mcp1", "mcp2", "fastmcp"],
)
def test_the_adapter_examples_run(extra: Any, printed: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [str(adapter_python(extra)), str(EXAMPLES / f"adapter_{extra}.py")],
        capture_output=True,
        text=True,
        timeout=DRIVER_TIMEOUT_S,
        env={**os.environ, "HOST_RECEIVER_CONFIG": str(tmp_path / "config.toml")},  # none: the echo provider
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert printed in done.stdout
