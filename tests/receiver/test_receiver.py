"""The task receiver against the rules of the 2025-11-25 tasks chapter.

Rule ids in the docstrings (T-...) refer to docs/protocol.md, which maps each
MUST and SHOULD of the chapter to the test that shows it.
"""

from __future__ import annotations

import logging
import re
from datetime import datetime
from typing import Any

import anyio
import pytest

from host_receiver.errors import INVALID_PARAMS, METHOD_NOT_FOUND, USER_REJECTED, user_rejected
from host_receiver.protocol.types import RELATED_TASK_META_KEY, ElicitResult
from host_receiver.receiver import Receiver, ReceiverConfig
from host_receiver.testing import RecordingPeer
from tests.receiver_harness import (
    connect,
    elicitation_script,
    form_params,
    sampling_params,
    sampling_script,
    settle,
)

pytestmark = pytest.mark.anyio

SAMPLING = "sampling/createMessage"
ELICIT = "elicitation/create"


def receiver_with(**kwargs: object) -> Receiver:
    config = kwargs.pop("config", None)
    return Receiver(config=config if isinstance(config, ReceiverConfig) else None, **kwargs)  # type: ignore[arg-type]


# --- capabilities ------------------------------------------------------------


async def test_capabilities_advertise_exactly_what_is_handled() -> None:
    """T-CAP-1: tasks.requests lists only the configured request types."""
    both = Receiver(sampling=sampling_script(), elicitation=elicitation_script())
    assert both.capabilities() == {
        "sampling": {"tools": {}},
        "elicitation": {"form": {}, "url": {}},
        "tasks": {
            "list": {},
            "cancel": {},
            "requests": {"sampling": {"createMessage": {}}, "elicitation": {"create": {}}},
        },
    }
    sampling_only = Receiver(sampling=sampling_script(), sampling_tools=False)
    assert sampling_only.capabilities() == {
        "sampling": {},
        "tasks": {"list": {}, "cancel": {}, "requests": {"sampling": {"createMessage": {}}}},
    }
    no_task_elicit = Receiver(
        elicitation=elicitation_script(),
        elicitation_modes=("form",),
        config=ReceiverConfig(task_methods=frozenset({SAMPLING})),
    )
    assert no_task_elicit.capabilities() == {"elicitation": {"form": {}}}
    assert Receiver().capabilities() == {}


async def test_capabilities_follow_the_negotiated_version() -> None:
    """Older versions get no tasks, no sampling.tools and no url elicitation."""
    receiver = Receiver(sampling=sampling_script(), elicitation=elicitation_script())
    assert receiver.capabilities("2025-06-18") == {"sampling": {}, "elicitation": {}}
    assert receiver.capabilities("2025-03-26") == {"sampling": {}}


# --- creating tasks ----------------------------------------------------------------


async def test_create_task_returns_at_once_and_task_is_visible() -> None:
    """T-CREATE-1/2, T-LIFE-1, T-TTL-1/2/4: CreateTaskResult before any work finishes."""
    script = sampling_script()
    receiver = Receiver(sampling=script)
    async with connect(receiver) as server:
        created = await server.request(SAMPLING, {**sampling_params(), "task": {"ttl": 60_000}})
        task = created["task"]
        assert task["status"] == "working"
        assert task["ttl"] == 60_000
        assert task["pollInterval"] == 1_000
        assert script.finished == 0
        for stamp in (task["createdAt"], task["lastUpdatedAt"]):
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stamp)
            datetime.fromisoformat(stamp)
        got = await server.request("tasks/get", {"taskId": task["taskId"]})
        assert got["taskId"] == task["taskId"] and got["status"] == "working"
        assert RELATED_TASK_META_KEY not in got.get("_meta", {})
        script.release.set()


async def test_task_ids_are_unique_and_unguessable() -> None:
    """T-ID-1/2/3, T-SEC-2: string ids with at least 122 random bits, all distinct."""
    receiver = Receiver(sampling=sampling_script(), config=ReceiverConfig(max_active_tasks=1000))
    async with connect(receiver) as server:
        ids = [await server.create_task(SAMPLING, sampling_params()) for _ in range(200)]
    assert len(set(ids)) == 200
    assert all(isinstance(i, str) and len(i) >= 22 for i in ids)


async def test_task_field_ignored_when_type_has_no_task_capability() -> None:
    """T-SUP-1: a request type without declared task support is processed normally."""
    script = elicitation_script(block=False)
    receiver = Receiver(elicitation=script, config=ReceiverConfig(task_methods=frozenset({SAMPLING})))
    async with connect(receiver) as server:
        result = await server.request(ELICIT, {**form_params(), "task": {"ttl": 1000}})
        assert result == {"action": "accept", "content": {"name": "Ada"}}


async def test_task_field_ignored_for_older_protocol_versions() -> None:
    receiver = Receiver(sampling=sampling_script(block=False))
    async with connect(receiver, protocol_version="2025-06-18") as server:
        result = await server.request(SAMPLING, {**sampling_params(), "task": {}})
        assert result["model"] == "test-model"


async def test_plain_request_answered_directly_with_same_pipeline() -> None:
    script = sampling_script(block=False)
    receiver = Receiver(sampling=script)
    async with connect(receiver) as server:
        result = await server.request(SAMPLING, sampling_params())
        assert result == {
            "role": "assistant",
            "content": {"type": "text", "text": "hi there"},
            "model": "test-model",
        }
        assert script.calls[0][1].task_id is None


async def test_plain_request_error_is_the_response() -> None:
    receiver = Receiver(sampling=sampling_script(block=False, error=user_rejected()))
    async with connect(receiver) as server:
        error = await server.error(SAMPLING, sampling_params())
        assert (error.code, error.message) == (USER_REJECTED, "User rejected sampling request")


# --- ttl ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requested", "config", "granted"),
    [
        (None, ReceiverConfig(default_ttl_ms=5_000), 5_000),
        (None, ReceiverConfig(default_ttl_ms=None, max_ttl_ms=None), None),
        (2_000, ReceiverConfig(max_ttl_ms=10_000), 2_000),
        (20_000, ReceiverConfig(max_ttl_ms=10_000), 10_000),
        (0, ReceiverConfig(), 0),
    ],
)
async def test_ttl_default_cap_and_unlimited(
    requested: int | None, config: ReceiverConfig, granted: int | None
) -> None:
    """T-TTL-3/4: the receiver may shorten ttl; the actual value (or null) is reported."""
    receiver = Receiver(sampling=sampling_script(), config=config)
    async with connect(receiver) as server:
        task = {} if requested is None else {"ttl": requested}
        created = await server.request(SAMPLING, {**sampling_params(), "task": task})
        assert "ttl" in created["task"] and created["task"]["ttl"] == granted
        if granted != 0:
            got = await server.request("tasks/get", {"taskId": created["task"]["taskId"]})
            assert got["ttl"] == granted


async def test_negative_ttl_is_invalid_params() -> None:
    receiver = Receiver(sampling=sampling_script())
    async with connect(receiver) as server:
        error = await server.error(SAMPLING, {**sampling_params(), "task": {"ttl": -5}})
        assert error.code == INVALID_PARAMS and "ttl" in error.message


# --- results -----------------------------------------------------------------


async def test_result_blocks_until_terminal_and_all_waiters_get_it() -> None:
    """T-RES-3/4/2, T-META-3: tasks/result waits; every waiter gets the exact result."""
    script = sampling_script()
    receiver = Receiver(sampling=script)
    async with connect(receiver) as server:
        task_id = await server.create_task(SAMPLING, sampling_params())
        answers: list[dict[str, object]] = []

        async def wait_result() -> None:
            answers.append(await server.request("tasks/result", {"taskId": task_id}))

        async with anyio.create_task_group() as group:
            for _ in range(5):
                group.start_soon(wait_result)
            await settle()
            assert answers == []
            got = await server.request("tasks/get", {"taskId": task_id})
            assert got["status"] == "working"
            script.release.set()
        expected = {
            "role": "assistant",
            "content": {"type": "text", "text": "hi there"},
            "model": "test-model",
            "_meta": {RELATED_TASK_META_KEY: {"taskId": task_id}},
        }
        assert answers == [expected] * 5
        assert await server.request("tasks/result", {"taskId": task_id}) == expected
        assert server.statuses(task_id) == ["completed"]


async def test_result_keeps_the_results_own_meta() -> None:
    from host_receiver.protocol.types import CreateMessageResult, TextContent

    result = CreateMessageResult.model_validate(
        {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m", "_meta": {"k": 1}}
    )
    assert isinstance(result.content, TextContent)
    receiver = Receiver(sampling=sampling_script(block=False, result=result))
    async with connect(receiver) as server:
        task_id = await server.create_task(SAMPLING, sampling_params())
        got = await server.request("tasks/result", {"taskId": task_id})
        assert got["_meta"] == {"k": 1, RELATED_TASK_META_KEY: {"taskId": task_id}}


async def test_sampling_error_fails_task_and_result_replays_error() -> None:
    """T-ERR-3/4: failed with a diagnostic statusMessage; tasks/result returns the same error."""
    receiver = Receiver(sampling=sampling_script(block=False, error=user_rejected()))
    async with connect(receiver) as server:
        task_id = await server.create_task(SAMPLING, sampling_params())
        error = await server.error("tasks/result", {"taskId": task_id})
        assert (error.code, error.message) == (USER_REJECTED, "User rejected sampling request")
        got = await server.request("tasks/get", {"taskId": task_id})
        assert got["status"] == "failed"
        assert "User rejected sampling request" in got["statusMessage"]


async def test_crashing_handler_fails_task_with_internal_error() -> None:
    receiver = Receiver(sampling=sampling_script(block=False, error=None, result=object()))
    async with connect(receiver) as server:
        task_id = await server.create_task(SAMPLING, sampling_params())
        error = await server.error("tasks/result", {"taskId": task_id})
        assert error.code == -32603
        assert (await server.request("tasks/get", {"taskId": task_id}))["status"] == "failed"


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_declined_elicitation_completes_normally(action: str) -> None:
    receiver = Receiver(elicitation=elicitation_script(block=False, result=ElicitResult(action=action)))  # type: ignore[arg-type]
    async with connect(receiver) as server:
        task_id = await server.create_task(ELICIT, form_params())
        result = await server.request("tasks/result", {"taskId": task_id})
        assert result["action"] == action
        assert (await server.request("tasks/get", {"taskId": task_id}))["status"] == "completed"


# --- cancellation -------------------------------------------------------------


async def test_cancel_moves_to_cancelled_stops_work_and_sticks() -> None:
    """T-CAN-2/3: cancelled before the reply; the work is cancelled; it stays cancelled."""
    script = sampling_script(swallow_cancel=True)
    receiver = Receiver(sampling=script)
    async with connect(receiver) as server:
        task_id = await server.create_task(SAMPLING, sampling_params())
        await script.started.wait()
        waiting: list[int] = []

        async def wait_result() -> None:
            waiting.append((await server.error("tasks/result", {"taskId": task_id})).code)

        async with anyio.create_task_group() as group:
            group.start_soon(wait_result)
            await settle()
            cancelled = await server.request("tasks/cancel", {"taskId": task_id})
            assert cancelled["status"] == "cancelled"
            assert cancelled["statusMessage"] == "The task was cancelled by request."
        await settle()
        assert script.cancelled == 1
        # The work swallowed the cancellation and returned a result: the task stays cancelled.
        assert script.finished == 1
        assert (await server.request("tasks/get", {"taskId": task_id}))["status"] == "cancelled"
        assert server.statuses(task_id) == ["cancelled"]
        assert waiting == [-32603]


async def test_a_task_cancelled_before_its_work_started_never_runs_it() -> None:
    """The work starts after the CreateTaskResult; a cancel in between means it never starts."""
    script = sampling_script(block=False)
    receiver = Receiver(sampling=script)
    async with connect(receiver) as server:
        created = server.requestor.dispatch(SAMPLING, {**sampling_params(), "task": {}})
        assert isinstance(created, dict)
        task_id = created["task"]["taskId"]
        cancelled = server.requestor.dispatch("tasks/cancel", {"taskId": task_id})
        assert isinstance(cancelled, dict) and cancelled["status"] == "cancelled"
        await settle()
        assert script.calls == []
        assert server.statuses(task_id) == ["cancelled"]


async def test_requests_that_never_wait_are_answered_without_an_awaitable() -> None:
    script = sampling_script()
    receiver = Receiver(sampling=script)
    async with connect(receiver) as server:
        requestor = server.requestor
        created = requestor.dispatch(SAMPLING, {**sampling_params(), "task": {}})
        assert isinstance(created, dict)
        task_id = created["task"]["taskId"]
        for method, params in [("tasks/get", {"taskId": task_id}), ("tasks/list", {})]:
            assert isinstance(requestor.dispatch(method, params), dict)
        waiting = requestor.dispatch("tasks/result", {"taskId": task_id})
        assert not isinstance(waiting, dict)
        await script.started.wait()
        script.release.set()
        result = await waiting
        assert result["content"]["text"] == "hi there"
        again = requestor.dispatch("tasks/result", {"taskId": task_id})
        assert isinstance(again, dict) and again == result


async def test_status_notifications_never_wait_they_go_through_notify_soon() -> None:
    waited: list[str] = []

    class Peer(RecordingPeer):
        async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
            waited.append(method)

    peer = Peer()
    receiver = Receiver(sampling=sampling_script(block=False))
    async with receiver.attach(peer) as requestor:
        created = await requestor.handle_request(SAMPLING, {**sampling_params(), "task": {}})
        await settle()
    assert [(m, p and p["status"]) for m, p in peer.notifications] == [
        ("notifications/tasks/status", "completed")
    ]
    assert peer.notifications[0][1] is not None
    assert peer.notifications[0][1]["taskId"] == created["task"]["taskId"]
    assert waited == []


@pytest.mark.parametrize("outcome", ["completed", "failed", "cancelled"])
async def test_cancel_of_terminal_task_is_invalid_params(outcome: str) -> None:
    """T-CAN-1: -32602 naming the terminal status."""
    error = user_rejected() if outcome == "failed" else None
    script = sampling_script(block=outcome == "cancelled", error=error)
    receiver = Receiver(sampling=script)
    async with connect(receiver) as server:
        task_id = await server.create_task(SAMPLING, sampling_params())
        if outcome == "cancelled":
            await server.request("tasks/cancel", {"taskId": task_id})
        await settle()
        error_ = await server.error("tasks/cancel", {"taskId": task_id})
        assert error_.code == INVALID_PARAMS
        assert error_.message == f"Cannot cancel task: already in terminal status '{outcome}'"


# --- lookups and isolation ------------------------------------------------------


async def test_unknown_expired_and_foreign_ids_are_invalid_params() -> None:
    """T-ERR-1, T-SEC-1: each says which."""
    receiver = Receiver(sampling=sampling_script(block=False))
    async with connect(receiver, "a") as a, connect(receiver, "b") as b:
        mine = await a.create_task(SAMPLING, sampling_params(), ttl=30)
        theirs = await b.create_task(SAMPLING, sampling_params())
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            unknown = await a.error(method, {"taskId": "no-such-task"})
            assert unknown.code == INVALID_PARAMS and unknown.message.endswith("Task not found")
            foreign = await a.error(method, {"taskId": theirs})
            assert foreign.code == INVALID_PARAMS and "another connection" in foreign.message
        await anyio.sleep(0.1)
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            expired = await a.error(method, {"taskId": mine})
            assert expired.code == INVALID_PARAMS and expired.message.endswith("Task has expired")
        assert (await a.request("tasks/list"))["tasks"] == []
        assert [t["taskId"] for t in (await b.request("tasks/list"))["tasks"]] == [theirs]


async def test_related_task_meta_in_params_is_ignored() -> None:
    """T-META-2: the taskId param is the source of truth."""
    receiver = Receiver(sampling=sampling_script(block=False))
    async with connect(receiver) as server:
        task_id = await server.create_task(SAMPLING, sampling_params())
        params = {"taskId": task_id, "_meta": {RELATED_TASK_META_KEY: {"taskId": "other"}}}
        assert (await server.request("tasks/get", params))["taskId"] == task_id


# --- listing ----------------------------------------------------------------------


async def test_list_pages_with_opaque_cursors() -> None:
    """T-LIST-1/2/3/4: pages, nextCursor only when more remain, invalid cursor -32602."""
    receiver = Receiver(sampling=sampling_script(block=False), config=ReceiverConfig(page_size=3))
    async with connect(receiver) as server, connect(receiver, "other") as other:
        ids = [await server.create_task(SAMPLING, sampling_params()) for _ in range(7)]
        await other.create_task(SAMPLING, sampling_params())
        seen: list[str] = []
        cursor = None
        pages = 0
        while True:
            page = await server.request("tasks/list", {} if cursor is None else {"cursor": cursor})
            pages += 1
            seen += [t["taskId"] for t in page["tasks"]]
            cursor = page.get("nextCursor")
            if cursor is None:
                break
        assert seen == ids and pages == 3
        for bad in ("garbage", cursor or "", "AAAAAAAAAAAAAAAAAAAAAAAAAAA"):
            error = await server.error("tasks/list", {"cursor": bad})
            assert error.code == INVALID_PARAMS and "cursor" in error.message
        first = await server.request("tasks/list")
        foreign_cursor = first["nextCursor"]
        error = await other.error("tasks/list", {"cursor": foreign_cursor})
        assert error.code == INVALID_PARAMS


async def test_list_stays_stable_while_tasks_come_and_go() -> None:
    receiver = Receiver(sampling=sampling_script(block=False), config=ReceiverConfig(page_size=2))
    async with connect(receiver) as server:
        short = [await server.create_task(SAMPLING, sampling_params(), ttl=40) for _ in range(2)]
        kept = [await server.create_task(SAMPLING, sampling_params()) for _ in range(3)]
        page = await server.request("tasks/list")
        assert [t["taskId"] for t in page["tasks"]] == short
        await anyio.sleep(0.1)  # the first page's tasks expire
        newer = await server.create_task(SAMPLING, sampling_params())
        seen: list[str] = []
        cursor = page["nextCursor"]
        while cursor is not None:
            page = await server.request("tasks/list", {"cursor": cursor})
            seen += [t["taskId"] for t in page["tasks"]]
            cursor = page.get("nextCursor")
        assert seen == [*kept, newer]


async def test_list_of_exactly_one_page_has_no_cursor() -> None:
    receiver = Receiver(sampling=sampling_script(block=False), config=ReceiverConfig(page_size=2))
    async with connect(receiver) as server:
        for _ in range(2):
            await server.create_task(SAMPLING, sampling_params())
        page = await server.request("tasks/list")
        assert len(page["tasks"]) == 2 and "nextCursor" not in page


# --- notifications ---------------------------------------------------------------


async def test_status_notifications_carry_the_full_task_without_related_meta() -> None:
    """T-NOTE-1/3."""
    receiver = Receiver(sampling=sampling_script(block=False))
    async with connect(receiver) as server:
        task_id = await server.create_task(SAMPLING, sampling_params())
        await server.request("tasks/result", {"taskId": task_id})
        [(method, params)] = server.notifications
        assert method == "notifications/tasks/status"
        assert params is not None
        assert params["taskId"] == task_id and params["status"] == "completed"
        assert "ttl" in params and "_meta" not in params


async def test_progress_token_lives_with_the_task_and_carries_related_meta() -> None:
    """T-PROG-1, T-META-1."""
    script = sampling_script()
    receiver = Receiver(sampling=script)
    async with connect(receiver) as server:
        params = {**sampling_params(), "_meta": {"progressToken": "tok-1"}}
        task_id = await server.create_task(SAMPLING, params)
        await script.started.wait()
        context = script.calls[0][1]
        await context.report_progress(5, 10, "halfway")
        await context.set_status_message("Waiting for the user")
        assert (await server.request("tasks/get", {"taskId": task_id}))[
            "statusMessage"
        ] == "Waiting for the user"
        script.release.set()
        await server.request("tasks/result", {"taskId": task_id})
        progress = [p for m, p in server.notifications if m == "notifications/progress"]
        assert progress == [
            {
                "progressToken": "tok-1",
                "progress": 5,
                "total": 10,
                "message": "halfway",
                "_meta": {RELATED_TASK_META_KEY: {"taskId": task_id}},
            }
        ]


# --- expiry and limits ------------------------------------------------------------


async def test_expiry_deletes_task_cancels_work_and_releases_waiters() -> None:
    """T-TTL-5, T-RES-3: after ttl the task is gone; a blocked tasks/result is answered."""
    script = sampling_script()
    receiver = Receiver(sampling=script)
    async with connect(receiver) as server:
        task_id = await server.create_task(SAMPLING, sampling_params(), ttl=50)
        error = await server.error("tasks/result", {"taskId": task_id})
        assert error.code == INVALID_PARAMS and error.message.endswith("Task has expired")
        await settle()
        assert script.cancelled == 1
        assert len(receiver.store) == 0  # type: ignore[arg-type]


async def test_limits_refuse_with_a_clear_error_and_keep_serving() -> None:
    """T-SEC-3: a per-requestor active-task limit, never a silent drop."""
    script = sampling_script()
    receiver = Receiver(sampling=script, config=ReceiverConfig(max_active_tasks=2, max_stored_tasks=3))
    async with connect(receiver) as server, connect(receiver, "other") as other:
        await server.create_task(SAMPLING, sampling_params())
        await server.create_task(SAMPLING, sampling_params())
        error = await server.error(SAMPLING, {**sampling_params(), "task": {}})
        assert error.code == -32600 and "active tasks" in error.message and error.data == {"limit": 2}
        await other.create_task(SAMPLING, sampling_params())  # limits are per requestor
        script.release.set()
        await settle()
        await server.create_task(SAMPLING, sampling_params())
        error = await server.error(SAMPLING, {**sampling_params(), "task": {}})
        assert "stored tasks" in error.message
        assert (await server.request("tasks/list"))["tasks"]


async def test_leaving_the_scope_cancels_work_and_deletes_tasks() -> None:
    script = sampling_script()
    receiver = Receiver(sampling=script)
    async with connect(receiver) as server:
        await server.create_task(SAMPLING, sampling_params())
        await script.started.wait()
    assert script.cancelled == 1
    assert len(receiver.store) == 0  # type: ignore[arg-type]


# --- bad input -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "params", "needle"),
    [
        (SAMPLING, {"messages": []}, "maxTokens"),
        (SAMPLING, {"messages": "x", "maxTokens": 5}, "messages"),
        (SAMPLING, {**sampling_params(), "task": {"ttl": "soon"}}, "task.ttl"),
        (SAMPLING, sampling_params(temperature="hot"), "temperature"),
        (ELICIT, {"mode": "form", "message": "m"}, "requestedSchema"),
        (ELICIT, {"mode": "telepathy", "message": "m"}, "mode"),
        (ELICIT, {"mode": "url", "message": "m", "url": "https://x.example"}, "elicitationId"),
        ("tasks/get", {}, "taskId"),
        ("tasks/get", None, "taskId"),
        ("tasks/result", {"taskId": 5}, "taskId"),
        ("tasks/get", {"taskId": "t", "_meta": "not an object"}, "_meta"),
        ("tasks/cancel", {"taskId": ["t"]}, "taskId"),
        ("tasks/list", {"cursor": 5}, "cursor"),
    ],
)
async def test_malformed_params_name_the_field(
    method: str, params: dict[str, object] | None, needle: str
) -> None:
    receiver = Receiver(sampling=sampling_script(block=False), elicitation=elicitation_script(block=False))
    async with connect(receiver) as server:
        error = await server.error(method, params)
        assert error.code == INVALID_PARAMS and needle in error.message
        assert (await server.request(SAMPLING, sampling_params()))["model"] == "test-model"


async def test_unknown_and_unhandled_methods_are_method_not_found() -> None:
    receiver = Receiver(sampling=sampling_script(block=False))
    async with connect(receiver) as server:
        for method in ("roots/list", "tools/call", ELICIT):
            assert (await server.error(method, {})).code == METHOD_NOT_FOUND
        assert (await server.request(SAMPLING, sampling_params()))["model"] == "test-model"


async def test_tasks_methods_not_offered_when_no_task_capability() -> None:
    receiver = Receiver(
        sampling=sampling_script(block=False), config=ReceiverConfig(task_methods=frozenset())
    )
    async with connect(receiver) as server:
        assert (await server.error("tasks/list", {})).code == METHOD_NOT_FOUND
        assert (await server.error("tasks/cancel", {"taskId": "x"})).code == METHOD_NOT_FOUND


# --- audit ---------------------------------------------------------------------


async def test_audit_log_names_requestor_and_task_but_not_contents(caplog: pytest.LogCaptureFixture) -> None:
    """T-AUD-1."""
    caplog.set_level(logging.INFO, logger="host_receiver.audit")
    receiver = Receiver(sampling=sampling_script(block=False))
    async with connect(receiver, "weather-server") as server:
        task_id = await server.create_task(SAMPLING, sampling_params("my secret prompt"))
        await server.request("tasks/result", {"taskId": task_id})
    lines = [r.getMessage() for r in caplog.records if r.name == "host_receiver.audit"]
    assert any("created" in line and task_id in line and "weather-server" in line for line in lines)
    assert any("completed" in line and task_id in line for line in lines)
    assert any("result retrieved" in line and task_id in line for line in lines)
    assert not any("secret" in line for line in lines)


async def test_a_scope_left_by_cancellation_deletes_its_tasks_too() -> None:
    """However a requestor's scope ends (a session cancelled, say), none of its tasks is left."""
    receiver = Receiver(sampling=sampling_script())
    with anyio.CancelScope() as outer:
        async with receiver.attach(RecordingPeer()) as requestor:
            for _ in range(3):
                await requestor.handle_request(SAMPLING, {**sampling_params(), "task": {}})
            assert receiver.store.counts(requestor.key)[0] == 3
            outer.cancel()
            await anyio.sleep_forever()
    assert len(receiver.store.ids_of(requestor.key)) == 0
