"""A test certificate authority, and the https half of the HTTP transports' behaviour tests."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
import trustme


@pytest.fixture(scope="session")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def ca_file(ca: trustme.CA, tmp_path: Path) -> Path:
    path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return path


def server_context(ca: trustme.CA, *hostnames: str) -> ssl.SSLContext:
    """A server's TLS context, its certificate issued by ``ca`` for ``hostnames``."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*hostnames).configure_cert(context)
    return context


@pytest.fixture(params=["http", "https"])
def tls(
    request: pytest.FixtureRequest, ca: trustme.CA, ca_file: Path, monkeypatch: pytest.MonkeyPatch
) -> ssl.SSLContext | None:
    """Plain http (None), or a server context for https that clients trust as a user would make them:
    the test CA in ``SSL_CERT_FILE``, which httpx (and so the lean pool) reads."""
    if request.param == "http":
        return None
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    return server_context(ca, "127.0.0.1", "localhost")
