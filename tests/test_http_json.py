"""The environments' keep-alive JSON client against real loopback servers.

Each test serves a raw asyncio TCP server (so it can misbehave on purpose: close idle
connections, send garbage, never answer) or the real policy server under uvicorn.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import numpy as np
import pytest
import uvicorn

from hermes_rl_mcp.sdk.base import APIServerConfig
from hermes_rl_mcp.sdk.http_json import HTTPJSONClient, HTTPJSONError
from hermes_rl_mcp.sdk.policy_client import PolicyClient, PolicyError
from hermes_rl_mcp.trainer.model import PolicyModel
from hermes_rl_mcp.trainer.policy_server import PolicyHolder, build_app
from hermes_rl_mcp.trainer.tokenizer import CharTokenizer

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def read_request(reader: asyncio.StreamReader) -> tuple[str, dict[str, str], bytes] | None:
    """One HTTP request (request line, lower-cased headers, body), or None at end of stream."""
    head = await reader.readuntil(b"\r\n\r\n") if not reader.at_eof() else b""
    if not head:
        return None
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return lines[0], headers, body


def json_reply(payload: object, *, status: str = "200 OK", close: bool = False) -> bytes:
    body = json.dumps(payload).encode()
    extra = "Connection: close\r\n" if close else ""
    return f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{extra}Content-Length: {len(body)}\r\n\r\n".encode() + body


@asynccontextmanager
async def serving(handler: Handler, **client_options: Any) -> AsyncIterator[tuple[HTTPJSONClient, list[int]]]:
    """Serve ``handler`` on a free loopback port; yields a client of it and a list counting the
    accepted connections, and closes both on the way out."""
    accepted: list[int] = []

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)
        try:
            await handler(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = HTTPJSONClient(f"http://127.0.0.1:{port}/v1", **client_options)
    try:
        yield client, accepted
    finally:
        await client.aclose()
        server.close()


async def echo_forever(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while (request := await read_request(reader)) is not None:
        line, headers, body = request
        writer.write(
            json_reply({"line": line, "auth": headers.get("authorization"), "purpose": headers.get("x-purpose"), "got": json.loads(body)})
        )
        await writer.drain()


def test_per_request_headers_and_a_key_with_braces() -> None:
    async def main() -> None:
        async with serving(echo_forever, headers={"Authorization": "Bearer {k}"}) as (client, _):
            marked = await client.post_json("chat/completions", {"i": 1}, headers={"X-Purpose": "evaluation"})
            plain = await client.post_json("chat/completions", {"i": 2})
            assert marked.json()["purpose"] == "evaluation" and plain.json()["purpose"] is None
            assert marked.json()["auth"] == plain.json()["auth"] == "Bearer {k}"
            with pytest.raises(ValueError, match="line break"):
                await client.post_json("chat/completions", {}, headers={"X-Purpose": "a\r\nX-Injected: 1"})

    asyncio.run(main())


def test_round_trip_keeps_connections_alive_and_sends_headers() -> None:
    async def main() -> None:
        async with serving(echo_forever, headers={"Authorization": "Bearer k"}, max_connections=4) as (client, accepted):
            answers = await asyncio.gather(*(client.post_json("chat/completions", {"i": i}) for i in range(40)))
            assert [a.json()["got"]["i"] for a in answers] == list(range(40))
            assert {a.status_code for a in answers} == {200}
            assert answers[0].json()["line"] == "POST /v1/chat/completions HTTP/1.1"
            assert answers[0].json()["auth"] == "Bearer k"
            assert len(accepted) <= 4  # 40 requests over at most max_connections connections
            await client.post_json("/completions", {"again": True})
            assert len(accepted) <= 4

    asyncio.run(main())


def test_error_status_is_returned_with_its_body() -> None:
    async def refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await read_request(reader) is not None:
            writer.write(json_reply({"error": "n must be >= 1"}, status="400 Bad Request"))

    async def main() -> None:
        async with serving(refuse) as (client, _):
            answer = await client.post_json("completions", {"n": 0})
            assert answer.status_code == 400
            assert "n must be >= 1" in answer.text

    asyncio.run(main())


def test_idle_connection_closed_by_the_server_is_replaced() -> None:
    async def one_request_per_connection_silently(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await read_request(reader)
        assert request is not None
        writer.write(json_reply({"ok": True}))  # claims keep-alive, then hangs up
        await writer.drain()

    async def main() -> None:
        async with serving(one_request_per_connection_silently) as (client, accepted):
            for _ in range(5):
                assert (await client.post_json("x", {})).json() == {"ok": True}
                await asyncio.sleep(0.02)  # the server's close reaches the pooled socket
            assert len(accepted) == 5

    asyncio.run(main())


def test_connection_close_and_chunked_bodies() -> None:
    async def chunked_then_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            b"5\r\n{\"a\":\r\n4\r\n 12}\r\n0\r\n\r\n"
        )
        await writer.drain()

    async def main() -> None:
        async with serving(chunked_then_close) as (client, accepted):
            assert (await client.post_json("x", {})).json() == {"a": 12}
            assert (await client.post_json("x", {})).json() == {"a": 12}
            assert len(accepted) == 2  # "Connection: close" is honoured

    asyncio.run(main())


def test_failures_are_clear_errors() -> None:
    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"NOT HTTP AT ALL\r\n\r\n")
        await writer.drain()

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await asyncio.sleep(5)

    async def half_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"cut")
        await writer.drain()

    async def main() -> None:
        for handler, expected in ((garbage, "malformed HTTP response"), (half_answer, "mid-response")):
            async with serving(handler) as (client, _):
                with pytest.raises(HTTPJSONError, match=expected):
                    await client.post_json("x", {})
        async with serving(silent, timeout=0.3) as (client, _):
            with pytest.raises(HTTPJSONError, match="within 0.3 s"):
                await client.post_json("x", {})
        with socket.socket() as probe:  # a port nobody listens on
            probe.bind(("127.0.0.1", 0))
            free = probe.getsockname()[1]
        client = HTTPJSONClient(f"http://127.0.0.1:{free}/v1")
        with pytest.raises(HTTPJSONError, match="cannot connect"):
            await client.post_json("x", {})

    asyncio.run(main())
    with pytest.raises(ValueError, match="http://"):
        HTTPJSONClient("https://example.invalid/v1")
    with pytest.raises(ValueError, match="line break") as refused:
        HTTPJSONClient("http://127.0.0.1:9/v1", headers={"Authorization": "Bearer sk-123\r\nX-Injected: 1"})
    assert "sk-123" not in str(refused.value)


def test_policy_client_talks_to_the_real_policy_server_over_it() -> None:
    tok = CharTokenizer()
    holder = PolicyHolder(model=PolicyModel.initialise(tok, seed=3), default_temperature=1.0, rng=np.random.default_rng(0))

    async def main() -> None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        server = uvicorn.Server(uvicorn.Config(build_app(holder), log_level="warning", lifespan="off"))
        task = asyncio.create_task(server.serve([sock]))
        while not server.started:
            await asyncio.sleep(0.01)
        policy = PolicyClient([APIServerConfig(model_name="m", base_url=f"http://127.0.0.1:{port}/v1", api_key="x")])
        try:
            groups = await asyncio.gather(*(policy.chat([{"role": "user", "content": "at 1 goal 3 L/R"}], n=2, max_tokens=3) for _ in range(20)))
            for group in groups:
                assert len(group.completions) == 2
                for completion in group.completions:
                    assert len(completion.token_ids) == len(completion.logprobs) >= 1
            with pytest.raises(PolicyError, match="answered 4"):
                await policy.chat([{"role": "wizard", "content": "x"}])
        finally:
            await policy.aclose()
            server.should_exit = True
            await task
            sock.close()

    asyncio.run(main())
