"""The web inbox's hooks and JSON API, through httpx: on the ASGI app, and served by hypercorn.

Runs on asyncio and trio (the conftest's default): the inbox serves itself on either.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from host_receiver.notify import Duration
from host_receiver.people.approval import Approve, Refuse, Send
from host_receiver.protocol.elicitation_rules import parse_form_schema
from host_receiver.protocol.types import ElicitRequestFormParams, ElicitResult, ElicitValue, TextContent
from host_receiver.receiver import Receiver
from host_receiver.receiver.work import WorkContext
from host_receiver.web import WAITING, WebInbox
from tests.receiver_harness import connect, form_params
from tests.web.conftest import (
    EVERY_FIELD,
    ORIGIN,
    asking,
    form_view,
    result_view,
    sampling_view,
    url_view,
)

pytestmark = pytest.mark.anyio


async def page_session(client: httpx.AsyncClient, inbox: WebInbox) -> str:
    """What the page does with the token: make a session, which ``client`` then sends as a header;
    the session's CSRF token."""
    made = await client.post("/api/session", headers={"Authorization": f"Bearer {inbox.token}"})
    assert made.status_code == 200 and "set-cookie" not in made.headers
    client.headers["X-Inbox-Session"] = made.json()["session"]
    csrf: str = (await client.get("/api/session")).json()["csrf"]
    assert csrf == made.json()["csrf"]
    return csrf


async def pending(api: httpx.AsyncClient) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = (await api.get("/api/items")).json()["pending"]
    return items


async def test_the_page_holds_no_secret_and_no_answer_sets_a_cookie(inbox: WebInbox) -> None:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=inbox.app), base_url=ORIGIN) as client:
        for address in ("/", f"/?token={inbox.token}"):  # the older address opens the page too
            page = await client.get(address)
            assert page.status_code == 200 and "<title>host-receiver inbox</title>" in page.text
            assert inbox.token not in page.text and "<script>" not in page.text
            assert "set-cookie" not in page.headers
            csp = page.headers["content-security-policy"]
            assert "default-src 'self'" in csp and "unsafe-inline" not in csp
        for asset in ("/inbox.js", "/inbox.css"):
            served = await client.get(asset)
            assert served.status_code == 200 and "innerHTML" not in served.text
        await page_session(client, inbox)
        assert (await client.get("/api/items")).status_code == 200
        assert not client.cookies


async def test_only_the_token_makes_a_session_and_only_the_header_carries_it(inbox: WebInbox) -> None:
    transport = httpx.ASGITransport(app=inbox.app)
    async with httpx.AsyncClient(transport=transport, base_url=ORIGIN) as client:
        bearer = {"Authorization": f"Bearer {inbox.token}"}
        cross = await client.post("/api/session", headers={**bearer, "Origin": "http://127.0.0.1:47001"})
        assert cross.status_code == 403
        assert (await client.post("/api/session")).status_code == 401
        made = (await client.post("/api/session", headers={**bearer, "Origin": ORIGIN})).json()
        session = {"X-Inbox-Session": made["session"]}
        assert (await client.get("/api/items", headers=session)).status_code == 200
        again = await client.post(
            "/api/session", headers={**session, "X-CSRF-Token": made["csrf"], "Origin": ORIGIN}
        )
        assert again.status_code == 403  # a session makes no other session
        for carried in ({"Cookie": f"host_receiver_inbox={made['session']}"}, {"X-Inbox-Session": "wrong"}):
            assert (await client.get("/api/session", headers=carried)).status_code == 401


@pytest.mark.parametrize("credential", [{"token": "wrong"}, {"bearer": "wrong"}, {"session": "wrong"}, {}])
async def test_a_wrong_or_missing_credential_gets_401_after_a_pause(
    inbox: WebInbox, credential: dict[str, str]
) -> None:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=inbox.app), base_url=ORIGIN) as client:
        started = time.monotonic()
        if "token" in credential:
            answer = await client.get(f"/?token={credential['token']}")
        else:
            headers = {"Authorization": f"Bearer {credential['bearer']}"} if "bearer" in credential else {}
            if "session" in credential:
                headers = {"X-Inbox-Session": credential["session"]}
            answer = await client.get("/api/items", headers=headers)
        assert answer.status_code == 401
        assert time.monotonic() - started >= inbox.auth_delay
        assert "set-cookie" not in answer.headers


async def test_the_first_answer_wins_and_a_second_gets_409(inbox: WebInbox, api: httpx.AsyncClient) -> None:
    async with asking(inbox, lambda: inbox.review_request(sampling_view())) as answers:
        [item] = await pending(api)
        assert item["kind"] == "sampling" and item["server"] == "notes" and item["taskId"] == "task-1"
        first = await api.post(
            f"/api/items/{item['id']}/answer", json={"action": "approve", "remember": "session"}
        )
        second = await api.post(f"/api/items/{item['id']}/answer", json={"action": "refuse"})
    assert first.status_code == 200 and first.json()["item"]["outcome"] == "approved for this session"
    assert second.status_code == 409 and second.json()["item"]["outcome"] == "approved for this session"
    assert answers == [Approve(remember="session")]
    [done] = (await api.get("/api/items")).json()["history"]
    assert done["audit"].startswith("inbox answered requestor=notes task=task-1")
    assert done["answered"].endswith("Z")


@pytest.mark.parametrize(
    ("answer", "decision"),
    [
        ({"action": "approve"}, Approve()),
        ({"action": "approve", "remember": "always"}, Approve(remember="always")),
        ({"action": "refuse"}, Refuse()),
        ({"action": "never"}, Refuse(remember="never")),
    ],
)
async def test_each_sampling_button_is_its_decision(
    inbox: WebInbox, api: httpx.AsyncClient, answer: dict[str, Any], decision: Any
) -> None:
    async with asking(inbox, lambda: inbox.review_request(sampling_view())) as answers:
        [item] = await pending(api)
        assert (await api.post(f"/api/items/{item['id']}/answer", json=answer)).status_code == 200
    assert answers == [decision]


async def test_edits_change_only_what_the_person_changed(inbox: WebInbox, api: httpx.AsyncClient) -> None:
    hidden = "Hi\u202eevil"
    view = sampling_view(system="sys\x1b[31m", text=hidden)
    async with asking(inbox, lambda: inbox.review_request(view)) as answers:
        [item] = await pending(api)
        shown = item["request"]
        assert (
            shown["systemPrompt"] == "sys\\x1b[31m"
            and shown["messages"][0]["content"][0]["text"] == "Hi\\u202eevil"
        )
        url = f"/api/items/{item['id']}/answer"
        wrong = await api.post(url, json={"action": "approve", "edits": {"maxTokens": 101}})
        assert wrong.status_code == 422 and wrong.json()["problems"] == {
            "maxTokens": "must be a whole number from 1 to 100"
        }
        edits = {"systemPrompt": "sys\\x1b[31m", "messages": ["Hello there"], "maxTokens": 50}
        assert (await api.post(url, json={"action": "approve", "edits": edits})).status_code == 200
    [decision] = answers
    assert isinstance(decision, Approve)
    assert decision.system_prompt is None and decision.max_tokens == 50
    assert decision.messages is not None and decision.messages[0].content == TextContent(text="Hello there")


async def test_a_result_is_sent_as_it_is_or_edited_or_refused(
    inbox: WebInbox, api: httpx.AsyncClient
) -> None:
    for answer, expected in [
        ({"action": "send"}, Send()),
        ({"action": "send", "text": "A reply"}, Send()),
        ({"action": "refuse"}, Refuse()),
    ]:
        async with asking(inbox, lambda: inbox.review_result(result_view())) as answers:
            [item] = await pending(api)
            await api.post(f"/api/items/{item['id']}/answer", json=answer)
        assert answers == [expected]
    async with asking(inbox, lambda: inbox.review_result(result_view())) as answers:
        [item] = await pending(api)
        await api.post(f"/api/items/{item['id']}/answer", json={"action": "send", "text": "Shorter"})
    [sent] = answers
    assert (
        isinstance(sent, Send)
        and sent.result is not None
        and sent.result.content == TextContent(text="Shorter")
    )


async def test_a_form_gets_the_terminals_checks_and_stays_pending_until_its_answer_passes(
    inbox: WebInbox, api: httpx.AsyncClient
) -> None:
    wrong = {"name": "A", "email": "nope", "colour": "x", "seats": 9, "tags": ["a", "b"]}
    async with asking(inbox, lambda: inbox.fill_form(form_view())) as answers:
        [item] = await pending(api)
        fields = {f["name"]: f for f in item["request"]["fields"]}
        assert fields["name"]["label"] == "Your name" and fields["name"]["value"] == "Ada"
        assert fields["colour"]["options"] == [
            {"value": "r", "label": "Red"},
            {"value": "g", "label": "Green"},
        ]
        refused = await api.post(
            f"/api/items/{item['id']}/answer", json={"action": "accept", "content": wrong}
        )
        assert refused.status_code == 422
        assert refused.json()["problems"] == parse_form_schema(EVERY_FIELD).problems(wrong)
        assert [i["id"] for i in await pending(api)] == [item["id"]]
        good: dict[str, ElicitValue] = {
            "name": "Ada",
            "email": "ada@example.org",
            "colour": "g",
            "seats": 3,
            "agree": True,
        }
        assert (
            await api.post(f"/api/items/{item['id']}/answer", json={"action": "accept", "content": good})
        ).status_code == 200
    assert answers == [ElicitResult(action="accept", content=good)]


@pytest.mark.parametrize(("action", "answer"), [("accept", "accept"), ("decline", "decline")])
async def test_a_link_is_consented_or_declined_with_the_terminals_warnings(
    inbox: WebInbox, api: httpx.AsyncClient, action: str, answer: str
) -> None:
    async with asking(inbox, lambda: inbox.consent_url(url_view())) as answers:
        [item] = await pending(api)
        shown = item["request"]
        assert shown["domain"] == "192.0.2.1" and shown["warnings"] == list(url_view().warnings)
        assert len(shown["warnings"]) == 3  # an IP address, a port, plain http
        await api.post(f"/api/items/{item['id']}/answer", json={"action": action})
    assert answers == [answer]
    # answered through the API, not by the page's Open: nothing says the link was opened
    assert (await api.get("/api/items")).json()["history"][0]["outcome"] == (
        "accepted" if action == "accept" else "declined"
    )


@pytest.mark.parametrize(("action", "outcome"), [("done", "done"), ("cancel", "given up")])
async def test_a_link_a_request_needs_is_finished_or_given_up_on_its_own_card(
    inbox: WebInbox, api: httpx.AsyncClient, action: str, outcome: str
) -> None:
    view = url_view(url="https://pay.example.com/authorize")
    async with asking(inbox, lambda: inbox.link_done(view)) as answers:
        [item] = await pending(api)
        assert item["kind"] == "done" and item["request"]["url"] == "https://pay.example.com/authorize"
        assert item["request"]["domain"] == "pay.example.com"
        refused = await api.post(f"/api/items/{item['id']}/answer", json={"action": "accept"})
        assert refused.status_code == 422 and refused.json()["problems"] == {
            "action": "must be done or cancel"
        }
        await api.post(f"/api/items/{item['id']}/answer", json={"action": action})
    assert answers == [action]
    assert (await api.get("/api/items")).json()["history"][0]["outcome"] == outcome


async def test_a_link_to_finish_nobody_answers_in_time_is_given_up() -> None:
    inbox = WebInbox(timeout=0.2)
    assert await inbox.link_done(url_view()) == "cancel"
    assert inbox.state()["history"][0]["outcome"] == "expired"


async def test_nobody_answering_in_time_refuses_sampling_and_cancels_a_form_as_expired() -> None:
    inbox = WebInbox(timeout=0.05)
    reason = "no answer within 0.05s: expired, nobody refused"
    assert await inbox.review_request(sampling_view()) == Refuse(reason)
    assert await inbox.review_result(result_view()) == Refuse(reason)
    assert await inbox.fill_form(form_view()) == ElicitResult(action="cancel")
    assert await inbox.consent_url(url_view()) == "cancel"
    history = inbox.state()["history"]
    assert [(i["outcome"], i["answeredBy"]) for i in history] == [("expired", "timeout")] * 4
    assert all(i["audit"].endswith(" by=timeout outcome=expired") for i in history)


async def test_a_duration_is_quoted_as_given_and_never_waits_until_answered() -> None:
    inbox = WebInbox(timeout=Duration(0.05, "50ms-ish"))
    assert await inbox.review_request(sampling_view()) == Refuse(
        "no answer within 50ms-ish: expired, nobody refused"
    )
    forever = WebInbox(timeout=None)
    async with asking(forever, lambda: forever.fill_form(form_view())) as answers:
        await anyio.sleep(0.15)  # three times the other's timeout
        [item] = forever.state()["pending"]
        assert item["expires"] is None
        forever.answer(item["id"], {"action": "decline"})
    assert answers == [ElicitResult(action="decline")]


async def test_a_waiting_task_says_so_and_its_status_gives_the_reason_at_a_timeout() -> None:
    inbox = WebInbox(timeout=0.2)
    statuses: list[str] = []

    async def status(task_id: str, message: str) -> None:
        statuses.append(message)

    async def notify(method: str, params: dict[str, Any] | None) -> None:
        pass

    context = WorkContext(
        requestor="r", requestor_name="notes", task_id="t", progress_token=None, notify=notify, status=status
    )
    handler = inbox.elicitation()
    schema = {"type": "object", "properties": {"x": {"type": "string"}}}
    params = ElicitRequestFormParams(message="m", requested_schema=schema)
    assert await handler.accept(params, "notes")(context) == ElicitResult(action="cancel")
    assert statuses == [WAITING, "no answer within 0.2s: expired, nobody refused"]


URL_PARAMS = {
    "mode": "url",
    "message": "Sign in",
    "url": "https://example.com/login",
    "elicitationId": "el-1",
}


@pytest.mark.parametrize("params", [form_params(), URL_PARAMS], ids=["form", "url"])
async def test_a_task_nobody_answers_completes_with_the_reason_as_its_status_message(
    params: dict[str, Any],
) -> None:
    inbox = WebInbox(timeout=0.2)
    async with connect(Receiver(elicitation=inbox.elicitation())) as server:
        task_id = await server.create_task("elicitation/create", params)
        assert (await server.request("tasks/result", {"taskId": task_id}))["action"] == "cancel"
        task = await server.request("tasks/get", {"taskId": task_id})
        notified = [p for m, p in server.notifications if m == "notifications/tasks/status" and p is not None]
    reason = "no answer within 0.2s: expired, nobody refused"
    assert (task["status"], task.get("statusMessage")) == ("completed", reason)
    assert [(p["status"], p.get("statusMessage")) for p in notified] == [("completed", reason)]


async def test_a_task_answered_in_time_keeps_no_waiting_message_once_completed(inbox: WebInbox) -> None:
    async with connect(Receiver(elicitation=inbox.elicitation())) as server, inbox.events() as events:
        task_id = await server.create_task("elicitation/create", form_params())
        async for name, _ in events:
            if name == "added":
                break
        assert (await server.request("tasks/get", {"taskId": task_id}))["statusMessage"] == WAITING
        inbox.answer(inbox.state()["pending"][0]["id"], {"action": "decline"})
        assert (await server.request("tasks/result", {"taskId": task_id}))["action"] == "decline"
        task = await server.request("tasks/get", {"taskId": task_id})
    assert task["status"] == "completed" and "statusMessage" not in task


async def test_a_cancelled_request_leaves_the_inbox_as_withdrawn(inbox: WebInbox) -> None:
    with anyio.move_on_after(0.1):
        await inbox.fill_form(form_view())
    state = inbox.state()
    assert state["pending"] == []
    assert state["history"][0]["outcome"] == "withdrawn: the request was cancelled"


async def test_a_page_post_needs_its_own_origin_and_the_csrf_token(inbox: WebInbox) -> None:
    transport = httpx.ASGITransport(app=inbox.app)
    async with (
        httpx.AsyncClient(transport=transport, base_url=ORIGIN) as client,
        asking(inbox, lambda: inbox.consent_url(url_view())) as answers,
    ):
        csrf = await page_session(client, inbox)
        [item] = (await client.get("/api/items")).json()["pending"]
        url = f"/api/items/{item['id']}/answer"
        body = {"action": "decline"}
        assert (
            await client.post(url, json=body, headers={"Origin": "http://evil.test", "X-CSRF-Token": csrf})
        ).status_code == 403
        assert (await client.post(url, json=body, headers={"Origin": ORIGIN})).status_code == 403
        assert (
            await client.post(url, json=body, headers={"Origin": ORIGIN, "X-CSRF-Token": "x"})
        ).status_code == 403
        assert answers == []
        assert (
            await client.post(url, json=body, headers={"Origin": ORIGIN, "X-CSRF-Token": csrf})
        ).status_code == 200
    assert answers == ["decline"]


async def test_server_text_is_escaped_in_every_field_and_no_answer_holds_the_token(
    inbox: WebInbox, api: httpx.AsyncClient
) -> None:
    hostile = "<script>alert(1)</script>\u202e\x07"
    inbox.describe_server("evil\u202e", hostile)
    async with asking(
        inbox, lambda: inbox.consent_url(url_view(server="evil\u202e", message=hostile))
    ) as answers:
        state = (await api.get("/api/items")).text
        [item] = json.loads(state)["pending"]
        assert (
            item["server"] == "evil\\u202e" and item["serverTitle"] == "<script>alert(1)</script>\\u202e\\x07"
        )
        assert "\u202e" not in state and "\\u202e" not in state.replace("\\\\u202e", "")
        assert inbox.token not in state
        await api.post(f"/api/items/{item['id']}/answer", json={"action": "decline"})
    assert answers == ["decline"]


async def test_served_alone_it_checks_the_host_header_and_streams_events_live(anyio_backend: str) -> None:
    inbox = WebInbox(auth_delay=0.1)
    async with inbox.serve("127.0.0.1:0"), httpx.AsyncClient(base_url=inbox.origin or "") as client:
        assert inbox.url == f"{inbox.origin}/#token={inbox.token}"
        bearer = {"Authorization": f"Bearer {inbox.token}"}
        rebound = await client.get("/api/items", headers={**bearer, "Host": "attacker.example"})
        assert rebound.status_code == 400
        port = (inbox.origin or "").rsplit(":", 1)[1]
        assert (
            await client.get("/api/items", headers={**bearer, "Host": f"localhost:{port}"})
        ).status_code == 200
        events: list[tuple[str, dict[str, Any]]] = []
        async with client.stream("GET", "/api/events", headers=bearer) as stream:
            lines = stream.aiter_lines()
            async with asking(inbox, lambda: inbox.consent_url(url_view())):
                name = ""
                async for line in lines:
                    if line.startswith("event: "):
                        name = line[7:]
                    elif line.startswith("data: "):
                        events.append((name, json.loads(line[6:])))
                        if name == "added":
                            inbox.answer(events[-1][1]["id"], {"action": "decline"})
                        if name == "resolved":
                            break
    assert [name for name, _ in events] == ["snapshot", "added", "resolved"]
    assert events[2][1]["outcome"] == "declined"


async def test_beyond_loopback_without_tls_it_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="host_receiver.web"):
        async with WebInbox().serve("0.0.0.0:0") as inbox:
            assert inbox.allowed_hosts is None
    assert "without TLS" in caplog.text


async def test_over_tls_the_url_is_https_and_any_address_goes_without_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    certfile, keyfile = self_signed(tmp_path)
    inbox = WebInbox()
    with caplog.at_level(logging.WARNING, logger="host_receiver.web"):
        async with inbox.serve("0.0.0.0:0", certfile=certfile, keyfile=keyfile):
            port = (inbox.origin or "").rsplit(":", 1)[1]
            assert inbox.url.startswith("https://")
            async with httpx.AsyncClient(base_url=f"https://127.0.0.1:{port}", verify=False) as client:
                opened = await client.get(f"/?token={inbox.token}")
                made = await client.post("/api/session", headers={"Authorization": f"Bearer {inbox.token}"})
    assert opened.status_code == 200 and made.status_code == 200 and "set-cookie" not in made.headers
    assert caplog.text == ""


def self_signed(directory: Path) -> tuple[str, str]:
    """A certificate for 127.0.0.1 and its key, as files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.now(UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=1))
        .not_valid_after(now + timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .sign(key, hashes.SHA256())
    )
    certfile, keyfile = directory / "cert.pem", directory / "key.pem"
    certfile.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    keyfile.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return str(certfile), str(keyfile)


async def link_session(client: httpx.AsyncClient, link: str) -> httpx.Response:
    """``POST api/items/ID/session`` with the token of a signed ``link``, as the page sends it."""
    address, _, fragment = link.partition("#link=")
    item_id = address.rsplit("/", 1)[1]
    headers = {"Authorization": f"Link {fragment}", "Origin": ORIGIN}
    return await client.post(f"/api/items/{item_id}/session", headers=headers)


async def test_a_signed_link_signs_in_for_its_one_item_until_it_is_answered() -> None:
    inbox = WebInbox(timeout=30, auth_delay=0.05, signed_links=True)
    inbox.public_url = ORIGIN
    transport = httpx.ASGITransport(app=inbox.app)
    async with (
        httpx.AsyncClient(transport=transport, base_url=ORIGIN) as client,
        asking(inbox, lambda: inbox.consent_url(url_view())) as answers,
        asking(inbox, lambda: inbox.fill_form(form_view())),
    ):
        mine, other = (i["id"] for i in inbox.state()["pending"])
        link = inbox.link(mine)
        assert link is not None and link.startswith(f"{ORIGIN}/items/{mine}#link=")
        assert inbox.link(mine) == link  # one token per item, whatever event sends it
        assert (await link_session(client, link.replace(mine, other, 1))).status_code == 401
        made = (await link_session(client, link)).json()
        headers = {"X-Inbox-Session": made["session"], "X-CSRF-Token": made["csrf"], "Origin": ORIGIN}
        assert (await client.get("/api/items", headers=headers)).status_code == 404
        assert (await client.get(f"/api/items/{other}", headers=headers)).status_code == 404
        assert (await client.get(f"/api/items/{mine}", headers=headers)).json()["id"] == mine
        decline = {"action": "decline"}
        assert (
            await client.post(f"/api/items/{other}/answer", json=decline, headers=headers)
        ).status_code == 404
        assert (
            await client.post(f"/api/items/{mine}/answer", json=decline, headers=headers)
        ).status_code == 200
        assert (await link_session(client, link)).status_code == 401  # answered: the link is spent
        assert [i["id"] for i in inbox.state()["pending"]] == [other]
        inbox.answer(other, {"action": "cancel"})
    assert answers == ["decline"]


async def test_a_signed_link_and_its_session_stop_when_the_link_ttl_is_up() -> None:
    inbox = WebInbox(timeout=30, auth_delay=0.05, signed_links=True, link_ttl=0.3)
    inbox.public_url = ORIGIN
    transport = httpx.ASGITransport(app=inbox.app)
    async with (
        httpx.AsyncClient(transport=transport, base_url=ORIGIN) as client,
        asking(inbox, lambda: inbox.consent_url(url_view())),
    ):
        [item] = inbox.state()["pending"]
        link = inbox.link(item["id"])
        assert link is not None
        made = (await link_session(client, link)).json()
        headers = {"X-Inbox-Session": made["session"]}
        assert (await client.get(f"/api/items/{item['id']}", headers=headers)).status_code == 200
        await anyio.sleep(0.35)
        assert (await client.get(f"/api/items/{item['id']}", headers=headers)).status_code == 401
        assert (await link_session(client, link)).status_code == 401
        inbox.answer(item["id"], {"action": "cancel"})
