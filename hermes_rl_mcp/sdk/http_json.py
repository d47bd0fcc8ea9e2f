"""A small keep-alive HTTP/1.1 client for JSON POSTs to plain ``http://`` endpoints.

Multi-turn environments send thousands of short requests per trainer step to a policy server,
usually on loopback. A general client (httpx) spends most of the environment's CPU per request
on connection-pool bookkeeping (it probes every pooled socket for each request), which made the
environment process, not the policy, the bottleneck of a run. This client keeps a stack of idle
connections, writes each request in one call and parses the response with httptools' C parser.
TLS endpoints are out of its scope: callers use httpx for ``https://``.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httptools

from hermes_rl_mcp.errors import HermesRLError


class HTTPJSONError(HermesRLError, RuntimeError):
    """The endpoint could not be reached or broke the HTTP protocol; no response was read."""


@dataclass
class JSONResponse:
    status_code: int
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.body)


class _ResponseReader:
    """Callbacks for httptools: collects one response's body and its keep-alive verdict."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.complete = False
        self.keep_alive = False
        self.parser: httptools.HttpResponseParser | None = None

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)

    def on_message_complete(self) -> None:
        self.complete = True
        # httptools answers keep-alive correctly only until the message is complete
        assert self.parser is not None
        self.keep_alive = self.parser.should_keep_alive()


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def close(self) -> None:
        self.writer.close()


class HTTPJSONClient:
    """POSTs JSON to one ``http://host:port/prefix`` base URL over pooled keep-alive connections."""

    def __init__(self, base_url: str, *, headers: dict[str, str] | None = None, timeout: float = 120.0, max_connections: int = 64) -> None:
        parts = urlsplit(base_url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"HTTPJSONClient needs an http://host[:port] URL, got {base_url!r}")
        self.host = parts.hostname
        self.port = parts.port or 80
        self.prefix = parts.path.rstrip("/")
        self.timeout = timeout
        host_header = self.host if parts.port is None else f"{self.host}:{self.port}"
        extra = _header_lines(headers).replace("{", "{{").replace("}", "}}")  # the template is formatted per request
        self._head_template = (
            "POST {path} HTTP/1.1\r\n"
            f"Host: {host_header}\r\n"
            "Content-Type: application/json\r\n"
            "Accept: application/json\r\n"
            f"{extra}"
            "{more}Content-Length: {length}\r\n\r\n"
        )
        self._idle: list[_Connection] = []
        self._slots = asyncio.Semaphore(max(1, max_connections))
        self._closed = False

    async def post_json(self, path: str, payload: Any, *, headers: dict[str, str] | None = None) -> JSONResponse:
        """POST ``payload`` as JSON to ``prefix/path`` (with ``headers`` besides the client's);
        any status is returned, not raised."""
        if self._closed:
            raise HTTPJSONError("client is closed")
        body = json.dumps(payload, separators=(",", ":")).encode()
        full_path = f"{self.prefix}/{path.lstrip('/')}"
        head = self._head_template.format(path=full_path, more=_header_lines(headers), length=len(body))
        request = head.encode("latin-1") + body
        async with self._slots:
            try:
                async with asyncio.timeout(self.timeout):
                    return await self._exchange(request)
            except TimeoutError as exc:
                raise HTTPJSONError(f"no answer from {self.host}:{self.port}{full_path} within {self.timeout:g} s") from exc

    async def _exchange(self, request: bytes) -> JSONResponse:
        # A pooled connection the server has meanwhile closed fails before any response byte
        # arrives; the request is then sent once more on a fresh connection.
        while self._idle:
            connection = self._idle.pop()
            try:
                return await self._round_trip(connection, request)
            except _StaleConnection:
                connection.close()
        try:
            reader, writer = await asyncio.open_connection(self.host, self.port)
        except OSError as exc:
            raise HTTPJSONError(f"cannot connect to {self.host}:{self.port}: {exc}") from exc
        try:
            return await self._round_trip(_Connection(reader, writer), request)
        except _StaleConnection as exc:
            raise HTTPJSONError(f"{self.host}:{self.port} closed the connection without answering") from exc

    async def _round_trip(self, connection: _Connection, request: bytes) -> JSONResponse:
        got_bytes = False
        try:
            connection.writer.write(request)
            await connection.writer.drain()
            collected = _ResponseReader()
            parser = collected.parser = httptools.HttpResponseParser(collected)
            while not collected.complete:
                data = await connection.reader.read(65536)
                if not data:
                    if not got_bytes:
                        raise _StaleConnection
                    parser.feed_data(b"")  # lets a close-delimited body complete
                    if not collected.complete:
                        raise HTTPJSONError(f"{self.host}:{self.port} closed the connection mid-response")
                    break
                got_bytes = True
                parser.feed_data(data)
            status = parser.get_status_code()
            keep_alive = collected.keep_alive
        except (ConnectionError, OSError) as exc:
            connection.close()
            if not got_bytes:
                raise _StaleConnection from exc
            raise HTTPJSONError(f"connection to {self.host}:{self.port} failed: {exc}") from exc
        except httptools.HttpParserError as exc:
            connection.close()
            raise HTTPJSONError(f"{self.host}:{self.port} sent a malformed HTTP response: {exc}") from exc
        except BaseException:
            connection.close()  # cancelled or timed out mid-exchange: the stream state is unknown
            raise
        if keep_alive and not self._closed:
            self._idle.append(connection)
        else:
            connection.close()
        return JSONResponse(status, b"".join(collected.chunks))

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()
            try:
                await connection.writer.wait_closed()
            except (ConnectionError, OSError):
                pass


class _StaleConnection(Exception):
    """The connection was closed before the response began."""


def _header_lines(headers: dict[str, str] | None) -> str:
    for name, value in (headers or {}).items():
        if any(ch in f"{name}{value}" for ch in "\r\n\0"):
            # named, never shown: the value may be a key
            raise ValueError(f"header {name!r} contains a line break or NUL; it would split the request")
    return "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
