"""The fake OpenAI server itself: concurrent service, script mode, what it records."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import anyio
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from tests.fake_openai import Completion, FakeOpenAI

pytestmark = pytest.mark.anyio
SCRIPT = Path(__file__).resolve().parents[1] / "fake_openai.py"
MESSAGES: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]


async def test_requests_are_served_concurrently_and_disconnects_are_seen() -> None:
    count = 40
    with FakeOpenAI(delay=60) as fake:
        client = openai.AsyncOpenAI(api_key="k", base_url=fake.url, max_retries=0)
        async with anyio.create_task_group() as tg:
            for _ in range(count):
                tg.start_soon(lambda: client.chat.completions.create(model="m", messages=MESSAGES))
            # Every request is in the server at once, none answered: they are served concurrently.
            assert await anyio.to_thread.run_sync(fake.wait_for_requests, count, 20)
            assert not any(r.completed for r in fake.requests)
            tg.cancel_scope.cancel()
        await client.close()

        def all_gone() -> bool:
            with fake._changed:
                return fake._changed.wait_for(lambda: all(r.disconnected for r in fake.requests), 20)

        assert await anyio.to_thread.run_sync(all_gone)


def test_script_mode_prints_its_url_serves_and_stops_on_sigterm() -> None:
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--port", "0", "--delay", "0", "--text", "hi there"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        client = openai.OpenAI(api_key="k", base_url=url, max_retries=0)
        plain = client.chat.completions.create(model="m", messages=MESSAGES)
        assert plain.choices[0].message.content == "hi there"
        assert plain.usage is not None and plain.usage.completion_tokens == 2
        stream = client.chat.completions.create(
            model="m",
            messages=MESSAGES,
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text == "hi there"
        assert chunks[-1].usage is not None
        client.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0
    assert "served 2 requests" in err


def test_records_bodies_and_headers_and_answers_404_elsewhere() -> None:
    with FakeOpenAI() as fake:
        fake.queue(Completion(text="x"))
        client = openai.OpenAI(api_key="sk-rec", base_url=fake.url, max_retries=0)
        client.chat.completions.create(model="m", messages=MESSAGES, temperature=0)
        with pytest.raises(openai.NotFoundError):
            client.embeddings.create(model="e", input="x")
        client.close()
    assert fake.chat_bodies == [{"model": "m", "messages": MESSAGES, "temperature": 0}]
    assert [r.path for r in fake.requests] == ["/v1/chat/completions", "/v1/embeddings"]
    assert fake.requests[0].headers["authorization"] == "Bearer sk-rec"
