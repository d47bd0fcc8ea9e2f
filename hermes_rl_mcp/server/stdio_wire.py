"""The reading side of stdio: every line that is not a JSON-RPC 2.0 message gets an error reply.

The SDK's stdio transport turns a line it cannot parse into an exception that no one answers,
and reads a request whose id is a float, a boolean or an object as a *notification*, which gets
no answer by definition: either way the client waits forever. JSON-RPC 2.0 calls for -32700 for
invalid JSON and -32600 for anything else that is not a valid request, with the id when it can be
read and null otherwise. So the lines are screened before the SDK sees them; the SDK still
parses the ones that pass, and writes every reply (see docs/upstream/stdio-malformed-jsonrpc.md).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterator
from io import TextIOWrapper
from typing import Any, BinaryIO

import anyio
import mcp_types as types
import pydantic_core
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from hermes_rl_mcp.core.errors import excerpt

def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or isinstance(value, int) and not isinstance(value, bool)


def _error(code: int, message: str, request_id: Any = None) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=request_id if _valid_id(request_id) else None, error=types.ErrorData(code=code, message=message)
    )


def rejection(line: str) -> types.JSONRPCError | None:
    """None when ``line`` is one JSON-RPC 2.0 message the SDK reads as what it is; else the error reply."""
    try:
        # The SDK's own parser (pydantic's): a line passes here exactly when the SDK can read it.
        message = pydantic_core.from_json(line, allow_inf_nan=False)
    except ValueError as exc:
        return _error(types.PARSE_ERROR, f"Parse error: the line is not valid JSON ({exc})")
    if isinstance(message, list):
        return _error(types.INVALID_REQUEST, "Invalid Request: MCP does not support JSON-RPC batches; send one message per line")
    if not isinstance(message, dict):
        return _error(types.INVALID_REQUEST, f"Invalid Request: a message is a JSON object, not {excerpt(message)}")
    request_id = message.get("id")
    if "id" in message and not _valid_id(request_id) and not (request_id is None and "error" in message):
        return _error(types.INVALID_REQUEST, f"Invalid Request: an id is a string or an integer, not {excerpt(request_id)}")
    if message.get("jsonrpc") != "2.0":
        return _error(
            types.INVALID_REQUEST, f'Invalid Request: "jsonrpc" must be "2.0", not {excerpt(message.get("jsonrpc"))}', request_id
        )
    if "method" in message:
        if not isinstance(message["method"], str):
            return _error(types.INVALID_REQUEST, "Invalid Request: the method is not a string", request_id)
        if message.get("params") is not None and not isinstance(message["params"], dict):
            return _error(types.INVALID_REQUEST, "Invalid Request: params must be an object", request_id)
        return None
    if "id" not in message:
        return _error(types.INVALID_REQUEST, "Invalid Request: a message without an id needs a method")
    if isinstance(message.get("result"), dict):
        return None
    error = message.get("error")
    if isinstance(error, dict) and isinstance(error.get("code"), int) and isinstance(error.get("message"), str):
        return None
    return _error(types.INVALID_REQUEST, "Invalid Request: a response has a result object or an error object", request_id)


class ScreenedLines:
    """The wire's lines that are JSON-RPC messages; each other line is answered through ``reply``."""

    def __init__(self, lines: AsyncIterable[str]) -> None:
        self._lines = lines
        self._reply: Callable[[SessionMessage], Awaitable[None]] | None = None
        self._replying = anyio.Event()

    def reply_with(self, send: Callable[[SessionMessage], Awaitable[None]]) -> None:
        self._reply = send
        self._replying.set()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._screen()

    async def _screen(self) -> AsyncIterator[str]:
        async for line in self._lines:
            if not line.strip():
                continue  # an empty line carries no message
            error = rejection(line)
            if error is None:
                yield line
                continue
            await self._replying.wait()  # set as soon as the transport's write stream exists
            assert self._reply is not None
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await self._reply(SessionMessage(error))


@contextlib.contextmanager
def _claimed_stdin() -> Iterator[BinaryIO]:
    """The wire's stdin on a private descriptor, with fd 0 on the null device while serving, so
    that nothing else in the process (or a child) can read protocol bytes; restored afterwards."""
    private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        yield os.fdopen(private, "rb", closefd=False)
    finally:
        os.dup2(private, 0)
        os.close(private)


async def serve_screened_stdio(lowlevel: Any) -> None:
    """Run the low-level server over stdio with the reading side screened."""
    with _claimed_stdin() as wire:
        lines = ScreenedLines(anyio.wrap_file(TextIOWrapper(wire, encoding="utf-8", errors="replace")))
        async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
            lines.reply_with(write_stream.send)
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
