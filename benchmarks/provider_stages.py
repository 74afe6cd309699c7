"""Where one OpenAI provider call spends its CPU, stage by stage (issue 17, target 3).

``.venv/bin/python -m benchmarks.provider_stages [--calls N] [--bursts B] [--loops L] [--quick] [--vendors]``

Three parts, each printed as a table (CPU time of this process, so the fake
server's own work, in its own process, does not count):

1. **Stages in a tight loop**, no network: each stage of a call alone, ``--loops``
   times, in µs of CPU per call: our wire mapping, the ``openai`` client's request
   building, httpx's ``send`` on a transport that answers at once, the reading of
   a JSON reply and of an event stream, and whole provider calls on that
   transport (plain and streamed). A call on a socket costs these plus the transport.
   With ``--vendors``, the same for the Anthropic and Gemini backends: the Gemini
   SDK's request conversion (with ``Content`` models, with dicts, and with the
   kept forms: dicts of our ``Part``, our config) and reply
   parsing, and a whole plain call of each (issue 39).
2. **The provider on loopback**: ``--calls`` concurrent ``OpenAIProvider.sample``
   calls against ``tests/fake_openai.py`` (1 s delay, its own process), ``--bursts``
   times, for each HTTP transport (``lean``, ``httpx``) and both call kinds; wall
   time and CPU per call. The first burst connects, as the ``slow`` scenario does.
   The same calls sent by run.py's bare-socket floor client are the first row.
3. **host-receiver's own task work**: the ``slow`` scenario (the requestor) against
   the embedded receiver with the offline echo provider taking 1 s, and with the
   fake OpenAI provider; wall time and the receiver's CPU per task.

The figures are for reading, not asserting: the machine is shared and noisy, so
compare rows of one run. ``--quick`` runs small sizes (a smoke check).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx
import orjson
from httpx_sse import EventSource

from benchmarks.run import ROOT, VENV_PYTHON, provider_floor, with_fake_openai
from host_receiver.client.host import tune_gc_for_serving
from host_receiver.protocol.types import SamplingRequest
from providers import ModelInfo, OpenAIProvider, SamplingProgress
from providers.backends._calls import CallTransport
from providers.backends._openai import _CHAT_OPTIONS
from providers.backends._openai_json import StreamFold, completion_reply
from providers.backends._openai_wire import build_request, make_result

MODEL = ModelInfo("fake-model", "fake")
#: The requestor's prompt (benchmarks/requestor.py ``create_params``).
PARAMS = SamplingRequest.model_validate(
    {"messages": [{"role": "user", "content": {"type": "text", "text": "Say hello."}}], "maxTokens": 16}
)
TRANSPORTS = ("lean", "httpx")


# --- canned answers (what tests/fake_openai.py sends) --------------------------------------


def canned_json() -> bytes:
    from tests.fake_openai import Completion, _completion_body

    return json.dumps(_completion_body(Completion(), "fake-model", 1)).encode()


def canned_stream() -> bytes:
    from tests.fake_openai import Completion, _stream_chunks

    events = [
        f"data: {json.dumps(chunk)}\n\n" for chunk in _stream_chunks(Completion(), "fake-model", 1, True)
    ]
    return ("".join(events) + "data: [DONE]\n\n").encode()


class Body(httpx.AsyncByteStream):
    """A body not read yet, as a network transport gives it (``content=`` would be read at once)."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self._data


def answering_at_once() -> httpx.MockTransport:
    """A transport that answers every chat completion at once, as the fake server would."""
    plain, stream = canned_json(), canned_stream()

    def handle(request: httpx.Request) -> httpx.Response:
        if b'"stream":true' in request.content or b'"stream": true' in request.content:
            return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Body(stream))
        return httpx.Response(200, headers={"content-type": "application/json"}, stream=Body(plain))

    return httpx.MockTransport(handle)


async def ignore(update: SamplingProgress) -> None:
    pass


# --- part 1: stages in a tight loop ----------------------------------------------------------


@dataclass
class Row:
    name: str
    cells: list[str]


def cpu_per_call(loops: int, run: Callable[[], object]) -> float:
    """µs of CPU per call of a synchronous ``run``."""
    run()
    started = time.process_time()
    for _ in range(loops):
        run()
    return (time.process_time() - started) / loops * 1e6


async def async_cpu_per_call(loops: int, run: Callable[[], Awaitable[object]]) -> float:
    """µs of CPU per call of an async ``run``, one call at a time."""
    await run()
    started = time.process_time()
    for _ in range(loops):
        await run()
    return (time.process_time() - started) / loops * 1e6


#: The provider's two HTTP pools (``OpenAIProvider(http_transport=...)``).
Pool = Literal["lean", "httpx"]


def pools(text: str) -> list[Pool]:
    """``--transports``: a comma list of pools."""
    chosen: list[Pool] = []
    for name in text.split(","):
        if name not in ("lean", "httpx"):
            raise argparse.ArgumentTypeError(f"unknown pool {name!r} (lean, httpx)")
        chosen.append("lean" if name == "lean" else "httpx")
    return chosen


def provider_on(transport: httpx.AsyncBaseTransport | None, url: str, kind: Pool = "lean") -> OpenAIProvider:
    provider = OpenAIProvider("fake", [MODEL], api_key="k", base_url=url, max_retries=0, http_transport=kind)
    if transport is not None:  # a measuring hook: the pool under the calls' transport replaced
        calls = provider._client._client._transport
        assert isinstance(calls, CallTransport)
        calls.inner = transport
    return provider


async def stages(loops: int) -> list[Row]:
    import openai
    from openai._models import FinalRequestOptions

    url = "http://127.0.0.1:9/v1"
    body = build_request(PARAMS, MODEL.id, max_tokens_param="max_tokens", forward_metadata=False)
    provider = provider_on(answering_at_once(), url)
    client: Any = provider._client
    http: httpx.AsyncClient = client._client
    stream_body = {**body, "stream": True, "stream_options": {"include_usage": True}}

    def options(data: dict[str, Any]) -> Any:
        return FinalRequestOptions.construct(
            method="post", url="/chat/completions", json_data=data, **_CHAT_OPTIONS
        )

    request = client._build_request(options(body))
    plain_reply, stream_reply = canned_json(), canned_stream()

    async def send() -> None:
        response = await http.send(request)
        await response.aclose()

    async def post_plain() -> None:
        await client.post("/chat/completions", body=body, cast_to=object, options=_CHAT_OPTIONS)

    async def post_streamed() -> None:
        stream = await client.post(
            "/chat/completions",
            body=stream_body,
            cast_to=object,
            options=_CHAT_OPTIONS,
            stream=True,
            stream_cls=openai.AsyncStream[object],
        )
        async with stream:
            async for _ in stream:
                pass

    def read_json() -> None:
        make_result(completion_reply(orjson.loads(plain_reply)), MODEL.id, None)

    async def read_events() -> None:
        response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=stream_reply)
        fold = StreamFold()
        async for event in EventSource(response).aiter_sse():
            if event.data.startswith("[DONE]"):
                break
            fold.add(orjson.loads(event.data))
        make_result(fold.reply(), MODEL.id, None)

    async def read_stream() -> None:
        response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=stream_reply)
        fold = StreamFold()
        decoder = client._make_sse_decoder()
        async for event in decoder.aiter_bytes(response.aiter_bytes()):
            if event.data.startswith("[DONE]"):
                break
            fold.add(event.json())
        make_result(fold.reply(), MODEL.id, None)

    async def sample_plain() -> None:
        await provider.sample(PARAMS, MODEL)

    async def sample_streamed() -> None:
        await provider.sample(PARAMS, MODEL, ignore)

    def wire() -> object:
        return build_request(PARAMS, MODEL.id, max_tokens_param="max_tokens", forward_metadata=False)

    measured = [
        ("our wire mapping (build_request)", cpu_per_call(loops, wire)),
        ("openai: options + request building", cpu_per_call(loops, lambda: client._build_request(options(body)))),  # noqa: E501
        ("httpx: send on a transport answering at once", await async_cpu_per_call(loops, send)),
        ("reading a JSON reply with orjson (+ result)", cpu_per_call(loops, read_json)),
        ("reading an event stream: openai's decoder + fold", await async_cpu_per_call(loops, read_stream)),
        ("reading an event stream: httpx-sse, orjson + fold", await async_cpu_per_call(loops, read_events)),
        ("openai post as before (JSON, AsyncStream), plain", await async_cpu_per_call(loops, post_plain)),
        ("the same, streamed", await async_cpu_per_call(loops, post_streamed)),
        ("provider.sample, plain, same transport", await async_cpu_per_call(loops, sample_plain)),
        ("provider.sample, streamed, same", await async_cpu_per_call(loops, sample_streamed)),
    ]  # fmt: skip
    await provider.aclose()
    return [Row(name, [f"{us:,.0f}"]) for name, us in measured]


# --- part 1b: the vendor backends in a tight loop (issue 39) ---------------------------------


def vendor_answer(vendor: str) -> bytes:
    """What ``vendor``'s fake answers to a plain call (tests/fake_anthropic.py, tests/fake_gemini.py)."""
    from tests.fake_openai import Completion

    if vendor == "anthropic":
        from tests.fake_anthropic import AnthropicWire

        return json.dumps(AnthropicWire([]).reply_body(Completion(), "fake-model", 1)).encode()
    from tests.fake_gemini import GeminiWire

    return json.dumps(GeminiWire([]).reply_body(Completion(), "fake-model", 1)).encode()


async def vendor_stages(loops: int) -> list[Row]:
    """The Gemini SDK's own stages, and a whole plain call of each vendor backend on a transport
    that answers at once (µs of CPU per call)."""
    from google.genai import models, types

    from providers import AnthropicProvider, GeminiProvider
    from providers.backends._gemini_wire import GeminiReply, build_config, build_contents, read_json

    url = "http://127.0.0.1:9"
    anthropic = AnthropicProvider("fake", [MODEL], api_key="k", base_url=url, max_retries=0)
    bridge: Any = anthropic._client._client._transport  # the httpx2 bridge over the call transport
    bridge._transport.inner = answering(vendor_answer("anthropic"))
    gemini = GeminiProvider("fake", [MODEL], api_key="k", base_url=url, max_retries=0)
    calls = gemini._http._transport
    assert isinstance(calls, CallTransport)
    calls.inner = answering(vendor_answer("gemini"))
    api = gemini._client._api_client
    contents, config = build_contents(PARAMS), build_config(PARAMS)  # the kept forms
    ours = [contents] if isinstance(contents, types.Content) else [types.Content(**c) for c in contents]
    listed = [{"role": c.role, "parts": c.parts} for c in ours]  # dicts of our Part (the path before)
    as_models = [
        types.Content(
            role=c.role, parts=[types.Part(**part.model_dump(exclude_unset=True)) for part in c.parts or []]
        )
        for c in ours
    ]
    as_dicts = [content.model_dump(exclude_unset=True) for content in as_models]
    sdk_config = types.GenerateContentConfig(**config.model_dump(exclude_unset=True))
    raw = vendor_answer("gemini")
    reply = orjson.loads(raw)

    def converting(given: object, config: types.GenerateContentConfig) -> Callable[[], object]:
        def run() -> object:
            parameters = types._GenerateContentParameters(model=MODEL.id, contents=given, config=config)
            return models._GenerateContentParameters_to_mldev(api, parameters, None, parameters)

        return run

    def parsing() -> object:
        converted = models._GenerateContentResponse_from_mldev(dict(reply), None, None)
        return types.GenerateContentResponse._from_response(response=converted, kwargs={})

    async def sample(provider: Any) -> None:
        await provider.sample(PARAMS, MODEL)

    measured = [
        ("gemini: our mapping (build_contents, build_config)", cpu_per_call(loops, lambda: (build_contents(PARAMS), build_config(PARAMS)))),  # noqa: E501
        ("gemini: the SDK's request conversion, Content models", cpu_per_call(loops, converting(as_models, sdk_config))),  # noqa: E501
        ("gemini: the same, contents as dicts", cpu_per_call(loops, converting(as_dicts, sdk_config))),
        ("gemini: the same, dicts of our Part, our Config", cpu_per_call(loops, converting(listed, config))),
        ("gemini: the same, one message as a Content of our Part (kept)", cpu_per_call(loops, converting(contents, config))),  # noqa: E501
        ("gemini: the SDK's parsing of a reply into its types", cpu_per_call(loops, parsing)),
        ("gemini: reading the raw reply with orjson (kept)", cpu_per_call(loops, lambda: read_json(GeminiReply(), orjson.loads(raw)))),  # noqa: E501
        ("gemini: provider.sample, plain, transport answering at once", await async_cpu_per_call(loops, lambda: sample(gemini))),  # noqa: E501
        ("anthropic: provider.sample, plain, same", await async_cpu_per_call(loops, lambda: sample(anthropic))),  # noqa: E501
    ]  # fmt: skip
    await gemini.aclose()
    await anthropic.aclose()
    return [Row(name, [f"{us:,.0f}"]) for name, us in measured]


def answering(body: bytes) -> httpx.MockTransport:
    """A transport that answers every request with ``body`` (JSON) at once."""
    return httpx.MockTransport(
        lambda request: httpx.Response(200, headers={"content-type": "application/json"}, stream=Body(body))
    )


# --- part 2: the provider on loopback ------------------------------------------------------------


async def bursts(
    provider: OpenAIProvider, calls: int, count: int, streamed: bool
) -> list[tuple[float, float]]:
    """(wall s, CPU ms per call) of ``count`` bursts of ``calls`` concurrent calls."""
    sink = ignore if streamed else None
    out = []
    for _ in range(count):
        wall, cpu = time.perf_counter(), time.process_time()
        async with anyio.create_task_group() as group:
            for _ in range(calls):
                group.start_soon(provider.sample, PARAMS, MODEL, sink)
        out.append((time.perf_counter() - wall, (time.process_time() - cpu) / calls * 1e3))
    return out


async def on_loopback(calls: int, count: int, transports: list[Pool]) -> list[Row]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="hr-stages-") as tmp:
        _, fake, url = await with_fake_openai(1.0, Path(tmp))
        try:
            cpu = time.process_time()
            floor = (await provider_floor(url, calls))["results"]["wall_s"]
            per_call = (time.process_time() - cpu) / calls * 1e3
            rows.append(
                Row("bare-socket floor (run.py), one burst", [f"{floor:.2f}", f"{per_call:.2f}", "-"])
            )
            for kind in transports:
                for streamed in (True, False):
                    provider = provider_on(None, url, kind)
                    try:
                        done = await bursts(provider, calls, count, streamed)
                    finally:
                        await provider.aclose()
                    first, rest = done[0], done[1:] or done
                    name = f"{kind}, {'streamed' if streamed else 'plain'}"
                    wall_s = statistics.median(w for w, _ in rest)
                    cpu_ms = statistics.median(c for _, c in rest)
                    later = f"{wall_s:.2f} / {cpu_ms:.2f}"
                    rows.append(Row(name, [f"{first[0]:.2f}", f"{first[1]:.2f}", later]))
        finally:
            fake.terminate()
            await fake.wait()
    return rows


# --- part 3: host-receiver's own task work ------------------------------------------------------


async def receiver_runs(size: str) -> list[Row]:
    """The slow scenario against the embedded receiver: echo provider (1 s) and the fake OpenAI provider."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="hr-stages-") as tmp:
        workdir = Path(tmp)
        config, fake, _ = await with_fake_openai(1.0, workdir)
        config.write_text(config.read_text() + '\n[providers.slow-echo]\ntype = "echo"\ndelay = 1.0\n')
        try:
            for provider in ("slow-echo", "fake"):
                out = workdir / f"{provider}.json"
                script = ROOT / "benchmarks"
                requestor = [str(VENV_PYTHON), str(script / "requestor.py"), "--scenario", "slow",
                             "--size", size, "--out", str(out), "--deadline", "120"]  # fmt: skip
                command = [str(VENV_PYTHON), str(script / "embedded.py"), "--provider", provider,
                           "--", *requestor]  # fmt: skip
                env = {**os.environ, "HOST_RECEIVER_CONFIG": str(config)}
                await anyio.run_process(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
                measured = json.loads(out.read_text())["results"]
                per_task = measured["cpu_s"] / measured["tasks"] * 1e3
                rows.append(
                    Row(f"embedded, provider {provider}", [f"{measured['wall_s']:.2f}", f"{per_task:.2f}"])
                )
        finally:
            fake.terminate()
            await fake.wait()
    return rows


# --- output ----------------------------------------------------------------------------------------


def table(title: str, header: list[str], rows: list[Row]) -> str:
    lines = [f"\n{title}\n", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join([row.name, *row.cells]) + " |" for row in rows]
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> None:
    print(
        table(
            "Stages, one call at a time, no network", ["stage", "µs CPU per call"], await stages(args.loops)
        )
    )
    if args.vendors:
        rows = await vendor_stages(args.loops)
        title = "The vendor backends, one call at a time, no network"
        print(table(title, ["stage", "µs CPU per call"], rows))
    loopback = await on_loopback(args.calls, args.bursts, args.transports)
    header = ["calls", "1st burst: wall s", "1st burst: CPU ms per call", "later bursts: wall s / CPU ms"]
    print(table(f"{args.calls:,} concurrent calls on loopback, 1 s provider", header, loopback))
    receiver = await receiver_runs("smoke" if args.quick else "full")
    print(
        table(
            "The slow scenario, embedded receiver",
            ["provider", "wall s", "receiver CPU ms per task"],
            receiver,
        )
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.provider_stages", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--calls", type=int, default=1000, help="concurrent calls per burst")
    parser.add_argument("--bursts", type=int, default=3)
    parser.add_argument("--loops", type=int, default=2000, help="calls per tight-loop stage")
    parser.add_argument("--transports", type=pools, default=["lean"], help="lean,httpx")
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument(
        "--vendors", action="store_true", help="also the Anthropic and Gemini backends' stages (tight loop)"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.calls, args.bursts, args.loops = 50, 1, 100
    tune_gc_for_serving()  # as the CLI and the embedded benchmark host do
    gc.collect()
    anyio.run(main_async, args)


if __name__ == "__main__":
    main()
