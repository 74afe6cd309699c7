"""Back-pressure on a server that floods the person: a cap on requests waiting for a person, and a
rate limit on approvals by a remembered answer (docs/security.md, docs/limits.md).

Through the real receiver and sampling/elicitation services with the offline echo provider; the
cap lives in the code the terminal and the web inbox share (RememberDecisions, ElicitationService).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from host_receiver.errors import INVALID_REQUEST, RpcError
from host_receiver.handlers import ElicitationService
from host_receiver.people.approval import DEFAULT_MAX_WAITING, Approve, FormView, UrlAnswer, UrlView
from host_receiver.people.policies import DEFAULT_REMEMBERED_PER_MINUTE, DecisionStore, RememberDecisions
from host_receiver.protocol.types import ElicitResult
from host_receiver.receiver import Receiver
from tests.people.test_policies import Person, sample, view
from tests.receiver_harness import connect

pytestmark = pytest.mark.anyio


async def test_one_more_sampling_request_than_may_wait_for_a_person_is_refused_with_the_reason(
    tmp_path: Path,
) -> None:
    person = Person(*[Approve()] * DEFAULT_MAX_WAITING)
    person.gate = anyio.Event()
    approver = RememberDecisions(person, DecisionStore(tmp_path / "d.json"))
    assert await approver.remembered("notes") is None  # the file read, off the loop, is done
    answered: list[object] = []

    async def wait_for_the_person() -> None:
        answered.append(await approver.review_request(view()))

    async with anyio.create_task_group() as group:
        for _ in range(DEFAULT_MAX_WAITING):
            group.start_soon(wait_for_the_person)
        await anyio.wait_all_tasks_blocked()
        with anyio.fail_after(5):  # refused at once, not queued
            refused = await sample(approver)
        other = Person(Approve())
        assert (await sample(RememberDecisions(other, DecisionStore(tmp_path / "o.json"))))["content"]
        person.gate.set()
    assert isinstance(refused, RpcError) and refused.code == INVALID_REQUEST
    assert f"'notes' already has {DEFAULT_MAX_WAITING} sampling requests waiting" in refused.message
    assert refused.data == {"limit": "max_waiting", "max": DEFAULT_MAX_WAITING}
    assert len(answered) == DEFAULT_MAX_WAITING and len(person.asked) == DEFAULT_MAX_WAITING


class GatedForms:
    """A person who answers forms once the gate opens."""

    def __init__(self) -> None:
        self.gate = anyio.Event()
        self.asked = 0

    async def fill_form(self, view: FormView) -> ElicitResult:
        self.asked += 1
        await self.gate.wait()
        return ElicitResult(action="decline")

    async def consent_url(self, view: UrlView) -> UrlAnswer:
        await self.gate.wait()
        return "decline"


async def test_one_more_form_than_may_wait_for_a_person_is_refused_with_the_reason() -> None:
    person = GatedForms()
    receiver = Receiver(elicitation=ElicitationService(person))
    form = {"mode": "form", "message": "Name?", "requestedSchema": {"type": "object", "properties": {}}}
    results: list[Any] = []
    async with connect(receiver, name="notes") as peer:

        async def ask() -> None:
            results.append(await peer.requestor.handle_request("elicitation/create", form))

        async with anyio.create_task_group() as group:
            for _ in range(DEFAULT_MAX_WAITING):
                group.start_soon(ask)
            await anyio.wait_all_tasks_blocked()
            with anyio.fail_after(5), pytest.raises(RpcError) as refused:  # refused at once, not queued
                await peer.requestor.handle_request("elicitation/create", form)
            person.gate.set()
    assert refused.value.code == INVALID_REQUEST
    assert f"already has {DEFAULT_MAX_WAITING} forms and links waiting" in refused.value.message
    assert person.asked == DEFAULT_MAX_WAITING and len(results) == DEFAULT_MAX_WAITING


async def test_always_approvals_beyond_the_default_rate_are_refused_until_the_minute_passes(
    tmp_path: Path,
) -> None:
    store = DecisionStore(tmp_path / "d.json")
    await store.set("notes", "approve")
    now = [1000.0]
    approver = RememberDecisions(Person(), store, clock=lambda: now[0])
    for _ in range(DEFAULT_REMEMBERED_PER_MINUTE):
        assert isinstance(await approver.review_request(view()), Approve)
    limited = await sample(approver)
    assert isinstance(limited, RpcError) and limited.code == INVALID_REQUEST
    assert (
        f"'notes' may make {DEFAULT_REMEMBERED_PER_MINUTE} sampling requests approved by a remembered "
        "answer per minute" in limited.message
    )
    assert limited.data["limit"] == "remembered_per_minute"
    now[0] += 61
    assert (await sample(approver))["content"]["text"] == "echo: hi"
    unlimited = RememberDecisions(Person(), store, remembered_per_minute=None)
    for _ in range(DEFAULT_REMEMBERED_PER_MINUTE + 1):
        assert isinstance(await unlimited.review_request(view()), Approve)
