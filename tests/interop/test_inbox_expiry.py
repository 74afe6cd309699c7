"""Expiry in the web inbox, as real servers see it: mcp 1.30 (tasks, plain requests) and mcp 2.3.0
(2026-07-28 input rounds) each get the exact reason, never a person's refusal (issue 37)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook

from host_receiver.client.host import Host, ServerConnection
from host_receiver.errors import USER_REJECTED, InputRequestFailed
from host_receiver.notify import Notifier, WebhookChannel, parse_duration
from host_receiver.receiver import Receiver
from host_receiver.transports.base import Transport
from host_receiver.transports.stdio import StdioTransport
from host_receiver.web import WebInbox
from providers import Config, build_registry
from tests.interop import PY2_SERVER, peer_command, peer_python
from tests.interop.conftest import TEST_CONFIG, call_report
from tests.notify.conftest import SECRET, HttpReceiver

pytestmark = pytest.mark.anyio
REASON = "no answer within 1s: expired, nobody refused"


@asynccontextmanager
async def inbox_host(
    transport: Transport, notifier: Notifier | None = None, **options: Any
) -> AsyncIterator[tuple[WebInbox, ServerConnection]]:
    """A host whose sampling and elicitation wait in a web inbox that gives up after ``1s``."""
    inbox = WebInbox(timeout=parse_duration("1s"), notifier=notifier, **options)
    inbox.public_url = "http://inbox.test"
    registry = build_registry(provider="echo", config=Config(), environ={})
    receiver = Receiver(
        sampling=inbox.sampling(registry), elicitation=inbox.elicitation(), config=TEST_CONFIG
    )
    async with AsyncExitStack() as stack:
        if notifier is not None:
            await stack.enter_async_context(notifier)
        await stack.enter_async_context(registry)
        host = await stack.enter_async_context(Host(receiver))
        yield inbox, await host.connect("peer", transport)


def py_peer() -> StdioTransport:
    command = peer_command("python")
    return StdioTransport(command.argv[0], command.argv[1:], env=command.env, inherit_env=True, name="python")


async def test_mcp1_tasks_and_plain_requests_get_the_expiry_reason() -> None:
    team, boss = HttpReceiver(), HttpReceiver()
    notifier = Notifier(
        [WebhookChannel(f"webhook+{team.url}", SECRET, label="team")],
        escalation=[WebhookChannel(f"webhook+{boss.url}", SECRET, label="boss")],
    )
    try:
        async with inbox_host(py_peer(), notifier, remind_every=0.4, escalate_after=0.6) as (inbox, server):
            sampled = await call_report(server, "sample_task", {"prompt": "anyone?"})
            form = await call_report(server, "elicit_task", {"message": "Your name?"})
            plain = await call_report(server, "elicit_plain", {"message": "Your name?"})
    finally:
        team.stop()
        boss.stop()
    assert sampled["statuses"][-1] == "failed"
    assert sampled["last_task"]["statusMessage"] == f"Sampling failed (-1): {REASON}"
    assert (sampled["result_error"]["code"], sampled["result_error"]["message"]) == (USER_REJECTED, REASON)
    # A form's task completes with `cancel` and the reason as its status message (issue 38, item 9).
    assert form["statuses"][-1] == "completed"
    assert form["last_task"]["statusMessage"] == REASON
    assert form["result"]["action"] == "cancel"
    # Without a task the reason travels as the error.
    assert (plain["error"]["code"], plain["error"]["message"]) == (USER_REJECTED, REASON)
    history = inbox.state()["history"]
    assert [i["outcome"] for i in history] == ["expired"] * 3
    told = [Webhook(SECRET).verify(r.body, r.headers)["type"] for r in team.received]
    per_item = ["item.waiting", "item.reminder", "item.reminder", "item.expired"]
    assert sorted(told) == sorted(per_item * 3)  # each waiting request, reminded twice, then expired
    escalated = [Webhook(SECRET).verify(r.body, r.headers)["type"] for r in boss.received]
    assert escalated == ["item.escalated"] * 3


async def test_mcp2_input_rounds_end_the_call_with_the_expiry_reason() -> None:
    transport = StdioTransport(str(peer_python("py2")), [str(PY2_SERVER)], name="py2-stdio")
    async with inbox_host(transport) as (inbox, server):
        failures: list[InputRequestFailed] = []
        calls = [("elicit_form", {"tag": "expired-form"}), ("sample", {"prompt": "x", "tag": "s"})]
        for tool, arguments in calls:
            with pytest.raises(InputRequestFailed) as raised:
                await server.call_tool(tool, arguments)
            failures.append(raised.value)
        assert json.loads((await server.call_tool("whoami", {"tag": "still"})).text)["era"] == "modern"
    assert [(f.method, f.code) for f in failures] == [
        ("elicitation/create", USER_REJECTED),
        ("sampling/createMessage", USER_REJECTED),
    ]
    assert all(f.message.endswith(f"failed: {REASON}") for f in failures)
    assert [i["outcome"] for i in inbox.state()["history"]] == ["expired", "expired"]
