"""Channels against loopback receivers: a Standard Webhooks endpoint verified with the
``standardwebhooks`` package, Apprise's json:// on HTTP and mailto:// on SMTP (aiosmtpd), and an
endpoint that fails (500, then slow, then refusing) to show the retries and the one give-up line."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from standardwebhooks.webhooks import Webhook

from host_receiver.errors import ChannelError
from host_receiver.notify import AppriseChannel, Notice, Notifier, WebhookChannel, channel_for, redact
from host_receiver.protocol.types import ElicitResult
from host_receiver.web import WebInbox
from tests.notify.conftest import SECRET, GiveUps, HttpReceiver, SmtpServer
from tests.web.conftest import asking, form_view, sampling_view

pytestmark = pytest.mark.anyio
PUBLIC = "https://inbox.example.test"
#: A server name meant to break out of a message's format: Markdown, HTML, an escape, a bidi override.
HOSTILE = "notes*bold*<b>x</b>[click](https://evil.test)\x1b[31m\u202e"


def webhook(receiver: HttpReceiver, **options: Any) -> WebhookChannel:
    return WebhookChannel(
        f"webhook+{receiver.url}", SECRET, label=redact(f"webhook+{receiver.url}", 1), **options
    )


@asynccontextmanager
async def notified_inbox(notifier: Notifier, **options: Any) -> AsyncIterator[WebInbox]:
    inbox = WebInbox(notifier=notifier, host="build-01", **options)
    inbox.public_url = PUBLIC
    async with notifier:
        yield inbox


def notice(item: str = "abc", event: Any = "item.waiting", server: str = "notes") -> Notice:
    return Notice(event, item, "form", server, "build-01", 1_700_000_000.0, None, f"{PUBLIC}/items/{item}")


async def test_a_waiting_and_an_answered_item_are_signed_webhooks_a_verifier_accepts(
    http_receiver: HttpReceiver,
) -> None:
    async with notified_inbox(Notifier([webhook(http_receiver)]), timeout=30) as inbox:
        async with asking(inbox, lambda: inbox.review_request(sampling_view())):
            [waiting] = await http_receiver.wait_for(1)
            item_id = inbox.state()["pending"][0]["id"]
            inbox.answer(item_id, {"action": "refuse"})
        [_, answered] = await http_receiver.wait_for(2)
    verifier = Webhook(SECRET)
    bodies = [verifier.verify(r.body, r.headers) for r in (waiting, answered)]
    assert [r.headers["webhook-id"] for r in (waiting, answered)] == [
        f"{item_id}.item.waiting",
        f"{item_id}.item.answered",
    ]
    assert [b["type"] for b in bodies] == ["item.waiting", "item.answered"]
    data = bodies[0]["data"]
    assert set(bodies[0]) == {"type", "timestamp", "data"}
    assert set(data) == {"id", "kind", "server", "host", "created", "expires", "summary", "link"}
    assert (data["id"], data["kind"], data["server"], data["host"]) == (
        item_id,
        "sampling",
        "notes",
        "build-01",
    )
    assert data["link"] == f"{PUBLIC}/items/{item_id}"
    assert data["expires"] is not None and data["created"].endswith("Z")
    assert data["summary"] == "notes sent a sampling request to approve; it waits for you"
    assert b"Hello" not in waiting.body  # the request's content only with notify_content


async def test_a_channel_that_hangs_never_holds_up_the_request(http_receiver: HttpReceiver) -> None:
    http_receiver.script[:] = ["slow"]
    http_receiver.slow_s = 1.0
    async with notified_inbox(Notifier([webhook(http_receiver)]), timeout=30) as inbox:
        async with asking(inbox, lambda: inbox.fill_form(form_view())) as answers:
            await http_receiver.wait_for(1)  # the endpoint holds the POST of item.waiting
            started = anyio.current_time()
            inbox.answer(inbox.state()["pending"][0]["id"], {"action": "decline"})
        assert answers == [ElicitResult(action="decline")]
        assert anyio.current_time() - started < 0.5  # answered while the channel still waits
        http_receiver.let_go()  # the endpoint answers at last: the notifier need not wait it out


async def test_content_goes_only_when_asked_and_a_forged_signature_is_refused(
    http_receiver: HttpReceiver,
) -> None:
    notifier = Notifier([webhook(http_receiver)])
    async with (
        notified_inbox(notifier, timeout=30, notify_content=True) as inbox,
        asking(inbox, lambda: inbox.fill_form(form_view())),
    ):
        [waiting] = await http_receiver.wait_for(1)
        inbox.answer(inbox.state()["pending"][0]["id"], {"action": "decline"})
    summary = Webhook(SECRET).verify(waiting.body, waiting.headers)["data"]["summary"]
    assert summary.startswith("notes sent a form to fill in; it waits for you: ")
    assert summary.endswith(": Tell us")
    forged = {**waiting.headers, "webhook-signature": "v1,AAAA"}
    with pytest.raises(Exception, match="No matching signature"):
        Webhook(SECRET).verify(waiting.body, forged)


@pytest.mark.slow
async def test_a_failing_endpoint_is_retried_then_given_up_with_one_line_and_no_secret(
    http_receiver: HttpReceiver, caplog: pytest.LogCaptureFixture, give_ups: GiveUps
) -> None:
    http_receiver.script[:] = [500, "slow", "refuse"]
    http_receiver.slow_s = 1.0
    other = HttpReceiver()
    url = f"webhook+{http_receiver.url}?token=s3cr3t-path"
    failing = WebhookChannel(url, SECRET, label=redact(url, 1), timeout=0.3)
    notifier = Notifier([failing, webhook(other)], attempts=5, backoff=0.05)
    caplog.set_level(logging.DEBUG)
    try:
        async with notifier:
            notifier.notify(notice())
            await other.wait_for(1, timeout=1.0)  # the healthy channel is not held up
            await give_ups.wait()
    finally:
        other.stop()
    assert len(http_receiver.received) == 3  # 500, slow, hung up; then refused twice
    [line] = [r.getMessage() for r in caplog.records if "given up" in r.getMessage()]
    assert line == (
        "notification to webhook+http://… (channel 1) given up after 5 attempts: "
        "the connection failed (ConnectError) (abc.item.waiting)"
    )
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "s3cr3t-path" not in logged and SECRET not in logged and str(http_receiver.port) not in logged


class Broken:
    """A channel whose every send fails in a way no channel should (a bug, a library's surprise)."""

    label = "broken://… (channel 1)"
    batches = False

    async def send(self, notices: Any) -> None:
        raise RuntimeError("boom")

    async def aclose(self) -> None:
        pass


async def test_a_channel_that_raises_is_given_up_and_the_others_go_on(
    http_receiver: HttpReceiver, give_ups: GiveUps
) -> None:
    async with Notifier([Broken(), webhook(http_receiver)], backoff=0.01) as notifier:
        notifier.notify(notice("one"))
        await give_ups.wait()
        notifier.notify(notice("two"))
        await http_receiver.wait_for(2)
    assert give_ups.lines[0] == (
        "notification to broken://… (channel 1) given up after 1 attempt: the channel failed (RuntimeError) "
        "(one.item.waiting)"
    )


async def test_a_4xx_is_final_and_is_not_retried(
    http_receiver: HttpReceiver, caplog: pytest.LogCaptureFixture, give_ups: GiveUps
) -> None:
    http_receiver.script[:] = [404]
    async with Notifier([webhook(http_receiver)], attempts=5, backoff=0.05) as notifier:
        notifier.notify(notice())
        await http_receiver.wait_for(1)
        await give_ups.wait()
    assert len(http_receiver.received) == 1
    assert "given up after 1 attempt: HTTP 404" in caplog.text


async def test_apprise_json_gets_plain_text_with_hostile_server_text_escaped(
    http_receiver: HttpReceiver, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    json_url = f"json://bot:pass-s3cr3t@127.0.0.1:{http_receiver.port}/hook/path-s3cr3t"
    async with Notifier([AppriseChannel(json_url, label=redact(json_url, 1))]) as notifier:
        notifier.notify(notice(server=safe(HOSTILE)))
        [got] = await http_receiver.wait_for(1)
    body = got.json()
    message = body["message"]
    assert "\x1b" not in message and "\u202e" not in message
    assert "notes*bold*<b>x</b>[click](https://evil.test)\\x1b[31m\\u202e sent a form to fill in" in message
    assert f"{PUBLIC}/items/abc" in message
    assert body["title"].startswith("host-receiver: ")
    assert got.headers["authorization"].startswith("Basic ")  # Apprise really had the credentials
    assert "s3cr3t" not in caplog.text and caplog.records  # Apprise logged, without the URL's secrets


async def test_apprise_mailto_sends_a_plain_text_mail(smtp_server: SmtpServer) -> None:
    url = (
        f"mailto://127.0.0.1:{smtp_server.port}?smtp=127.0.0.1&secure=no"
        "&from=host@example.test&to=person@example.test"
    )
    async with Notifier([channel_for(url, 1, environ={})]) as notifier:
        notifier.notify(notice(server=safe(HOSTILE)))
        [mail] = await smtp_server.wait_for(1)
    assert mail.get_content_type() == "text/plain"
    assert mail["To"] == "person@example.test"
    payload = mail.get_payload(decode=True)
    assert isinstance(payload, bytes)
    text = payload.decode()
    assert "<b>x</b>" in text and "\\x1b[31m" in text and "\x1b" not in text
    assert f"{PUBLIC}/items/abc" in text


async def test_a_person_s_channel_gets_one_message_per_period_summing_up_what_came(
    http_receiver: HttpReceiver,
) -> None:
    json_url = f"json://127.0.0.1:{http_receiver.port}/hook"
    async with Notifier([AppriseChannel(json_url, label="json")], every=0.6) as notifier:
        notifier.notify(notice("one"))
        [first] = await http_receiver.wait_for(1)
        for name in ("two", "three", "four", "five", "six"):
            notifier.notify(notice(name))
        await anyio.sleep(0.3)
        assert len(http_receiver.received) == 1  # still within the period
        [_, second] = await http_receiver.wait_for(2)
    assert first.json()["title"] == "host-receiver: notes waits for you"
    assert second.json()["title"] == "host-receiver: 5 requests wait for you"
    assert second.json()["message"].startswith("5 requests wait for you:\n- notes sent a form")
    assert all(f"{PUBLIC}/items/{n}" in second.json()["message"] for n in ("two", "six"))


async def test_what_is_still_queued_when_the_host_stops_is_sent_at_once(http_receiver: HttpReceiver) -> None:
    json_url = f"json://127.0.0.1:{http_receiver.port}/hook"
    async with Notifier([AppriseChannel(json_url, label="json")], every=30) as notifier:
        notifier.notify(notice("one"))
        await http_receiver.wait_for(1)
        notifier.notify(notice("two", "item.expired"))  # would wait 30 s for its turn
        started = anyio.current_time()
    assert anyio.current_time() - started < 5
    [_, last] = await http_receiver.wait_for(2)
    assert last.json()["title"] == "host-receiver: notes expired: nobody answered in time"


@pytest.mark.parametrize(
    ("url", "environ", "message"),
    [
        (
            "webhook+https://hooks.example.test/x",
            {},
            "(channel 3): a webhook needs its signing secret in $HOST_RECEIVER_WEBHOOK_SECRET",
        ),
        (
            "webhook+https://hooks.example.test/x",
            {"HOST_RECEIVER_WEBHOOK_SECRET": "whsec_!!"},
            "is not a whsec_ secret",
        ),
        ("hooks.example.test/secret-token", {}, "?://… (channel 3): not a URL"),
        ("webhook+https:///secret-token", {"HOST_RECEIVER_WEBHOOK_SECRET": SECRET}, "not a URL a webhook"),
        ("nosuchservice://secret-token", {}, "nosuchservice://… (channel 3): Apprise does not take this URL"),
    ],
)
def test_a_channel_that_cannot_work_is_a_clear_error_without_its_url(
    url: str, environ: dict[str, str], message: str
) -> None:
    with pytest.raises(ChannelError) as raised:
        channel_for(url, 3, environ=environ)
    assert message in str(raised.value)
    assert "secret-token" not in str(raised.value) and "hooks.example.test" not in str(raised.value)


def safe(text: str) -> str:
    """Server text as the inbox puts it in a notice."""
    from host_receiver.sanitize import safe_text

    return safe_text(text, 200)


@pytest.mark.slow
async def test_reminders_escalation_and_expiry_reach_their_channels(http_receiver: HttpReceiver) -> None:
    boss = HttpReceiver()
    notifier = Notifier([webhook(http_receiver)], escalation=[webhook(boss)])
    try:
        async with notified_inbox(notifier, timeout=1.0, remind_every=0.3, escalate_after=0.5) as inbox:
            assert await inbox.fill_form(form_view()) == ElicitResult(action="cancel")
            received = await http_receiver.wait_for(5)
            [escalated] = await boss.wait_for(1)
    finally:
        boss.stop()
    verifier = Webhook(SECRET)
    events = [verifier.verify(r.body, r.headers)["type"] for r in received]
    assert events == ["item.waiting", "item.reminder", "item.reminder", "item.reminder", "item.expired"]
    reminders = [r.headers["webhook-id"] for r in received[1:4]]
    assert [key.rsplit(".", 1)[1] for key in reminders] == ["1", "2", "3"]  # each its own key
    expired = verifier.verify(received[4].body, received[4].headers)["data"]
    assert expired["summary"] == "notes sent a form to fill in; it expired: nobody answered in time"
    assert verifier.verify(escalated.body, escalated.headers)["type"] == "item.escalated"
