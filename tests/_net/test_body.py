"""Bodies read inflated in bounded pieces (host_receiver/_net/body.py)."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import AsyncIterator

import httpx
import pytest

from host_receiver._net.body import PIECE, cap_unread_body, decoded

pytestmark = pytest.mark.anyio

TEXT = b"the quick brown fox " * 50_000  # 1,000,000 bytes


class Chunks(httpx.AsyncByteStream):
    def __init__(self, data: bytes, size: int = 1000) -> None:
        self.chunks = [data[at : at + size] for at in range(0, len(data), size)]
        self.given = 0
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            self.given += 1
            yield chunk

    async def aclose(self) -> None:
        self.closed = True


def response(body: bytes, encoding: str | None) -> httpx.Response:
    headers = {"content-encoding": encoding} if encoding else {}
    return httpx.Response(
        200, headers=headers, stream=Chunks(body), request=httpx.Request("GET", "http://x/")
    )


def raw_deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


@pytest.mark.parametrize(
    ("body", "encoding"),
    [
        (TEXT, None),
        (TEXT, "identity"),
        (gzip.compress(TEXT), "gzip"),
        (gzip.compress(TEXT), "x-gzip"),
        (zlib.compress(TEXT), "deflate"),
        (raw_deflate(TEXT), "deflate"),
        (gzip.compress(zlib.compress(TEXT)), "deflate, gzip"),
        (gzip.compress(TEXT), " GZIP "),
    ],
    ids=[
        "none",
        "identity",
        "gzip",
        "x-gzip",
        "zlib-deflate",
        "raw-deflate",
        "deflate-then-gzip",
        "spelling",
    ],
)
async def test_every_coding_httpx_asks_for_is_inflated_in_bounded_pieces(
    body: bytes, encoding: str | None
) -> None:
    pieces = [piece async for piece in decoded(response(body, encoding))]
    assert b"".join(pieces) == TEXT
    assert max(map(len, pieces)) <= PIECE


async def test_a_coding_nobody_asked_for_is_an_error_naming_it() -> None:
    with pytest.raises(httpx.DecodingError, match="Content-Encoding 'br', which was not asked for"):
        [piece async for piece in decoded(response(b"....", "br"))]


async def test_bytes_that_do_not_inflate_are_an_error_naming_the_coding() -> None:
    with pytest.raises(httpx.DecodingError, match="the gzip body does not inflate"):
        [piece async for piece in decoded(response(b"not gzip at all", "gzip"))]


async def test_a_capped_body_gives_its_first_bytes_inflated_and_reads_no_further() -> None:
    raw = Chunks(gzip.compress(bytes(10_000_000)))  # about 10 KB
    capped = httpx.Response(
        200, headers={"content-encoding": "gzip"}, stream=raw, request=httpx.Request("GET", "http://x/")
    )
    cap_unread_body(capped, 1000)
    assert await capped.aread() == bytes(1000)  # as httpx reads it: no second decoding
    assert raw.given == 1 < len(raw.chunks)
    await capped.aclose()
    assert raw.closed
