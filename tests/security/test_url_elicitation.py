"""URL elicitation: a URL that could fool a person is refused; one that might is shown with warnings.

Through a receiver scope: a refused URL is -32602 before any task exists and
never reaches the person; an accepted one reaches the consent view with its
warnings (an IP address, punycode, a port that is not the scheme's, http to
a host that is not this machine).
"""

from __future__ import annotations

from typing import Any

import pytest

from host_receiver import ElicitationService, UrlAnswer, UrlView, url_warnings
from host_receiver.errors import INVALID_PARAMS
from host_receiver.protocol.types import ElicitResult
from host_receiver.receiver import Receiver
from tests.receiver_harness import connect

pytestmark = pytest.mark.anyio


class Recorder:
    """An elicitation UI that declines every URL, keeping what it was shown."""

    def __init__(self) -> None:
        self.views: list[UrlView] = []

    async def fill_form(self, view: Any) -> ElicitResult:
        return ElicitResult(action="decline")

    async def consent_url(self, view: UrlView) -> UrlAnswer:
        self.views.append(view)
        return "decline"


def url_params(url: str, **extra: Any) -> dict[str, Any]:
    return {"mode": "url", "message": "Sign in to continue", "url": url, "elicitationId": "e1", **extra}


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/\r\nSet-Cookie: a=b",
        "https://example.com/login\x1b[2J",
        "https://example.com/\x07",
        "https://exa\u202emple.com/",
        "https://example.com/\u2066path",
        "https://example\u200b.com/",
        "https://exa mple.com/",
        "https://example.com/\tx",
        "https://user:secret@example.com/",
        "https://bank.example@evil.example/",
        "https://evil.example\\@bank.example/",
        "https://bank.example\\.evil.example/",
        "https://example.com:99999/",
        "ftp://example.com/",
        "https:///nohost",
        "https://%65vil.example/",  # a browser decodes it to evil.example
        "https://ex%E2%80%AEample.com/",  # U+202E, percent-encoded
        "https://example.com%2Fevil.example/",
        "https://[::1%25eth0]/",
        "https://2130706433/",  # a browser reads each of these as 127.0.0.1
        "https://0x7f000001/",
        "https://127.1/",
        "https://0177.0.0.1/",
        "https://0x7f.0.0.1/",
        "https://127.0.0.1./",
        "https://\uff11\uff12\uff17.\uff10.\uff10.\uff11/",  # full-width digits
        "https://1.2.3.999/",  # ends in a number but is no address: browsers refuse it
        "https://example.123/",
        "https://1.2.3.4.5/",
    ],
)
async def test_a_url_that_could_fool_a_person_is_refused_before_any_task(url: str) -> None:
    ui = Recorder()
    async with connect(Receiver(elicitation=ElicitationService(ui))) as server:
        error = await server.error("elicitation/create", url_params(url, task={"ttl": 60_000}))
        assert (await server.request("tasks/list"))["tasks"] == []
    assert error.code == INVALID_PARAMS
    assert "url" in error.message
    assert ui.views == []


@pytest.mark.parametrize(
    ("url", "address"),
    [
        ("https://2130706433/", "127.0.0.1"),
        ("https://0x7f000001/", "127.0.0.1"),
        ("https://127.1/", "127.0.0.1"),
        ("https://0177.0.0.1/", "127.0.0.1"),
        ("http://0xa.0.0.5/", "10.0.0.5"),
    ],
)
async def test_a_host_only_a_browser_reads_as_an_ip_address_is_refused_naming_the_address(
    url: str, address: str
) -> None:
    ui = Recorder()
    async with connect(Receiver(elicitation=ElicitationService(ui))) as server:
        error = await server.error("elicitation/create", url_params(url))
    assert error.code == INVALID_PARAMS
    assert f"the IP address {address} written in a form a person cannot read" in error.message
    assert ui.views == []


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://example.com/login", []),
        ("https://[::1]/login", ["IP address"]),
        ("https://93.184.216.34/login", ["IP address"]),
        ("https://xn--pple-43d.com/login", ["punycode"]),
        ("https://example.com:8443/login", ["port 8443"]),
        ("http://example.com/login", ["not encrypted"]),
        ("http://localhost/callback", []),
        ("http://127.0.0.1:8080/callback", ["IP address", "port 8080"]),
        ("http://[::1]/callback", ["IP address"]),
        ("http://10.0.0.5/", ["IP address", "not encrypted"]),
    ],
)
async def test_a_url_that_might_fool_a_person_carries_warnings(url: str, expected: list[str]) -> None:
    ui = Recorder()
    async with connect(Receiver(elicitation=ElicitationService(ui))) as server:
        result = await server.request("elicitation/create", url_params(url))
    assert result == {"action": "decline"}
    (view,) = ui.views
    assert len(view.warnings) == len(expected), view.warnings
    for warning, words in zip(view.warnings, expected, strict=True):
        assert words in warning


def test_a_host_written_as_only_a_browser_reads_it_is_warned_of_as_the_address_it_is() -> None:
    """url_warnings is public: called on a URL the receiver would refuse, it still names the address."""
    (ip, unencrypted) = url_warnings("http://0xa.0.0.5/", "")
    assert ip == "The link goes to an IP address (10.0.0.5, written 0xa.0.0.5), not to a named site."
    assert "not encrypted" in unencrypted
    assert url_warnings("http://2130706433/", "") == (  # loopback: http is fine
        "The link goes to an IP address (127.0.0.1, written 2130706433), not to a named site.",
    )


def test_warnings_never_quote_the_url_raw() -> None:
    for warning in url_warnings("https://xn--pple-43d.com:8443/", "Visit \x1b[2Japple.com\u202e"):
        assert warning.isprintable()
