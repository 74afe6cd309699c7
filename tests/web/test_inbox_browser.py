"""The web inbox in a real browser: Debian's chromium, headless, driven by Playwright.

Every card and button against real servers (the demo server on mcp 1.x pushing
task-augmented requests; the mcp 2.3.0 peer's input rounds), the live update,
two people answering one item, the timeout, a signed link (a host's; one
``inbox serve`` sent, opened on another), a wrong token, a cross-origin
POST, what another port of the same host gets (no credential), where the
token goes (no server sees it in a URL, no history keeps it), and hostile
text in every field a server controls: nothing it sends runs (no dialog, no
console error), and it shows as text. The screenshots of docs/inbox.md are
taken here: ``UPDATE_SCREENSHOTS=1`` writes them to docs/inbox/.

Playwright's API is asyncio's, so this module runs on asyncio only.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpx
import pytest

from host_receiver.cli.demo import SERVER_NAME, TOOL, find_server_script, server_python
from host_receiver.client.host import Host, ServerConnection
from host_receiver.people.approval import Approve, Refuse, SamplingRequestView, UrlView
from host_receiver.protocol.results import CallToolResult
from host_receiver.protocol.types import ElicitResult, SamplingRequest
from host_receiver.receiver import Receiver
from host_receiver.store import InboxItem, open_store
from host_receiver.transports.stdio import StdioTransport
from host_receiver.web import WebInbox, _items
from host_receiver.web._board import StoreBoard
from providers import Config, build_registry
from tests.interop import PY2_SERVER, everything_command, peer_python
from tests.notify.conftest import HttpReceiver
from tests.notify.test_fleet import inbox_serve
from tests.web.conftest import asking, form_view, result_view, sampling_view, url_view

playwright_api = pytest.importorskip("playwright.async_api")

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "docs" / "inbox"
#: How long the page may take to show what the host did (ms): a safety net, not a measure.
WAIT_MS = 15_000
ANSWERED_4XX = "Failed to load resource: the server responded with a status of 4"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Playwright's async API runs on asyncio (one loop for the module: the browser lives on it)."""
    return "asyncio"


def chromium() -> str:
    """Debian's chromium; skips without it (fails on CI, where .ci/setup installs it)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        message = "the browser tests need chromium (apt-get install chromium; .ci/setup does)"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return found


@dataclass
class Tab:
    """One browser tab on the inbox, with what it showed of itself: dialogs and console errors."""

    page: Any
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def card(self, heading: str) -> Any:
        return self.page.locator("article", has=self.page.get_by_role("heading", name=heading))

    def console(self, message: Any) -> None:
        """Note an error on the console, but not chromium's line for an answer of 409 or 422, which
        the page asked for and shows."""
        if message.type == "error" and not message.text.startswith(ANSWERED_4XX):
            self.errors.append(message.text)

    def assert_nothing_ran(self) -> None:
        assert self.dialogs == [] and self.errors == []


@dataclass
class Browser:
    browser: Any

    @asynccontextmanager
    async def tab(self, url: str, **device: Any) -> AsyncIterator[Tab]:
        """A new person (their own browser storage) with the inbox open at ``url``, on a desktop
        unless ``device`` says otherwise (``PHONE``, ``DESKTOP``)."""
        context = await self.browser.new_context(**{"viewport": {"width": 1000, "height": 900}, **device})
        try:
            page = await context.new_page()
            tab = Tab(page)

            async def dismiss(dialog: Any) -> None:
                tab.dialogs.append(dialog.message)
                await dialog.dismiss()

            page.on("dialog", dismiss)
            page.on("console", tab.console)
            page.on("pageerror", lambda error: tab.errors.append(str(error)))
            await page.goto(url)
            await page.get_by_text("Live").wait_for(timeout=WAIT_MS)
            yield tab
        finally:
            await context.close()


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    """One chromium for the module (each launch took about a second); each tab is a new person,
    with a browser context of its own."""
    executable = chromium()
    async with playwright_api.async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=executable,
            headless=True,
            # root needs --no-sandbox; the local network check would stop the cross-origin test's
            # page from sending its POST at all, and the test is that the inbox refuses it.
            args=["--no-sandbox", "--disable-features=LocalNetworkAccessChecks"],
        )
        try:
            yield Browser(launched)
        finally:
            await launched.close()


@asynccontextmanager
async def served(**options: Any) -> AsyncIterator[WebInbox]:
    inbox = WebInbox(**{"auth_delay": 0.2, **options})
    async with inbox.serve("127.0.0.1:0"):
        yield inbox


@asynccontextmanager
async def host_with(inbox: WebInbox) -> AsyncIterator[Host]:
    registry = build_registry(provider="echo", config=Config(), environ={})
    async with (
        registry,
        Host(Receiver(sampling=inbox.sampling(registry), elicitation=inbox.elicitation())) as host,
    ):
        yield host


async def connect(host: Host, inbox: WebInbox, name: str, python: str, script: Path) -> ServerConnection:
    server = await host.connect(name, StdioTransport(python, [str(script)], name=name))
    inbox.describe_server(name, server.server_info.title or server.server_info.name)
    return server


async def shoot(card: Any, name: str, directory: Path) -> None:
    """A screenshot of ``card`` (times and task ids hidden), into docs/inbox/ when
    $UPDATE_SCREENSHOTS is set (the history's times and ids change every run), else ``directory``;
    in CSS pixels, so that a phone's is as wide as its screen."""
    where = SCREENSHOTS if os.environ.get("UPDATE_SCREENSHOTS") else directory
    where.mkdir(exist_ok=True)
    await card.screenshot(
        path=where / f"{name}.png", mask=[card.locator(".meta").first], mask_color="#ffffff", scale="css"
    )


async def shoot_screen(page: Any, card: Any, name: str, directory: Path) -> None:
    """A screenshot of the screen with ``card`` at its top, as a person sees it on a phone (the
    cards' times and task ids hidden); where ``shoot`` writes."""
    where = SCREENSHOTS if os.environ.get("UPDATE_SCREENSHOTS") else directory
    where.mkdir(exist_ok=True)
    await card.evaluate("card => card.scrollIntoView()")
    times = page.locator("article > h3 + .meta")
    await page.screenshot(path=where / f"{name}.png", mask=[times], mask_color="#ffffff", scale="css")


async def test_the_demo_server_is_answered_card_by_card_from_the_browser(
    browser: Browser, tmp_path: Path
) -> None:
    script = find_server_script()
    assert script is not None
    async with served(timeout=60) as inbox, host_with(inbox) as host, browser.tab(inbox.url) as tab:
        await tab.page.context.route(
            "https://blog.example.com/**", lambda route: route.fulfill(body="signed in")
        )
        server = await connect(host, inbox, SERVER_NAME, server_python(), script)
        outcome: list[CallToolResult] = []
        async with anyio.create_task_group() as group:

            async def call() -> None:
                outcome.append(await server.call_tool(TOOL, {"version": "2.0.0"}))

            group.start_soon(call)
            sampling = tab.card(f"{SERVER_NAME} · Sampling request")
            await sampling.wait_for(timeout=WAIT_MS)
            await shoot(sampling, "sampling", tmp_path)
            await sampling.get_by_role("button", name="Edit").click()
            await sampling.get_by_label("Max tokens").fill("100")
            await sampling.get_by_role("button", name="Approve once").click()

            result = tab.card(f"{SERVER_NAME} · Sampling result")
            await result.wait_for(timeout=WAIT_MS)
            await shoot(result, "result", tmp_path)
            await result.get_by_role("button", name="Edit the text").click()
            await result.get_by_label("Text").fill("Release 2.0.0 is out.")
            await result.get_by_role("button", name="Send").click()

            form = tab.card(f"{SERVER_NAME} · Form")
            await form.wait_for(timeout=WAIT_MS)
            await shoot(form, "form", tmp_path)
            await form.get_by_role("button", name="Send").click()

            link = tab.card(f"{SERVER_NAME} · Link to open")
            await link.wait_for(timeout=WAIT_MS)
            await shoot(link, "url", tmp_path)
            opener = link.get_by_role("button", name="Open")
            assert await opener.get_attribute("rel") == "noopener noreferrer"
            assert await opener.get_attribute("target") == "_blank"
            async with tab.page.context.expect_page() as opened:
                await opener.click()
            popup = await opened.value
            await popup.wait_for_load_state()
            assert popup.url.startswith("https://blog.example.com/")
            assert await popup.evaluate("window.opener") is None
        history = tab.page.locator("#history li")
        await history.nth(3).wait_for(timeout=WAIT_MS)
        await shoot(tab.page.locator("#history").locator(".."), "history", tmp_path)
        texts = await history.all_inner_texts()
        assert [t.split(": ", 1)[1].split("\n")[0] for t in texts] == [
            "opened",
            "accepted",
            "sent, edited",
            "approved once, edited",
        ]
        assert "Someone on the inbox page answered the link to open from release-helper (task" in texts[0]
        assert "requestor=" not in texts[0]
        tab.assert_nothing_ran()
    report = json.loads(outcome[0].text)
    statuses = [s.get("statusMessage") for step in report["requests"] for s in step.get("steps", [])]
    assert "waiting for an answer in the web inbox" in statuses
    assert report["requests"][0]["result"]["content"]["text"] == "Release 2.0.0 is out."


async def test_a_link_a_call_needs_is_opened_then_done_from_the_page_and_the_call_sent_again(
    browser: Browser,
) -> None:
    """server-everything's -32042: the "Link to open" card, then "Link to finish"; Done retries."""
    async with served(timeout=60) as inbox, host_with(inbox) as host, browser.tab(inbox.url) as tab:
        for site in ("https://modelcontextprotocol.io/**", "https://example.com/**"):
            await tab.page.context.route(site, lambda route: route.fulfill(body="signed in"))
        node, *script = everything_command()
        server = await host.connect("everything", StdioTransport(node, script, name="everything"))
        inbox.describe_server("everything", server.server_info.title or server.server_info.name)
        outcome: list[CallToolResult] = []
        async with anyio.create_task_group() as group:

            async def call() -> None:
                arguments = {"url": "https://example.com/auth", "errorPath": True}
                outcome.append(await server.call_tool("trigger-url-elicitation", arguments))

            group.start_soon(call)
            for domain, finish in (("modelcontextprotocol.io", True), ("example.com", False)):
                link = tab.card("Link to open").filter(has_text=domain)
                await link.wait_for(timeout=WAIT_MS)
                async with tab.page.context.expect_page() as opened:
                    await link.get_by_role("button", name="Open").click()
                await (await opened.value).close()
                if finish:
                    done = tab.card("Link to finish")
                    await done.wait_for(timeout=WAIT_MS)
                    assert "modelcontextprotocol.io" in await done.inner_text()
                    await done.get_by_role("button", name="Done").click()
        history = await tab.page.locator("#history li").all_inner_texts()
        assert [t.split(": ", 1)[1].split("\n")[0] for t in history[:3]] == ["opened", "done", "opened"]
        tab.assert_nothing_ran()
    assert "User completed the URL elicitation flow" in outcome[0].text


async def test_modern_input_rounds_come_to_the_same_cards(browser: Browser) -> None:
    python = str(peer_python("py2"))
    async with served(timeout=60) as inbox, host_with(inbox) as host, browser.tab(inbox.url) as tab:
        server = await connect(host, inbox, "py2", python, PY2_SERVER)
        outcome: list[CallToolResult] = []
        async with anyio.create_task_group() as group:

            async def call() -> None:
                outcome.append(await server.call_tool("elicit_then_sample", {"tag": "inbox"}))

            group.start_soon(call)
            form = tab.card("Form")
            await form.wait_for(timeout=WAIT_MS)
            await form.get_by_role("textbox").first.fill("Grace")
            await form.get_by_role("button", name="Send").click()
            sampling = tab.card("Sampling request")
            await sampling.wait_for(timeout=WAIT_MS)
            await sampling.get_by_role("button", name="Approve once").click()
            result = tab.card("Sampling result")
            await result.wait_for(timeout=WAIT_MS)
            await result.get_by_role("button", name="Send").click()
        tab.assert_nothing_ran()
    assert "Grace" in outcome[0].text


async def test_each_sampling_button_is_the_decision_it_names(browser: Browser) -> None:
    buttons = {
        "Approve for this session": Approve(remember="session"),
        "Always approve this server": Approve(remember="always"),
        "Refuse": Refuse(),
        "Never": Refuse(remember="never"),
    }
    async with served() as inbox, browser.tab(inbox.url) as tab:
        for name, decision in buttons.items():
            answers: list[Any] = []
            async with anyio.create_task_group() as group:
                group.start_soon(_append, answers, inbox.review_request(sampling_view()))
                card = tab.card("notes · Sampling request")
                await card.get_by_role("button", name=name).click()
            assert answers == [decision]
            await card.wait_for(state="detached", timeout=WAIT_MS)
        tab.assert_nothing_ran()


async def _append(answers: list[Any], call: Any) -> None:
    answers.append(await call)


async def test_a_form_shows_every_field_type_and_the_terminals_message_beside_a_wrong_field(
    browser: Browser,
) -> None:
    async with served() as inbox, browser.tab(inbox.url) as tab:
        for button, action in [("Decline", "decline"), ("Cancel", "cancel"), ("Send", "accept")]:
            answers: list[Any] = []
            async with anyio.create_task_group() as group:
                group.start_soon(_append, answers, inbox.fill_form(form_view()))
                card = tab.card("notes · Form")
                await card.wait_for(timeout=WAIT_MS)
                assert await card.get_by_label("Your name").input_value() == "Ada"
                assert await card.get_by_label("Seats").input_value() == "2"
                assert await card.get_by_role("combobox").locator("option").all_inner_texts() == [
                    "—",
                    "Red",
                    "Green",
                ]
                assert await card.get_by_role("checkbox", name="Alpha").is_visible()
                if action == "accept":
                    await card.get_by_label("email").fill("not an address")
                    await card.get_by_role("button", name="Send").click()
                    problem = card.get_by_text("email must be a valid email")
                    await problem.wait_for(timeout=WAIT_MS)
                    assert await card.get_by_text("colour is required").is_visible()
                    await card.get_by_label("email").fill("ada@example.org")
                    await card.get_by_role("combobox").select_option("g")
                    await card.get_by_role("checkbox", name="Beta").check()
                await card.get_by_role("button", name=button).click()
            assert answers[0].action == action
        assert answers[0].content == {
            "name": "Ada",
            "email": "ada@example.org",
            "seats": 2,
            "agree": False,
            "colour": "g",
            "tags": ["b"],
        }
        tab.assert_nothing_ran()


async def test_two_people_see_one_item_live_and_the_second_answer_gets_409(browser: Browser) -> None:
    async with served() as inbox, browser.tab(inbox.url) as first, browser.tab(inbox.url) as second:
        answers: list[Any] = []
        async with anyio.create_task_group() as group:
            group.start_soon(_append, answers, inbox.consent_url(url_view()))
            mine, theirs = first.card("notes · Link to open"), second.card("notes · Link to open")
            await mine.wait_for(timeout=WAIT_MS)
            await theirs.wait_for(timeout=WAIT_MS)
            await mine.get_by_role("button", name="Decline").click()
            await mine.wait_for(state="detached", timeout=WAIT_MS)
            await theirs.wait_for(state="detached", timeout=WAIT_MS)  # live, without a reload
        late = await second.page.evaluate(
            LATE_ANSWER, f"api/items/{inbox.state()['history'][0]['id']}/answer"
        )
        assert late == 409
        assert answers == ["decline"]
        first.assert_nothing_ran()


async def test_an_item_nobody_answers_leaves_the_page_as_expired(browser: Browser) -> None:
    async with served(timeout=1) as inbox, browser.tab(inbox.url) as tab:
        reason = "no answer within 1s: expired, nobody refused"
        assert await inbox.review_request(sampling_view()) == Refuse(reason)
        entry = tab.page.locator("#history li").first
        await entry.get_by_text("expired").first.wait_for(timeout=WAIT_MS)
        assert await tab.page.locator("article").count() == 0
        assert re.search(
            r"Nobody answered the sampling request from notes \(task task-1\); at .+ it ended: expired\.",
            await entry.inner_text(),
        )
        tab.assert_nothing_ran()


async def test_a_notification_link_opens_the_page_at_its_item_once_signed_in(browser: Browser) -> None:
    async with served() as inbox:
        answers: list[Any] = []
        async with anyio.create_task_group() as group:
            group.start_soon(_append, answers, inbox.fill_form(form_view()))
            group.start_soon(_append, answers, inbox.consent_url(url_view()))
            with anyio.fail_after(10):
                while len(inbox.state()["pending"]) < 2:  # noqa: ASYNC110 (two hook calls starting)
                    await anyio.sleep(0.02)
            second = inbox.state()["pending"][1]["id"]
            link = inbox.link(second)
            assert link == f"{inbox.origin}/items/{second}"
            async with browser.tab(f"{link}#token={inbox.token}") as tab:
                linked = tab.page.locator("article.linked")
                await linked.wait_for(timeout=WAIT_MS)
                assert await linked.get_attribute("data-id") == second
                assert await tab.page.evaluate("document.activeElement.dataset.id") == second
                assert await tab.page.evaluate("location.href") == link  # the token left the address
                assert await tab.page.locator("article").count() == 2  # the list is all there
                await linked.get_by_role("button", name="Decline").click()
                await linked.wait_for(state="detached", timeout=WAIT_MS)
                tab.assert_nothing_ran()
            inbox.answer(inbox.state()["pending"][0]["id"], {"action": "cancel"})
        assert "decline" in answers and ElicitResult(action="cancel") in answers
        context = await browser.browser.new_context()
        try:
            page = await context.new_page()
            await page.goto(link)  # a fresh browser, no token: sign-in needed, nothing shown
            await page.get_by_text("Not signed in").wait_for(timeout=WAIT_MS)
            assert await page.locator("article").count() == 0
        finally:
            await context.close()


#: The page's clock: an ISO time as the person's locale writes it.
CLOCK = "iso => new Date(iso).toLocaleTimeString()"


async def test_the_history_says_who_answered_what_and_when_in_a_sentence(browser: Browser) -> None:
    async with served() as inbox, browser.tab(inbox.url) as tab:
        async with anyio.create_task_group() as group:
            group.start_soon(inbox.consent_url, url_view())
            card = tab.card("notes · Link to open")
            await card.get_by_role("button", name="Decline").click()
            await card.wait_for(state="detached", timeout=WAIT_MS)
        async with asking(inbox, lambda: inbox.fill_form(form_view())):
            [item] = inbox.state()["pending"]
            inbox.answer(item["id"], {"action": "cancel"})
        with anyio.move_on_after(0.2):
            await inbox.review_request(sampling_view("withdrawing"))
        entries = tab.page.locator("#history li")
        await entries.nth(2).wait_for(timeout=WAIT_MS)
        texts = await entries.all_inner_texts()
        history = inbox.state()["history"]
        at = [await tab.page.evaluate(CLOCK, kept["answered"]) for kept in history]
        assert texts[0].endswith(
            f"The server withdrew the sampling request from withdrawing (task task-1) at {at[0]}, "
            f"before anyone answered. Audit log: item {history[0]['id']}."
        )
        assert texts[1].endswith(
            f"A program with the inbox's token answered the form from notes (task task-2) at {at[1]}: "
            f"cancelled. Audit log: item {history[1]['id']}."
        )
        assert texts[2].endswith(
            f"Someone on the inbox page answered the link to open from notes (task task-3) at {at[2]}: "
            f"declined. Audit log: item {history[2]['id']}."
        )
        assert not any("requestor=" in text or "kind=" in text for text in texts)
        tab.assert_nothing_ran()


async def _serve_until(stop: anyio.Event, *, task_status: anyio.abc.TaskStatus[WebInbox]) -> None:
    async with served() as inbox:
        task_status.started(inbox)
        await stop.wait()


async def test_a_host_that_stops_closes_the_page_which_stops_reconnecting(browser: Browser) -> None:
    stop = anyio.Event()
    async with anyio.create_task_group() as group:
        inbox = await group.start(_serve_until, stop)
        async with browser.tab(inbox.url) as tab:
            streams: list[str] = []
            tab.page.on("request", lambda r: streams.append(r.url) if r.url.endswith("/api/events") else None)
            group.start_soon(inbox.fill_form, form_view())
            card = tab.card("notes · Form")
            await card.wait_for(timeout=WAIT_MS)
            stop.set()
            closed = tab.page.get_by_text("The host has stopped: this inbox is closed.")
            await closed.wait_for(timeout=WAIT_MS)
            assert await card.get_by_role("button", name="Decline").is_disabled()
            await anyio.sleep(4)  # longer than the page's pause before reconnecting
            assert streams == []
            assert "Reconnecting" not in await tab.page.locator("#connection").inner_text()
            tab.assert_nothing_ran()
        group.cancel_scope.cancel()


#: A host serving only its inbox, in a process of its own: its address on the first line.
ALONE = """
import anyio
from host_receiver.web import WebInbox

async def main() -> None:
    inbox = WebInbox(auth_delay=0.2)
    async with inbox.serve("127.0.0.1:0"):
        print(inbox.url, flush=True)
        await anyio.sleep_forever()

anyio.run(main)
"""


async def test_a_host_that_vanished_is_tried_less_and_less_often_and_the_page_says_so(
    browser: Browser,
) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = await anyio.open_process([sys.executable, "-c", ALONE], env=env)
    try:
        assert process.stdout is not None
        with anyio.fail_after(WAIT_MS / 1000):
            url = (await process.stdout.receive()).decode().strip()
        async with browser.tab(url) as tab:
            process.kill()  # no goodbye: its connections reset, its port refuses
            await process.wait()
            status = tab.page.locator("#connection")
            since = r"The host has not answered since .+: it may have stopped\. "
            for pause in (3, 6):  # doubling
                again = status.get_by_text(re.compile(since + rf"Trying again in {pause} s\."))
                await again.wait_for(timeout=WAIT_MS)
            assert tab.dialogs == []
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_a_wrong_token_gets_401_and_a_cross_origin_post_gets_403(browser: Browser) -> None:
    async with served() as inbox:
        context = await browser.browser.new_context()  # a person who never opened the inbox
        page = await context.new_page()
        wrong = await page.goto(f"{inbox.origin}/?token=wrong")
        assert wrong is not None and wrong.status == 401
        await page.goto(f"{inbox.origin}/#token=wrong")
        await page.get_by_text("Not signed in").wait_for(timeout=WAIT_MS)
        assert page.url == f"{inbox.origin}/"
        await context.route(
            "http://evil.test/**", lambda route: route.fulfill(body="<p>hello</p>", content_type="text/html")
        )
        await page.goto("http://evil.test/")
        target = f"{inbox.origin}/api/items/anything/answer"
        async with page.expect_response(target) as answered:
            await page.evaluate(
                "url => fetch(url, {method: 'POST', mode: 'no-cors', credentials: 'include', body: '{}'})",
                target,
            )
        assert (await answered.value).status == 403
        await context.close()


async def test_a_person_signs_in_with_the_link_of_their_token_and_answers_a_card_of_the_fleet(
    browser: Browser, tmp_path: Path
) -> None:
    async with open_store(f"sqlite:///{tmp_path / 'fleet.db'}") as store:
        _, ann = await store.add_person("ann", ["ops"])
        await store.add_person("bob", ["sales"])

        async def link(host: str, team: str) -> InboxItem:
            return await store.add_item(
                host=host,
                server_name="notes",
                server_title="Notes",
                server_identity="stdio:notes",
                kind="url",
                payload=_items.url(url_view()),
                session="s",
                routed_to=[team],
            )

        mine = await link("worker-1", "ops")
        await link("worker-2", "sales")
        board = StoreBoard(store, auth_delay=0.2)
        async with board.serve("127.0.0.1:0"), browser.tab(f"{board.origin}/?token={ann}") as tab:
            assert tab.page.url == f"{board.origin}/"  # the token is taken out of the address bar
            card = tab.card("Notes (notes) on worker-1 · Link to open")
            await card.wait_for(timeout=WAIT_MS)
            assert await tab.page.locator("article").count() == 1  # bob's team's item does not exist here
            await card.get_by_role("button", name="Decline").click()
            await card.wait_for(state="detached", timeout=WAIT_MS)
            entry = tab.page.locator("#history li").first
            await entry.get_by_text(re.compile(r"ann answered the link to open from Notes")).wait_for(
                timeout=WAIT_MS
            )
            tab.assert_nothing_ran()
        answered = await store.item(mine.id)
        assert answered is not None
        assert (answered.status, answered.answer, answered.answered_by, answered.answered_from) == (
            "answered",
            {"action": "decline"},
            "ann",
            "127.0.0.1",
        )


#: The second person's page answers too late, with its own session (and CSRF token).
LATE_ANSWER = """async url => {
  const session = sessionStorage.getItem("host_receiver_inbox:/");
  const {csrf} = await (await fetch("api/session", {headers: {"X-Inbox-Session": session}})).json();
  const headers = {"Content-Type": "application/json", "X-Inbox-Session": session, "X-CSRF-Token": csrf};
  return (await fetch(url, {method: "POST", headers, body: '{"action": "accept"}'})).status;
}"""


@dataclass
class Elsewhere:
    """A page on another port of this machine (a hostile stdio server may send the person to one
    with a URL elicitation), and every request it received: its path and headers (names lowercased)."""

    origin: str
    requests: list[tuple[str, dict[str, str]]]


@contextmanager
def another_port() -> Iterator[Elsewhere]:
    """A plain HTTP server on 127.0.0.1 serving ``/landing`` (with an image at ``/favicon.ico``),
    recording every request, for the duration of the block."""
    seen: list[tuple[str, dict[str, str]]] = []
    page = b'<!doctype html><title>elsewhere</title><p>Hello</p><img src="/favicon.ico" alt="">'

    class Recording(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append((self.path, {name.lower(): value for name, value in self.headers.items()}))
            body = page if self.path == "/landing" else b""
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Recording)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)  # a quick shutdown()
    thread.start()
    try:
        yield Elsewhere(f"http://127.0.0.1:{server.server_port}", seen)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


async def test_another_port_of_the_same_host_gets_no_credential_of_the_inbox(browser: Browser) -> None:
    async with served() as inbox, browser.tab(inbox.url) as tab:
        answers: list[Any] = []
        async with anyio.create_task_group() as group:
            group.start_soon(_append, answers, inbox.consent_url(url_view()))
            card = tab.card("notes · Link to open")
            await card.get_by_role("button", name="Decline").click()
        assert answers == ["decline"]
        kept = await tab.page.evaluate("Object.values(sessionStorage)")
        with another_port() as elsewhere:
            await tab.page.goto(f"{elsewhere.origin}/landing")
        paths = [path for path, _ in elsewhere.requests]
        assert "/landing" in paths and "/favicon.ico" in paths
        for path, headers in elsewhere.requests:
            assert "cookie" not in headers and "authorization" not in headers
            assert not any(secret in f"{path} {headers}" for secret in [inbox.token, *kept])
        async with (
            httpx.AsyncClient(base_url=inbox.origin or "") as replay,
            asking(inbox, lambda: inbox.fill_form(form_view())) as filled,
        ):
            [item] = inbox.state()["pending"]
            for _, headers in elsewhere.requests:
                sent = {k: v for k, v in headers.items() if k not in ("host", "connection", "content-length")}
                session = await replay.get("/api/session", headers=sent)
                assert session.status_code == 401
                forged = {**sent, "Origin": inbox.origin or "", "X-CSRF-Token": "guessed"}
                content = {"name": "Mallory", "email": "m@evil.test", "colour": "r"}
                posted = await replay.post(
                    f"/api/items/{item['id']}/answer",
                    headers=forged,
                    json={"action": "accept", "content": content},
                )
                assert posted.status_code in (401, 403)
            inbox.answer(item["id"], {"action": "decline"})
        assert [answer.action for answer in filled] == ["decline"]


async def test_the_token_reaches_no_server_in_a_url_and_neither_the_address_bar_nor_history_keeps_it(
    browser: Browser,
) -> None:
    async with served() as inbox:
        assert inbox.url == f"{inbox.origin}/#token={inbox.token}"
        context = await browser.browser.new_context()
        try:
            page = await context.new_page()
            asked: list[str] = []
            page.on("request", lambda request: asked.append(request.url))
            await page.goto(f"{inbox.origin}/")
            await page.get_by_text("Not signed in").wait_for(timeout=WAIT_MS)  # no token, no session
            with another_port() as elsewhere:
                await page.goto(f"{elsewhere.origin}/landing")
                await page.goto(inbox.url)
                await page.get_by_text("Live").wait_for(timeout=WAIT_MS)
                assert page.url == f"{inbox.origin}/"
                await page.go_back()
                assert page.url == f"{elsewhere.origin}/landing"
                await page.go_forward()
                assert page.url == f"{inbox.origin}/"
                await page.get_by_text("Live").wait_for(timeout=WAIT_MS)  # the tab's session, kept
                cdp = await context.new_cdp_session(page)
                history = await cdp.send("Page.getNavigationHistory")
            older = await context.new_page()  # the older address works, and is cleaned the same way
            await older.goto(f"{inbox.origin}/?token={inbox.token}")
            await older.get_by_text("Live").wait_for(timeout=WAIT_MS)
            assert older.url == f"{inbox.origin}/"
        finally:
            await context.close()
        visited = [entry["url"] for entry in history["entries"]]
        assert visited[-2:] == [f"{elsewhere.origin}/landing", f"{inbox.origin}/"]
        assert not any(inbox.token in url for url in visited)
        assert not any(inbox.token in url for url in asked)
        assert any(url.startswith(f"{inbox.origin}/api/session") for url in asked)


HOSTILE = '<script>alert(1)</script><img src=x onerror="alert(2)">\u202eevil\x07'


async def test_hostile_text_in_every_server_field_shows_escaped_and_runs_nothing(browser: Browser) -> None:
    params = SamplingRequest.model_validate(
        {
            "messages": [
                {"role": "user", "content": {"type": "text", "text": HOSTILE}},
                {
                    "role": "user",
                    "content": {"type": "image", "mimeType": 'image/svg+xml"><script>', "data": "x"},
                },
            ],
            "systemPrompt": HOSTILE,
            "maxTokens": 10,
            "tools": [{"name": HOSTILE, "description": HOSTILE, "inputSchema": {"type": "object"}}],
            "stopSequences": [HOSTILE],
        }
    )
    sampling = SamplingRequestView(HOSTILE, HOSTILE, params, HOSTILE, (HOSTILE,))
    schema = {
        "type": "object",
        "properties": {
            HOSTILE: {"type": "string", "title": HOSTILE, "description": HOSTILE, "default": HOSTILE},
            "pick": {"type": "string", "oneOf": [{"const": HOSTILE, "title": HOSTILE}]},
        },
    }
    link = UrlView(HOSTILE, None, HOSTILE, "javascript:alert(3)", None, ())
    async with served() as inbox, browser.tab(inbox.url) as tab:
        inbox.describe_server(HOSTILE, HOSTILE)
        async with anyio.create_task_group() as group:
            group.start_soon(inbox.review_request, sampling)
            group.start_soon(inbox.fill_form, form_view(HOSTILE, schema, HOSTILE))
            group.start_soon(inbox.consent_url, link)
            group.start_soon(inbox.consent_url, url_view(HOSTILE, "https://xn--80ak6aa92e.com/", HOSTILE))
            await tab.page.locator("article").nth(3).wait_for(timeout=WAIT_MS)
            text = await tab.page.locator("main").inner_text()
            assert "<script>alert(1)</script>" in text and "\\u202eevil\\x07" in text
            assert "\u202e" not in text
            assert await tab.page.locator("script").count() == 1  # inbox.js, nothing added
            assert await tab.page.locator("[onerror]").count() == 0
            assert (
                await tab.page.locator("main img").count() == 0
            )  # the disguised "image" is named, not shown
            assert await tab.page.locator("a[href^='javascript']").count() == 0
            javascript = tab.page.locator("article").nth(2).get_by_role("button", name="Open")
            assert await javascript.is_disabled()
            await anyio.sleep(0.5)
            tab.assert_nothing_ran()
            group.cancel_scope.cancel()


#: A phone as the issue tried it (chromium's emulation: 390 x 844 CSS px, touch), and a desktop.
PHONE = {
    "viewport": {"width": 390, "height": 844},
    "device_scale_factor": 3,
    "is_mobile": True,
    "has_touch": True,
}
DESKTOP = {"viewport": {"width": 1280, "height": 900}}
#: A system prompt of many lines and a message of one long paragraph.
LONG_PROMPT = "\n".join(
    f"Rule {n}: answer in plain words, and cite the page you took it from." for n in range(40)
)
LONG_TEXT = "Summarise the release notes below for the changelog. " * 60
#: The buttons that turn a request away, which a thumb must not hit for another.
DESTRUCTIVE = ("Refuse", "Never", "Decline")

#: What the page's layout is, measured in the page: its width and the document's, each request
#: text's box, each label and value pair's boxes.
LAYOUT = """() => {
  const box = (node) => { const r = node.getBoundingClientRect(); return {left: r.left, right: r.right,
    top: r.top, bottom: r.bottom, width: r.width, height: r.height}; };
  return {
    viewport: document.documentElement.clientWidth,
    scrollWidth: document.documentElement.scrollWidth,
    texts: [...document.querySelectorAll("article .text")].map(box),
    pairs: [...document.querySelectorAll("article dt")].map((dt) => [box(dt), box(dt.nextElementSibling)]),
  };
}"""

#: Every visible button, link button and form control of the cards: its name, type and box.
CONTROLS = """() => [...document.querySelectorAll(
    "article button, article a.button, article input, article select, article textarea")]
  .filter((node) => node.getClientRects().length > 0)
  .map((node) => { const r = node.getBoundingClientRect();
    return {name: (node.innerText || node.id || node.type).trim(), tag: node.tagName, type: node.type,
            card: node.closest("article").className, width: r.width, height: r.height,
            left: r.left, right: r.right, top: r.top, bottom: r.bottom}; })"""


@asynccontextmanager
async def every_card(inbox: WebInbox) -> AsyncIterator[None]:
    """A card of each kind pending (a sampling request with long texts, a result to review, a form
    with every field type, a link) for the duration of the block."""
    async with anyio.create_task_group() as group:
        group.start_soon(inbox.review_request, sampling_view(system=LONG_PROMPT, text=LONG_TEXT))
        group.start_soon(inbox.review_result, result_view(text=LONG_TEXT))
        group.start_soon(inbox.fill_form, form_view())
        group.start_soon(inbox.consent_url, url_view(url="https://docs.example.com/" + "a/" * 150))
        yield
        group.cancel_scope.cancel()


async def test_on_a_phone_each_card_stacks_at_full_width_and_the_desktop_keeps_its_columns(
    browser: Browser, tmp_path: Path
) -> None:
    async with served() as inbox, every_card(inbox):
        async with browser.tab(inbox.url, **PHONE) as phone:
            await phone.page.locator("article").nth(3).wait_for(timeout=WAIT_MS)
            layout = await phone.page.evaluate(LAYOUT)
            assert layout["viewport"] == 390
            assert layout["scrollWidth"] <= layout["viewport"]  # no card scrolls sideways
            assert len(layout["texts"]) >= 6
            for text in layout["texts"]:  # the request's texts use the card's width
                assert text["width"] >= 0.85 * layout["viewport"]
                assert text["left"] >= 0 and text["right"] <= layout["viewport"]
            for label, value in layout["pairs"]:  # each label above its value
                assert label["bottom"] <= value["top"]
            for kind, name in [
                ("Sampling request", "sampling"),
                ("Sampling result", "result"),
                ("Form", "form"),
                ("Link to open", "url"),
            ]:
                card = phone.card(f"notes · {kind}")
                await shoot_screen(phone.page, card, f"{name}-phone", tmp_path)
            phone.assert_nothing_ran()
        async with browser.tab(inbox.url, **DESKTOP) as desktop:
            await desktop.page.locator("article").nth(3).wait_for(timeout=WAIT_MS)
            layout = await desktop.page.evaluate(LAYOUT)
            assert layout["scrollWidth"] <= layout["viewport"] == 1280
            for label, value in layout["pairs"]:  # the desktop's two columns, as before
                assert label["right"] < value["left"] and label["top"] == value["top"]
            assert await desktop.page.get_by_role("button", name="Show all").count() == 0
            folded = "[...document.querySelectorAll('.text')].some(t => t.scrollHeight > t.clientHeight)"
            assert await desktop.page.evaluate(folded) is False  # nothing folded away
            desktop.assert_nothing_ran()


def apart(one: dict[str, float], other: dict[str, float]) -> float:
    """The space between two boxes (CSS px): 0 when they touch or overlap."""
    across = max(other["left"] - one["right"], one["left"] - other["right"])
    down = max(other["top"] - one["bottom"], one["top"] - other["bottom"])
    return max(across, down, 0.0)


async def test_on_a_phone_every_control_is_a_44_px_target_and_the_refusals_stand_apart(
    browser: Browser,
) -> None:
    not_web = UrlView("elsewhere", None, "Go", "javascript:void(0)", None, ())
    async with (
        served() as inbox,
        every_card(inbox),
        anyio.create_task_group() as group,
        browser.tab(inbox.url, **PHONE) as phone,
    ):
        group.start_soon(inbox.consent_url, not_web)
        await phone.page.locator("article").nth(4).wait_for(timeout=WAIT_MS)
        disabled = phone.card("elsewhere · Link to open").get_by_role("button", name="Open")
        after = "node => getComputedStyle(node, '::after').content"
        assert "Not a web link" in await disabled.evaluate(after)  # said, not left to a hover
        for edit in ("Edit", "Edit the text"):  # the editors' controls too
            await phone.page.get_by_role("button", name=edit, exact=True).tap()
        controls = await phone.page.evaluate(CONTROLS)
        kinds = {control["card"] for control in controls}
        assert kinds == {"card sampling", "card result", "card form", "card url"}
        small = [c for c in controls if c["width"] < 44 or c["height"] < 44]
        assert small == []
        types = {c["type"] for c in controls if c["tag"] == "INPUT"}
        assert {"email", "url", "number", "date", "checkbox", "text"} <= types  # the keyboard each asks for
        for kind in kinds:
            bar = [c for c in controls if c["card"] == kind and c["tag"] in ("BUTTON", "A")]
            away = [c for c in bar if c["name"] in DESTRUCTIVE]
            assert away, kind
            for refusal in away:
                for other in bar:
                    if other["name"] not in DESTRUCTIVE and other["name"] != "Show all":
                        assert apart(refusal, other) >= 16, (refusal["name"], other["name"])
        phone.assert_nothing_ran()
        group.cancel_scope.cancel()


async def test_on_a_phone_a_long_request_is_folded_and_answered_by_tapping_without_scrolling(
    browser: Browser,
) -> None:
    async with served() as inbox, browser.tab(inbox.url, **PHONE) as phone:
        view = sampling_view(system=LONG_PROMPT, text=LONG_TEXT)
        answers: list[Any] = []
        async with anyio.create_task_group() as group:
            group.start_soon(_append, answers, inbox.review_request(view))
            card = phone.card("notes · Sampling request")
            await card.wait_for(timeout=WAIT_MS)
            prompt = card.locator(".text").first
            folded = await prompt.evaluate("t => [t.clientHeight, t.scrollHeight]")
            assert folded[0] < folded[1] and folded[0] < 844 / 2  # folded, with the rest a tap away
            await card.get_by_role("button", name="Show all").first.tap()
            shown = await prompt.evaluate("t => [t.clientHeight, t.scrollHeight]")
            assert shown[0] == shown[1] > folded[0]
            await phone.page.evaluate("window.scrollTo(0, 0)")
            approve = card.get_by_role("button", name="Approve once")
            box = await approve.bounding_box()
            assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 844  # on screen
            on_top = "([x, y]) => document.elementFromPoint(x, y).textContent"
            middle = [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2]
            assert await phone.page.evaluate(on_top, middle) == "Approve once"  # nothing covers it
            assert await phone.page.evaluate("window.scrollY") == 0
            await approve.tap()
        assert answers == [Approve(remember="once")]
        await card.wait_for(state="detached", timeout=WAIT_MS)
        phone.assert_nothing_ran()


async def test_a_signed_link_opens_its_one_item_in_a_fresh_browser_and_is_spent_once_answered(
    browser: Browser,
) -> None:
    async with served(signed_links=True) as inbox:
        answers: list[Any] = []
        async with anyio.create_task_group() as group:
            group.start_soon(_append, answers, inbox.consent_url(url_view()))
            group.start_soon(_append, answers, inbox.fill_form(form_view()))
            with anyio.fail_after(10):
                while len(inbox.state()["pending"]) < 2:  # noqa: ASYNC110 (two hook calls starting)
                    await anyio.sleep(0.02)
            mine, other = (i["id"] for i in inbox.state()["pending"])
            link = inbox.link(mine)
            assert link is not None and "#link=" in link and inbox.token not in link
            async with browser.tab(link) as tab:  # a new person: no token, no session
                card = tab.page.locator("article.linked")
                await card.wait_for(timeout=WAIT_MS)
                assert await tab.page.locator("article").count() == 1  # nothing else is shown
                assert "#" not in await tab.page.evaluate("location.href")  # the token left the address
                listed = await tab.page.evaluate(LIST_STATUS)
                assert listed == 404
                await card.get_by_role("button", name="Decline").click()
                await card.wait_for(state="detached", timeout=WAIT_MS)
                tab.assert_nothing_ran()
            assert [i["id"] for i in inbox.state()["pending"]] == [other]
            context = await browser.browser.new_context()
            try:
                page = await context.new_page()
                await page.goto(link)  # answered: the link signs nobody in any more
                await page.get_by_text("This link no longer signs in").wait_for(timeout=WAIT_MS)
                assert await page.locator("article").count() == 0
            finally:
                await context.close()
            inbox.answer(other, {"action": "cancel"})
        assert "decline" in answers


#: The status of the list, fetched with the tab's own session (a signed link's: 404).
LIST_STATUS = """async () => {
  const session = Object.entries(sessionStorage).find(([k]) => k.startsWith("host_receiver_inbox:"))[1];
  return (await fetch("/api/items", { headers: { "X-Inbox-Session": session } })).status;
}"""


#: The status of one item's API, fetched with the tab's own session.
ITEM_STATUS = """async url => {
  const session = Object.entries(sessionStorage).find(([k]) => k.startsWith("host_receiver_inbox:"))[1];
  return (await fetch(url, { headers: { "X-Inbox-Session": session } })).status;
}"""


async def test_a_signed_link_sent_by_one_inbox_serve_opens_its_one_item_on_another_until_answered(
    browser: Browser, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'fleet.db'}"
    hook = HttpReceiver()
    try:
        async with open_store(url) as store:
            await store.add_person("ann", ["ops"], channels=[f"webhook+{hook.url}"])
            mine, other = [
                (
                    await store.add_item(
                        host="worker-1",
                        server_name="notes",
                        server_title="Notes",
                        server_identity="stdio:notes",
                        kind="url",
                        payload=_items.url(url_view()),
                        session="s",
                        routed_to=["ops"],
                    )
                ).id
                for _ in range(2)
            ]
        with inbox_serve(url, "--notify-links", "signed") as (_, first):  # process A sends the links
            sent = await hook.wait_for(2)
        links = {event["data"]["id"]: event["data"]["link"] for event in (r.json() for r in sent)}
        assert links[mine].startswith(f"{first}/items/{mine}#link=")
        with inbox_serve(url, "--notify-links", "signed") as (_, second):  # A has stopped: B opens it
            link = second + links[mine].removeprefix(first)
            async with browser.tab(link) as tab:  # a new person: no token, no session
                card = tab.page.locator("article.linked")
                await card.wait_for(timeout=WAIT_MS)
                assert await tab.page.locator("article").count() == 1
                assert await tab.page.evaluate(LIST_STATUS) == 404
                assert await tab.page.evaluate(ITEM_STATUS, f"{second}/api/items/{other}") == 404
                await card.get_by_role("button", name="Decline").click()
                await card.wait_for(state="detached", timeout=WAIT_MS)
                tab.assert_nothing_ran()
            context = await browser.browser.new_context()
            try:
                page = await context.new_page()
                await page.goto(link)  # answered: the link signs nobody in any more
                await page.get_by_text("This link no longer signs in").wait_for(timeout=WAIT_MS)
                assert await page.locator("article").count() == 0
            finally:
                await context.close()
        async with open_store(url) as store:
            answered, waiting = await store.item(mine), await store.item(other)
    finally:
        hook.stop()
    assert answered is not None and (answered.status, answered.answered_by) == ("answered", "ann")
    assert answered.answer == {"action": "decline"}
    assert waiting is not None and waiting.status == "pending"
