"""Remembered sampling decisions in the shared store: an answer given to one host applies on
every host routed to the same people or teams, for the same server identity only; "session"
holds for the host session that kept it; the store unreachable refuses saying so.

Driven through the real receiver and sampling service (offline echo provider), two hosts'
approvers over one store, a scripted person behind each (tests/people/test_policies.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from host_receiver.errors import RpcError
from host_receiver.people.approval import Approve, Refuse
from host_receiver.people.shared import UNREACHABLE, SharedRememberDecisions, subjects
from host_receiver.store import SqlStore, open_store
from host_receiver.web._fleet import unreachable_store
from tests.people.test_policies import Person, sample

pytestmark = pytest.mark.anyio


def host(
    store: SqlStore, person: Person, *, session: str, routed: tuple[str, ...] = ("ops",)
) -> SharedRememberDecisions:
    """One host's remembered decisions: ``person`` asked, the server's identity its name."""
    return SharedRememberDecisions(
        person,
        store,
        subjects=subjects(routed, ["ann"]),
        session=session,
        identify=lambda name: f"stdio:{name}",
    )


async def test_always_given_on_one_host_approves_on_another_routed_to_the_same_team(tmp_path: Path) -> None:
    async with open_store(f"sqlite:///{tmp_path / 'fleet.db'}") as store:
        first, second = Person(Approve(remember="always")), Person(Approve())
        assert (await sample(host(store, first, session="a")))["content"]["text"] == "echo: hi"
        assert (await sample(host(store, second, session="b")))["content"]["text"] == "echo: hi"
        assert second.asked == [] and second.reviewed == []
        elsewhere = Person(Approve())
        await sample(host(store, elsewhere, session="c", routed=("security",)))
        assert len(elsewhere.asked) == 1  # another team: its own decisions
        other_server = Person(Approve())
        await sample(host(store, other_server, session="b"), server="mail")
        assert len(other_server.asked) == 1  # another server identity
        kept = await store.decisions("stdio:notes", ["team:ops"])
        assert [(d.subject, d.verdict, d.session) for d in kept] == [("team:ops", "always", None)]


async def test_session_holds_for_its_host_session_and_never_refuses_everywhere(tmp_path: Path) -> None:
    async with open_store(f"sqlite:///{tmp_path / 'fleet.db'}") as store:
        once = Person(Approve(remember="session"))
        await sample(host(store, once, session="a", routed=("ann",)))
        again = host(store, Person(), session="a", routed=("ann",))
        assert (await sample(again))["content"]["text"] == "echo: hi"  # asked nobody
        other = Person(Refuse(remember="never"))
        refused = await sample(host(store, other, session="b", routed=("ann",)))
        assert isinstance(refused, RpcError) and len(other.asked) == 1
        assert [d.subject for d in await store.decisions("stdio:notes", ["person:ann"])] == ["person:ann"]
        later = await sample(host(store, Person(), session="a", routed=("ann",)))
        assert isinstance(later, RpcError) and "remembered decision" in later.message


async def test_with_the_store_unreachable_sampling_is_refused_saying_so() -> None:
    person = Person(Approve())
    approver = SharedRememberDecisions(person, unreachable_store("down"), subjects=("everyone",), session="a")
    refused = await sample(approver)
    assert isinstance(refused, RpcError) and UNREACHABLE in refused.message
    assert person.asked == []
