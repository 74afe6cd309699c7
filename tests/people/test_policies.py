"""Ready sampling policies: remembered decisions, model allow-lists, rate limits.

Most tests drive the real receiver and sampling service with the offline echo
provider, with a scripted person behind the policy; the last one runs the CLI
without a terminal and checks that sampling is refused by default.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from host_receiver.errors import INVALID_REQUEST, USER_REJECTED, RpcError
from host_receiver.handlers import SamplingService
from host_receiver.people.approval import (
    Approve,
    Refuse,
    RequestDecision,
    ResultDecision,
    SamplingApprover,
    SamplingRequestView,
    SamplingResultView,
    Send,
)
from host_receiver.people.policies import (
    DecisionStore,
    ModelAllowList,
    RateLimit,
    RateLimits,
    RememberDecisions,
    http_identity,
    stdio_identity,
)
from host_receiver.protocol.types import CreateMessageRequestParams
from host_receiver.receiver import Receiver
from providers import EchoProvider, ProviderRegistry
from tests.cli_command import CLI
from tests.receiver_harness import connect, sampling_params

pytestmark = pytest.mark.anyio
SAMPLING = "sampling/createMessage"
ROOT = Path(__file__).resolve().parents[2]
PEER_PYTHON = ROOT / ".peers" / "py" / "bin" / "python"
PEER_SERVER = ROOT / "tests" / "interop" / "peers" / "py_server.py"


class Person:
    """A scripted person: gives the queued answers in order, records what was asked."""

    def __init__(self, *answers: RequestDecision, result: ResultDecision | None = None) -> None:
        self.answers = list(answers)
        self.result = result or Send()
        self.asked: list[SamplingRequestView] = []
        self.reviewed: list[SamplingResultView] = []
        self.gate: anyio.Event | None = None

    async def review_request(self, view: SamplingRequestView) -> RequestDecision:
        self.asked.append(view)
        if self.gate is not None:
            await self.gate.wait()
        return self.answers.pop(0)

    async def review_result(self, view: SamplingResultView) -> ResultDecision:
        self.reviewed.append(view)
        return self.result


async def sample(approver: SamplingApprover, *, server: str = "notes", text: str = "hi", **extra: Any) -> Any:
    """One plain sampling request from ``server``: the result, or the RpcError it got."""
    receiver = Receiver(sampling=SamplingService(ProviderRegistry([EchoProvider()]), approver))
    async with connect(receiver, name=server) as peer:
        try:
            return await peer.requestor.handle_request(SAMPLING, sampling_params(text, **extra))
        except RpcError as exc:
            return exc


def view(server: str = "notes", max_tokens: int = 50, model: str = "small") -> SamplingRequestView:
    params = CreateMessageRequestParams.model_validate(sampling_params("hello", maxTokens=max_tokens))
    return SamplingRequestView(server, "t1", params, model, ("small", "large"))


# --- remembered decisions ----------------------------------------------------------


async def test_once_asks_every_time(tmp_path: Path) -> None:
    person = Person(Approve(), Approve())
    approver = RememberDecisions(person, DecisionStore(tmp_path / "d.json"))
    assert (await sample(approver))["content"]["text"] == "echo: hi"
    assert (await sample(approver))["content"]["text"] == "echo: hi"
    assert len(person.asked) == 2 and len(person.reviewed) == 2
    assert not (tmp_path / "d.json").exists()


async def test_session_approval_skips_questions_until_the_host_restarts(tmp_path: Path) -> None:
    store = tmp_path / "d.json"
    person = Person(Approve(remember="session"))
    approver = RememberDecisions(person, DecisionStore(store))
    await sample(approver)
    result = await sample(approver, text="again")
    assert result["content"]["text"] == "echo: again"
    assert len(person.asked) == 1
    assert len(person.reviewed) == 0  # a remembered approval sends results unreviewed
    restarted = Person(Refuse())
    error = await sample(RememberDecisions(restarted, DecisionStore(store)))
    assert isinstance(error, RpcError) and error.code == USER_REJECTED
    assert len(restarted.asked) == 1


async def test_always_is_saved_per_server(tmp_path: Path) -> None:
    store = tmp_path / "conf" / "decisions.json"
    await sample(RememberDecisions(Person(Approve(remember="always")), DecisionStore(store)))
    assert json.loads(store.read_text())["servers"] == {"notes": "approve"}
    later = Person(Refuse())
    approver = RememberDecisions(later, DecisionStore(store))
    assert (await sample(approver))["content"]["text"] == "echo: hi"
    assert later.asked == []
    refused = await sample(approver, server="stranger")
    assert isinstance(refused, RpcError) and refused.code == USER_REJECTED
    assert [v.server for v in later.asked] == ["stranger"]


async def test_never_refuses_at_once_from_then_on(tmp_path: Path) -> None:
    store = tmp_path / "d.json"
    first = await sample(RememberDecisions(Person(Refuse(remember="never")), DecisionStore(store)))
    assert isinstance(first, RpcError) and first.code == USER_REJECTED
    later = Person(Approve())
    error = await sample(RememberDecisions(later, DecisionStore(store)))
    assert isinstance(error, RpcError) and error.code == USER_REJECTED
    assert "remembered decision" in error.message
    assert later.asked == []


async def test_session_refusal_and_forgetting(tmp_path: Path) -> None:
    store = DecisionStore(tmp_path / "d.json")
    person = Person(Refuse(remember="session"), Approve())
    approver = RememberDecisions(person, store)
    assert isinstance(await sample(approver), RpcError)
    assert isinstance(await sample(approver), RpcError)
    assert len(person.asked) == 1
    await approver.forget("notes")
    assert (await sample(approver))["content"]["text"] == "echo: hi"
    assert len(person.asked) == 2


async def test_a_waiting_request_obeys_the_answer_given_to_the_one_before(tmp_path: Path) -> None:
    person = Person(Approve(remember="session"))
    person.gate = anyio.Event()
    approver = RememberDecisions(person, DecisionStore(tmp_path / "d.json"))
    decisions: list[RequestDecision] = []

    async def ask() -> None:
        decisions.append(await approver.review_request(view()))

    async with anyio.create_task_group() as group:
        group.start_soon(ask)
        group.start_soon(ask)
        await anyio.wait_all_tasks_blocked()
        person.gate.set()
    assert len(person.asked) == 1
    assert [type(d) for d in decisions] == [Approve, Approve]


async def test_an_unreadable_decisions_file_counts_as_empty(tmp_path: Path, caplog: Any) -> None:
    path = tmp_path / "d.json"
    path.write_text("{not json")
    path.chmod(0o600)
    person = Person(Approve(remember="always"))
    await sample(RememberDecisions(person, DecisionStore(path)))
    assert len(person.asked) == 1
    assert "ignoring unreadable decisions file" in caplog.text
    assert json.loads(path.read_text())["servers"] == {"notes": "approve"}


async def test_decisions_file_follows_the_environment(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("HOST_RECEIVER_DECISIONS", str(tmp_path / "env.json"))
    assert DecisionStore().path == tmp_path / "env.json"
    monkeypatch.delenv("HOST_RECEIVER_DECISIONS")
    assert DecisionStore().path.name == "decisions.json"


async def test_http_servers_are_known_by_origin_path_and_query() -> None:
    assert http_identity("HTTP://user:pw@Example.com:8080/mcp?x=1#f") == "http://example.com:8080/mcp?x=1"
    assert http_identity("https://example.com/a/mcp") != http_identity("https://example.com/b/mcp")
    assert http_identity("https://example.com/mcp") == "https://example.com/mcp"


async def test_always_for_one_tenant_of_a_url_does_not_approve_another(tmp_path: Path) -> None:
    person = Person(Approve(remember="always"), Refuse("not mallory"))
    remember = RememberDecisions(person, DecisionStore(tmp_path / "d.json"), identify=http_identity)
    alice, mallory = "http://127.0.0.1:8931/mcp?tenant=alice", "http://127.0.0.1:8931/mcp?tenant=mallory"

    assert (await sample(remember, server=alice))["content"]["text"] == "echo: hi"
    assert (await sample(remember, server=mallory)).code == USER_REJECTED  # asked, not approved
    assert (await sample(remember, server=alice))["content"]["text"] == "echo: hi"  # remembered: not asked
    assert [v.server for v in person.asked] == [alice, mallory]


async def test_always_for_a_script_asks_again_once_the_script_is_rewritten(
    tmp_path: Path, caplog: Any
) -> None:
    script = tmp_path / "srv.py"
    script.write_text("print('the server')\n")
    person = Person(Approve(remember="always"), Refuse("changed"))
    remember = RememberDecisions(
        person,
        DecisionStore(tmp_path / "d.json"),
        identify=lambda _: stdio_identity([sys.executable, "srv.py"], tmp_path),
    )
    assert (await sample(remember))["content"]["text"] == "echo: hi"
    assert (await sample(remember))["content"]["text"] == "echo: hi"
    assert len(person.asked) == 1

    script.write_text("print('another server')\n")
    remember = RememberDecisions(person, remember.store, identify=remember.identify)  # the next run

    assert (await sample(remember)).code == USER_REJECTED
    assert len(person.asked) == 2
    assert "changed since its saved decision (the file it runs is not the same" in caplog.text
    assert f"{sys.executable} srv.py (in {tmp_path}) changed" in caplog.text


async def test_a_decisions_file_of_version_2_is_dropped_saying_why(tmp_path: Path, caplog: Any) -> None:
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"version": 2, "servers": {"http://127.0.0.1:8931/mcp": "approve"}}))
    path.chmod(0o600)
    person = Person(Refuse("asked again"))

    assert (
        await sample(
            RememberDecisions(person, DecisionStore(path), identify=http_identity),
            server="http://127.0.0.1:8931/mcp",
        )
    ).code == USER_REJECTED

    assert len(person.asked) == 1
    assert "dropped 1 saved sampling decision(s)" in caplog.text
    assert "without a URL's query or the hash of the file a server runs" in caplog.text
    assert json.loads(path.read_text()) == {"version": 3, "servers": {}}


# --- model allow-list --------------------------------------------------------------


async def test_an_edited_model_outside_the_allow_list_is_refused() -> None:
    person = Person(Approve(model="gpt-huge"), Approve(model="large"))
    approver = ModelAllowList(person)
    refused = await approver.review_request(view())
    assert isinstance(refused, Refuse)
    assert "'gpt-huge' is not allowed for 'notes'" in refused.reason
    assert await approver.review_request(view()) == Approve(model="large")


async def test_an_explicit_allow_list_refuses_before_anyone_is_asked() -> None:
    person = Person(Approve())
    approver = ModelAllowList(person, {"notes": ["large"], "*": ["small"]})
    refused = await approver.review_request(view(model="small"))
    assert isinstance(refused, Refuse) and "(allowed: large)" in refused.reason
    assert person.asked == []
    assert isinstance(await approver.review_request(view(server="other", model="small")), Approve)


async def test_allow_list_refusal_reaches_the_server_as_user_rejected() -> None:
    error = await sample(ModelAllowList(Person(Approve(model="elsewhere"))))
    assert isinstance(error, RpcError) and error.code == USER_REJECTED
    assert "elsewhere" in error.message


# --- rate limits -------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_requests_per_minute_refuse_at_once_with_a_clear_error() -> None:
    clock = Clock()
    person = Person(*[Approve()] * 4)
    limit = RateLimit(person, RateLimits(requests_per_minute=2), clock=clock)
    await limit.review_request(view())
    clock.now += 10
    await limit.review_request(view())
    with pytest.raises(RpcError) as refused:
        await limit.review_request(view())
    assert refused.value.code == INVALID_REQUEST
    assert "'notes' may make 2 sampling requests per minute; try again in 50 s" in refused.value.message
    assert refused.value.data == {"limit": "requests_per_minute", "max": 2, "retryAfterSeconds": 50}
    assert len(person.asked) == 2  # nobody was asked about the refused one
    await limit.review_request(view(server="other"))  # each server has its own count
    clock.now += 50
    await limit.review_request(view())


async def test_tokens_per_hour_count_what_was_granted() -> None:
    clock = Clock()
    person = Person(Approve(), Refuse(), Approve(max_tokens=100), Approve())
    limit = RateLimit(person, RateLimits(tokens_per_hour=1000), clock=clock)
    await limit.review_request(view(max_tokens=400))  # about 402 with the prompt
    await limit.review_request(view(max_tokens=400))  # refused: costs nothing
    await limit.review_request(view(max_tokens=400))  # edited down to 100
    clock.now += 600
    await limit.review_request(view(max_tokens=400))  # 402 + 102 + 402 so far
    with pytest.raises(RpcError) as refused:
        await limit.review_request(view(max_tokens=400))
    message = refused.value.message
    assert "'notes' may use 1000 tokens per hour; this request needs up to 402 and 94 remain" in message
    assert "try again in 50 min" in message
    clock.now += 3000  # the first charge has left the hour
    person.answers.append(Approve())
    await limit.review_request(view(max_tokens=400))


async def test_a_request_bigger_than_the_whole_budget_says_so() -> None:
    limit = RateLimit(Person(), RateLimits(tokens_per_hour=100))
    with pytest.raises(RpcError, match="this request alone needs up to 202"):
        await limit.review_request(view(max_tokens=200))


async def test_overrides_and_the_server_sees_the_limit_error() -> None:
    limits = RateLimit(
        Person(Approve()), RateLimits(), overrides={"notes": RateLimits(requests_per_minute=1)}
    )
    assert (await sample(limits))["content"]["text"] == "echo: hi"
    receiver = Receiver(sampling=SamplingService(ProviderRegistry([EchoProvider()]), limits))
    async with connect(receiver, name="notes") as peer:
        task_id = await peer.create_task(SAMPLING, sampling_params())
        with pytest.raises(RpcError) as error:
            await peer.requestor.handle_request("tasks/result", {"taskId": task_id})
    assert error.value.code == INVALID_REQUEST
    assert "1 sampling requests per minute" in error.value.message


# --- the CLI's default --------------------------------------------------------------


def peer_command() -> Sequence[str]:
    if not PEER_PYTHON.exists():
        pytest.skip("the Python peer is not installed (run .ci/install-peers)")
    return [str(PEER_PYTHON), str(PEER_SERVER)]


@pytest.mark.slow
def test_without_a_terminal_or_a_policy_the_cli_refuses_sampling(tmp_path: Path) -> None:
    env = {**os.environ, "HOST_RECEIVER_CONFIG": str(tmp_path / "none.toml")}
    env["HOST_RECEIVER_DECISIONS"] = str(tmp_path / "decisions.json")
    command = [*CLI, "run", "--call", "sample_plain"]
    command += ["--args", '{"prompt": "hi"}', "--", *peer_command()]
    done = subprocess.run(
        command, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(json.loads(done.stdout)["content"][0]["text"])
    assert report["error"]["code"] == USER_REJECTED
