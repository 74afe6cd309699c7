"""The host against the official SDKs as task requestors, for each SDK x transport.

Each test connects our host to a real peer (tests/interop/peers, docs/peers.md),
calls one of its tools, and asserts on the report the peer's SDK produced: what
the *server* saw of our tasks. Every message the host sent is schema-checked
when the host closes (conftest.running_host).
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from host_receiver.errors import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, USER_REJECTED
from host_receiver.people.approval import DenyAll
from host_receiver.protocol.types import RELATED_TASK_META_KEY
from host_receiver.receiver import ReceiverConfig, Requestor
from tests.fake_openai import Completion, FakeOpenAI
from tests.interop import SDKS, Sdk
from tests.interop.conftest import (
    FAKE_MODEL,
    Endpoint,
    Gate,
    HttpPeers,
    assert_task,
    call_report,
    fake_registry,
    make_endpoint,
    running_host,
)

pytestmark = pytest.mark.anyio

FAKE_TEXT = Completion().text
FORM_WITH_DEFAULTS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "Ada"},
        "age": {"type": "integer", "minimum": 0, "default": 36},
        "subscribe": {"type": "boolean", "default": True},
        "colour": {"type": "string", "enum": ["red", "green"], "default": "green"},
    },
    "required": ["name"],
}
DEFAULTS = {"name": "Ada", "age": 36, "subscribe": True, "colour": "green"}


def all_declared(report: dict[str, Any]) -> None:
    """The SDK read our task capabilities from the initialize handshake."""
    assert report["client_declared"] == {
        "sampling_task": True,
        "elicitation_task": True,
        "tasks_list": True,
        "tasks_cancel": True,
    }


def assert_related(result: dict[str, Any], task_id: str) -> None:
    assert result["_meta"][RELATED_TASK_META_KEY] == {"taskId": task_id}


# --- sampling ------------------------------------------------------------------------


async def test_sampling_task_runs_to_completion(endpoint: Endpoint, fake_openai: FakeOpenAI) -> None:
    async with running_host(router=fake_registry(fake_openai)) as h:
        server = await h.connect("peer", endpoint)
        report = await call_report(server, "sample_task", {"prompt": "Say hello", "ttl_ms": 30_000})

    assert "error" not in report, report
    all_declared(report)
    created = report["task"]
    assert_task(created, status="working")  # CreateTaskResult comes back before the LLM work
    assert created["ttl"] == 30_000
    assert created["pollInterval"] == 50
    assert report["statuses"][-1] == "completed"
    assert_task(report["last_task"], status="completed")
    assert report["last_task"]["taskId"] == created["taskId"]
    result = report["result"]
    assert result["role"] == "assistant"
    assert result["content"] == {"type": "text", "text": FAKE_TEXT}
    assert result["model"] == FAKE_MODEL
    assert result["stopReason"] == "endTurn"
    assert report["result_related_task_meta"] is True
    assert_related(result, created["taskId"])
    # The provider really got the server's prompt.
    (body,) = fake_openai.chat_bodies
    assert body["model"] == FAKE_MODEL
    assert any("Say hello" in str(message["content"]) for message in body["messages"])


async def test_sampling_task_through_the_sdk_helper(endpoint: Endpoint) -> None:
    """``create_message_as_task`` (Python) / ``createMessageStream`` (TS); over HTTP both
    send on the standalone GET stream, so this also shows the host keeps it open."""
    async with running_host() as h:
        server = await h.connect("peer", endpoint)
        report = await call_report(server, "sample_task", {"prompt": "helper", "helper": True})

    assert "error" not in report, report
    assert report["result"]["content"] == {"type": "text", "text": "echo: helper"}
    if endpoint.sdk == "typescript":  # the TS helper also yields what it polled
        assert report["statuses"][-1] == "completed"
        assert_task(report["task"])
        assert_related(report["result"], report["task"]["taskId"])


@pytest.mark.parametrize("sdk", SDKS)
async def test_sampling_task_on_the_tool_calls_post_stream(sdk: Sdk, http_peers: HttpPeers) -> None:
    """Requests related to the tools/call travel on its POST response stream (HTTP only)."""
    endpoint = make_endpoint(sdk, "http", http_peers)
    async with running_host() as h:
        server = await h.connect("peer", endpoint)
        report = await call_report(server, "sample_task", {"prompt": "post", "stream": "post"})

    assert "error" not in report, report
    assert report["stream"] == "post"
    assert report["statuses"][-1] == "completed"
    assert report["result"]["content"]["text"] == "echo: post"
    assert report["result_related_task_meta"] is True


async def test_plain_sampling_and_elicitation(endpoint: Endpoint) -> None:
    """Requests without ``task`` are answered directly, with no task metadata."""
    async with running_host() as h:
        server = await h.connect("peer", endpoint)
        sampled = await call_report(server, "sample_plain", {"prompt": "plain"})
        elicited = await call_report(
            server, "elicit_plain", {"message": "Who?", "schema": FORM_WITH_DEFAULTS}
        )
        assert isinstance(server.requestor, Requestor)  # the receiver's scope for this server
        assert h.receiver.store.counts(server.requestor.key) == (0, 0)  # no task was made

    assert sampled["result"]["content"] == {"type": "text", "text": "echo: plain"}
    assert RELATED_TASK_META_KEY not in (sampled["result"].get("_meta") or {})
    assert elicited["result"]["action"] == "accept"
    assert elicited["result"]["content"] == DEFAULTS


async def test_refused_sampling_reaches_the_server_as_user_rejected(
    endpoint: Endpoint, fake_openai: FakeOpenAI
) -> None:
    async with running_host(router=fake_registry(fake_openai), approver=DenyAll()) as h:
        server = await h.connect("peer", endpoint)
        polled = await call_report(server, "sample_task", {"prompt": "no"})
        helped = await call_report(server, "sample_task", {"prompt": "no", "helper": True})
        plain = await call_report(server, "sample_plain", {"prompt": "no"})

    # Step by step, tasks/result replays the refusal: JSON-RPC error -1.
    assert polled["statuses"][-1] == "failed"
    assert_task(polled["last_task"], status="failed")
    assert polled["last_task"]["statusMessage"]
    assert polled["result_error"]["code"] == USER_REJECTED
    assert plain["error"]["code"] == USER_REJECTED
    if endpoint.sdk == "python":
        # create_message_as_task calls tasks/result after a failed status: the real error.
        assert helped["error"]["code"] == USER_REJECTED
    else:
        # The TS helper never calls tasks/result for a failed task and reports its own
        # -32603 "Task <id> failed" instead (docs/peers.md, "Polling").
        assert helped["error"]["code"] == INTERNAL_ERROR
        assert helped["error"]["message"] == f"Task {helped['task']['taskId']} failed"
    assert fake_openai.chat_bodies == []  # refused before any model call


async def test_cancelling_a_task_mid_flight_stops_the_provider_call(
    endpoint: Endpoint, fake_openai: FakeOpenAI
) -> None:
    fake_openai.queue(Completion(delay=60))  # the model "thinks" until the client goes away
    async with running_host(router=fake_registry(fake_openai)) as h:
        server = await h.connect("peer", endpoint)
        started = await call_report(server, "start_sample_task", {"prompt": "a long essay"})
        task_id = started["task"]["taskId"]
        assert await anyio.to_thread.run_sync(fake_openai.wait_for_requests, 1, 20.0)

        report = await call_report(server, "cancel_task", {"task_id": task_id})

        assert await anyio.to_thread.run_sync(fake_openai.wait_for_disconnect, 20.0)
        record = h.receiver.store.get(task_id)
        assert record is not None and record.status == "cancelled"

    assert "cancel_error" not in report, report
    assert_task(report["cancel"], status="cancelled")
    assert_task(report["get"], status="cancelled")
    assert report["get"]["statusMessage"]
    # tasks/result of a cancelled task: the request never produced a result (docs/protocol.md).
    assert report["result_error"]["code"] == INTERNAL_ERROR
    assert report["cancel_again_error"]["code"] == INVALID_PARAMS
    assert "cancelled" in report["cancel_again_error"]["message"]
    (chat,) = fake_openai.requests
    assert chat.disconnected and not chat.completed
    statuses = [
        n["params"]["status"]
        for n in h.wires["peer"].notifications_sent("notifications/tasks/status")
        if n["params"]["taskId"] == task_id
    ]
    assert statuses[-1] == "cancelled"


async def test_tasks_result_waits_for_a_working_task(endpoint: Endpoint) -> None:
    """tasks/result on a task that is still working answers once the task ends, with its result."""
    gate = Gate()
    async with running_host(approver=gate) as h:
        server = await h.connect("peer", endpoint)
        started = await call_report(server, "start_sample_task", {"prompt": "wait for me"})
        task_id = started["task"]["taskId"]
        async with anyio.create_task_group() as group:
            reports: list[dict[str, Any]] = []

            async def probe() -> None:
                reports.append(
                    await call_report(server, "probe_task", {"task_id": task_id, "methods": "result"})
                )

            group.start_soon(probe)
            request = await h.wires["peer"].next_request("tasks/result")
            assert request["params"]["taskId"] == task_id
            record = h.receiver.store.get(task_id)
            assert record is not None and record.status == "working"  # so tasks/result is waiting
            gate.open.set()

    result = reports[0]["result"]["result"]
    assert result["content"] == {"type": "text", "text": "echo: wait for me"}
    assert_related(result, task_id)


async def test_requested_ttls_are_capped_or_defaulted(endpoint: Endpoint) -> None:
    """The host grants at most its cap, its default when none is asked, and ``ttl: null``
    (unlimited) is accepted by both SDKs' Task models."""
    capped = ReceiverConfig(max_ttl_ms=5_000, default_ttl_ms=4_000, poll_interval_ms=50)
    unlimited = ReceiverConfig(max_ttl_ms=None, default_ttl_ms=None, poll_interval_ms=50)
    async with running_host(config=capped) as h:
        server = await h.connect("peer", endpoint)
        too_long = await call_report(server, "sample_task", {"prompt": "x", "ttl_ms": 3_600_000})
        none_asked = await call_report(server, "sample_task", {"prompt": "x", "ttl_ms": -1})
    async with running_host(config=unlimited) as h:
        server = await h.connect("peer", endpoint)
        forever = await call_report(server, "sample_task", {"prompt": "x", "ttl_ms": -1})

    assert too_long["task"]["ttl"] == 5_000 and too_long["last_task"]["ttl"] == 5_000
    assert none_asked["task"]["ttl"] == 4_000
    assert forever["task"]["ttl"] is None
    for report in (too_long, none_asked, forever):
        assert report["statuses"][-1] == "completed", report
        assert_task(report["task"])


async def test_too_many_active_tasks_are_refused(endpoint: Endpoint) -> None:
    async with running_host(approver=Gate(), config=ReceiverConfig(max_active_tasks=2)) as h:
        server = await h.connect("peer", endpoint)
        report = await call_report(server, "list_tasks", {"count": 3})

    assert len(report["created"]) == 2
    assert report["error"]["stage"] == "create"
    assert report["error"]["code"] == INVALID_REQUEST
    assert "limit" in report["error"]["message"]


# --- elicitation ---------------------------------------------------------------------


async def test_elicitation_task_is_answered_with_the_form_defaults(endpoint: Endpoint) -> None:
    async with running_host() as h:
        server = await h.connect("peer", endpoint)
        report = await call_report(
            server, "elicit_task", {"message": "Your details?", "schema": FORM_WITH_DEFAULTS}
        )
        helped = await call_report(
            server, "elicit_task", {"message": "Again?", "schema": FORM_WITH_DEFAULTS, "helper": True}
        )

    assert "error" not in report, report
    all_declared(report)
    assert_task(report["task"], status="working")
    assert report["statuses"][-1] == "completed"
    assert_task(report["last_task"], status="completed")
    assert report["result"]["action"] == "accept"
    assert report["result"]["content"] == DEFAULTS
    assert report["result_related_task_meta"] is True
    assert "error" not in helped, helped
    assert helped["result"]["content"] == DEFAULTS


async def test_elicitation_task_that_needs_a_person_is_declined(endpoint: Endpoint) -> None:
    """FillDefaults cannot fill a required field without a default: a decline, which is a
    normal ElicitResult, so the task completes."""
    async with running_host() as h:
        server = await h.connect("peer", endpoint)
        report = await call_report(server, "elicit_task", {"message": "Your name?"})

    assert report["statuses"][-1] == "completed"
    assert report["result"]["action"] == "decline"
    assert "content" not in report["result"]


# --- tasks/list, unknown ids -----------------------------------------------------------


async def test_tasks_list_pages_in_creation_order(endpoint: Endpoint) -> None:
    async with running_host(config=ReceiverConfig(page_size=3, poll_interval_ms=50)) as h:
        server = await h.connect("peer", endpoint)
        report = await call_report(server, "list_tasks", {"count": 7, "page_size": 3})

    assert "error" not in report, report
    assert len(report["created"]) == 7
    assert [len(page) for page in report["pages"]] == [3, 3, 1]
    assert [task_id for page in report["pages"] for task_id in page] == report["created"]
    assert report["missing"] == [] and report["duplicates"] == []
    cursors = report["next_cursors"]
    assert all(isinstance(c, str) for c in cursors[:-1]) and cursors[-1] is None
    assert report["invalid_cursor"]["code"] == INVALID_PARAMS


async def test_unknown_task_ids_are_invalid_params(endpoint: Endpoint) -> None:
    async with running_host() as h:
        server = await h.connect("peer", endpoint)
        unknown = await call_report(server, "get_unknown_task", {})
        probed = await call_report(
            server, "probe_task", {"task_id": "no-such-task", "methods": "get,result,cancel"}
        )

    assert unknown["error"]["code"] == INVALID_PARAMS
    for method in ("get", "result", "cancel"):
        assert probed[method]["error"]["code"] == INVALID_PARAMS, probed
