"""Continuable calls on a shared store (SQLite, a real PostgreSQL), as a user runs them: a host CLI
whose 2026-07-28 call to an mcp 2.3.0 server on Streamable HTTP waits for a person in an input round
(its ``rounds`` tool) is killed with SIGKILL, the round's inbox item is answered through the Store
API, and ``calls resume ID`` finishes the call with that answer, one process at a time under a
lease; the Authorization header the host sent is never kept.

(Over HTTP, the server outlives the host, as a fleet's servers do: mcp 2.3.0 seals ``requestState``
with a key of its process by default, so a stdio server restarted by the resuming process would
refuse the state; docs/fleet.md says so.)"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import anyio
import anyio.to_thread
import httpx
import pytest

from host_receiver import (
    DenyAll,
    ElicitationService,
    FormView,
    Host,
    Receiver,
    SamplingService,
    UrlAnswer,
    UrlView,
)
from host_receiver.client._input_rounds import answering_input_request
from host_receiver.client.options import ConnectionOptions
from host_receiver.client.remote_tasks.store import server_identity
from host_receiver.errors import USER_REJECTED, CallLeased, InputRequestFailed, UnknownCall
from host_receiver.protocol.results import CallToolResult
from host_receiver.protocol.types import ElicitResult
from host_receiver.store import ASKED_AGAIN, CallKeeping, ContinuableCall, open_store
from providers import EchoProvider, ProviderRegistry
from tests.cli_command import LIMIT_S, cli_env, run_cli, start_cli
from tests.fleet.processes import call_item, calls, in_store, inbox_serve, kill, until_lease_ends
from tests.interop import PY2_SERVER, http_server, peer_python
from tests.postgres_cluster import PostgresCluster
from tests.web.test_store_inbox import cut_off, let_in

pytestmark = pytest.mark.slow  # fresh interpreters and a real peer

ROOT = Path(__file__).resolve().parents[2]
SECRET = "s3cr3t-value-never-kept"
LEASE = 2.0  # seconds: a killed host's lease runs out after three periods (6 s)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**cli_env(tmp_path), "PYTHONPATH": str(ROOT)}  # this checkout's code, not the installed one


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'fleet.db'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def server_url() -> Iterator[str]:
    with http_server([str(peer_python("py2")), str(PY2_SERVER)]) as url:
        yield url


def _waiting_call(url: str, proc: subprocess.Popen[str], *, not_owner: str | None = None) -> ContinuableCall:
    """The call kept waiting in the store once a process (not ``not_owner``) holds its lease."""
    deadline = time.monotonic() + LIMIT_S
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        for call in calls(url):
            if call.status == "waiting" and call.lease_owner not in (None, not_owner):
                return call
        time.sleep(0.1)
    raise AssertionError("the call was never kept waiting in the store")


def _rows(url: str) -> str:
    """Every row of the calls and the leases, as the database holds them."""

    async def read() -> str:
        async with open_store(url) as store:
            rows = await store._engine.run(
                lambda tx: [*tx.rows("SELECT * FROM continuable_calls"), *tx.rows("SELECT * FROM leases")],
                write=False,
            )
        return repr(rows)

    return anyio.run(read)


def _answer(url: str, call: ContinuableCall, key: str, answer: dict[str, object]) -> None:
    """What the inbox does (the host side puts the item, a person answers it), through the Store API."""

    async def put_and_answer() -> None:
        async with open_store(url) as store:
            item = await store.add_item(
                host="worker-1",
                server_name="py2_server.py",
                server_title=None,
                server_identity=call.server_identity,
                kind="form",
                payload=call.input_requests[key]["params"],
                session="gone",
                call=(call.id, key),
            )
            await store.answer(item.id, answer, by="ann", address="127.0.0.1")

    anyio.run(put_and_answer)


def test_a_killed_hosts_call_is_finished_by_calls_resume_with_the_inbox_answer_one_process_at_a_time(
    env: dict[str, str], url: str, server_url: str
) -> None:
    host = start_cli(
        env,
        "call",
        "rounds",
        "n=1",
        "--json",
        "--store",
        url,
        "--lease",
        str(LEASE),
        "--elicit",
        "web",
        "--url",
        server_url,
        "--header",
        f"Authorization: Bearer {SECRET}",
    )
    try:
        call = _waiting_call(url, host)
    finally:
        kill(host)  # kill -9 mid-wait: nothing is cleaned up
    assert (call.method, call.target, call.arguments, call.rounds_used) == (
        "tools/call",
        "rounds",
        {"n": 1},
        1,
    )
    assert list(call.input_requests) == ["round1"] and call.request_state  # as the server sent it
    assert call.address == {"url": server_url}
    assert SECRET not in _rows(url)  # the header the host sent is never kept

    early = run_cli(env, "calls", "resume", call.id, "--store", url, "--elicit", "decline")
    assert early.returncode == 2 and f"call {call.id} is being continued by another process" in early.stderr
    listed = run_cli(env, "calls", "--store", url)
    assert listed.returncode == 0 and listed.stdout.startswith(f"{call.id}\t"), listed

    until_lease_ends(url, call.id)  # three periods after the kill: another process may take it
    first = start_cli(
        env, "calls", "resume", call.id, "--store", url, "--lease", str(LEASE), "--elicit", "web"
    )
    try:
        _waiting_call(url, first, not_owner=call.lease_owner)  # it asks its own inbox, and waits
        second = run_cli(env, "calls", "resume", call.id, "--store", url, "--elicit", "decline")
        assert second.returncode == 2 and second.stdout == ""
        assert f"call {call.id} is being continued by another process" in second.stderr
    finally:
        kill(first)

    _answer(url, call, "round1", {"action": "accept", "content": {"n": 7}})
    until_lease_ends(url, call.id)
    done = run_cli(env, "calls", "resume", call.id, "--store", url, "--json", "--elicit", "decline")
    assert done.returncode == 0, done.stderr
    report = json.loads(json.loads(done.stdout)["content"][0]["text"])
    assert report["tool"] == "rounds" and report["answered"] == 1
    assert report["input_responses"] == {"round1": {"action": "accept", "content": {"n": 7}}}
    assert [c.status for c in calls(url)] == ["finished"]
    assert run_cli(env, "calls", "--store", url).stdout == ""
    again = run_cli(env, "calls", "resume", call.id, "--store", url)
    assert again.returncode == 2 and "has finished: there is nothing to continue" in again.stderr


def test_a_killed_hosts_round_item_stays_pending_past_the_sweep_and_its_inbox_answer_finishes_the_call(
    env: dict[str, str], url: str, server_url: str
) -> None:
    _, token = in_store(url, lambda store: store.add_person("ann", ["ops"]))
    host = start_cli(
        env, "call", "rounds", "n=1", "--store", url, "--lease", str(LEASE), "--elicit", "web",
        "--url", server_url, "--for", "ops",
    )  # fmt: skip
    try:
        item = call_item(url, host)
        call = _waiting_call(url, host)
    finally:
        kill(host)  # kill -9 mid-wait
    assert (item.call_id, item.call_key, item.routed_to) == (call.id, "round1", ("ops",))
    until_lease_ends(url, call.id)
    left = in_store(url, lambda store: store.item(item.id))
    assert left is not None and left.lease_expires is None  # nothing to renew: it waits for the call
    assert in_store(url, lambda store: store.withdraw_expired_sessions("the server's session ended")) == []

    bearer = {"Authorization": f"Bearer {token}"}
    with inbox_serve(url) as (_, base), httpx.Client(base_url=base, headers=bearer) as ann:
        assert [i["id"] for i in ann.get("/api/items").json()["pending"]] == [item.id]
        accept = {"action": "accept", "content": {"n": 5}}
        answered = ann.post(f"/api/items/{item.id}/answer", json=accept)
        assert answered.status_code == 200, answered.text

    done = run_cli(env, "calls", "resume", call.id, "--store", url, "--json", "--elicit", "decline")
    assert done.returncode == 0, done.stderr
    report = json.loads(json.loads(done.stdout)["content"][0]["text"])
    assert report["input_responses"] == {"round1": {"action": "accept", "content": {"n": 5}}}
    assert [c.status for c in calls(url)] == ["finished"]


def test_a_resumed_call_asking_again_leaves_one_item_pending_for_its_round(
    env: dict[str, str], url: str, server_url: str
) -> None:
    host = start_cli(
        env, "call", "rounds", "n=1", "--store", url, "--lease", str(LEASE), "--elicit", "web",
        "--url", server_url,
    )  # fmt: skip
    try:
        first = call_item(url, host)
    finally:
        kill(host)
    assert first.call_id is not None
    until_lease_ends(url, first.call_id)
    resumed = start_cli(
        env, "calls", "resume", first.call_id, "--store", url, "--lease", str(LEASE), "--elicit", "web"
    )
    try:
        deadline = time.monotonic() + LIMIT_S
        while (again := call_item(url, resumed)).id == first.id:
            assert time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        kill(resumed)
    pending = in_store(url, lambda store: store.pending_items())
    assert [(i.id, i.call_id, i.call_key) for i in pending] == [(again.id, first.call_id, "round1")]
    replaced = in_store(url, lambda store: store.item(first.id))
    assert replaced is not None and (replaced.status, replaced.reason) == ("withdrawn", ASKED_AGAIN)


class _Person:
    """Answers a form with ``n``, noting which kept call and input request it was asked for."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.asked_for: list[tuple[str, str] | None] = []

    async def fill_form(self, view: FormView) -> ElicitResult:
        self.asked_for.append(answering_input_request())
        return ElicitResult(action="accept", content={"n": self.n})

    async def consent_url(self, view: UrlView) -> UrlAnswer:
        return "decline"


@pytest.mark.anyio
async def test_a_kept_call_names_itself_to_the_hooks_and_host_resume_call_continues_it_in_process(
    server_url: str,
) -> None:
    async with open_store("memory") as store:
        person = _Person(3)
        keeping = CallKeeping(store=store, lease=5)
        async with Host(
            Receiver(elicitation=ElicitationService(person)), ConnectionOptions(call_store=keeping)
        ) as host:
            server = await host.connect_url("py2", server_url)
            result = await server.call_tool("rounds", {"n": 1})
            [kept] = await store.calls()
            assert json.loads(result.text)["input_responses"] == {
                "round1": {"action": "accept", "content": {"n": 3}}
            }
            assert person.asked_for == [(kept.id, "round1")]  # the hook may link its inbox item to the call
            assert (kept.status, kept.lease_owner) == ("finished", None)  # its lease given up
            with pytest.raises(UnknownCall, match="has finished: there is nothing to continue"):
                await host.resume_call(kept.id)
            with pytest.raises(UnknownCall, match="no continuable call"):
                await host.resume_call("nope")

            # a call left waiting by a process that stopped: continued here, with the inbox's answer
            await store.save_call(replace(kept, id="left", status="waiting"))
            item = await store.add_item(
                host="gone",
                server_name="py2",
                server_title=None,
                server_identity=kept.server_identity,
                kind="form",
                payload={},
                session="gone",
                call=("left", "round1"),
            )
            await store.answer(item.id, {"action": "accept", "content": {"n": 9}}, by="ann", address=None)
            assert await store.claim("call", "left", "another-host", 30)
            with pytest.raises(CallLeased, match="call left is being continued by another process"):
                await host.resume_call("left")
            assert await store.release("call", "left", "another-host")
            resumed = await host.resume_call("left")
            assert isinstance(resumed, CallToolResult)
            report = json.loads(resumed.text)
            assert report["input_responses"] == {"round1": {"action": "accept", "content": {"n": 9}}}
            assert person.asked_for == [(kept.id, "round1")]  # the answer came from the inbox: nobody asked
            assert (await store.call("left")).status == "finished"  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_a_kept_call_whose_input_request_is_refused_fails_with_that_refusal_and_is_not_continued(
    server_url: str,
) -> None:
    async with open_store("memory") as store:
        refusing = Receiver(sampling=SamplingService(ProviderRegistry([EchoProvider()]), DenyAll()))
        options = ConnectionOptions(call_store=CallKeeping(store=store, lease=5))
        async with Host(refusing, options) as host:
            server = await host.connect_url("py2", server_url)
            with pytest.raises(InputRequestFailed) as raised:  # as without a store: no error group
                await server.call_tool("sample", {"prompt": "hi"})
            assert raised.value.code == USER_REJECTED
            [kept] = await store.calls()
            assert (kept.status, kept.lease_owner) == ("failed", None)
            with pytest.raises(UnknownCall, match="has failed"):
                await host.resume_call(kept.id)


@pytest.mark.anyio
async def test_a_round_asked_while_the_store_is_unreachable_is_still_answered_and_the_call_finishes(
    server_url: str, postgres_cluster: PostgresCluster, caplog: pytest.LogCaptureFixture
) -> None:
    database = postgres_cluster.new_database()
    async with open_store(postgres_cluster.url(database)) as store:
        person = _Person(5)
        options = ConnectionOptions(call_store=CallKeeping(store=store, lease=5))
        async with Host(Receiver(elicitation=ElicitationService(person)), options) as host:
            server = await host.connect_url("py2", server_url)
            await anyio.to_thread.run_sync(cut_off, postgres_cluster, database)
            try:  # the round cannot be kept (the pool's connect timeout passes first): it is answered
                result = await server.call_tool("rounds", {"n": 1})
            finally:
                await anyio.to_thread.run_sync(let_in, postgres_cluster, database)
        assert json.loads(result.text)["input_responses"] == {
            "round1": {"action": "accept", "content": {"n": 5}}
        }
        assert "round 1 is not kept, so it cannot be resumed from there" in caplog.text
        assert postgres_cluster.password not in caplog.text
        assert await store.calls() == []  # nothing half-written


@pytest.mark.anyio
async def test_host_resume_call_of_a_crafted_record_gives_its_command_none_of_this_processs_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    loot = tmp_path / "loot.txt"
    steal = (
        f"import os, pathlib; pathlib.Path({str(loot)!r}).write_text(os.environ.get('OPENAI_API_KEY', ''))"
    )
    address = {"command": [sys.executable, "-c", steal], "cwd": str(tmp_path), "env": ["OPENAI_API_KEY"]}
    crafted = ContinuableCall(
        id="crafted",
        server_identity="/usr/local/bin/notes-server --safe (in /home/me/notes)",
        address=address,
        method="tools/call",
        target="notes",
        arguments=None,
        input_requests={},
        request_state=None,
        rounds_used=1,
        deadline=None,
        created=time.time(),
    )
    async with (
        open_store("memory") as store,
        Host(Receiver(), ConnectionOptions(call_store=CallKeeping(store=store, lease=5))) as host,
    ):
        await store.save_call(crafted)
        with pytest.raises(ValueError, match="record says it was made on /usr/local/bin/notes-server"):
            await host.resume_call("crafted")
        assert not loot.exists()  # a record that lies about its server is not run
        await store.save_call(replace(crafted, id="honest", server_identity=server_identity(address)))
        with pytest.raises(Exception):  # noqa: B017 (it is no MCP server: the connection fails)
            await host.resume_call("honest")
    assert loot.read_text() == ""  # it ran, given none of this process's variables
