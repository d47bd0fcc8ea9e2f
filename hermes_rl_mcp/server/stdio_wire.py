"""The reading side of stdio: every line that is not a JSON-RPC 2.0 message gets an error reply.

The SDK's stdio transport turns a line it cannot parse into an exception that no one answers,
and reads a request whose id is a float, a boolean or an object as a *notification*, which gets
no answer by definition: either way the client waits forever. JSON-RPC 2.0 calls for -32700 for
invalid JSON and -32600 for anything else that is not a valid request, with the id when it can be
read and null otherwise. So the lines are screened before the SDK sees them; the SDK still
parses the ones that pass, and writes every reply (see docs/upstream/stdio-malformed-jsonrpc.md).

When stdin and stdout are pipes (as every client that spawns the server with pipes makes them),
the wire is read and written on the event loop through non-blocking descriptors of its own; the
SDK's default reads each line and writes each reply in a worker thread, three thread hops per
call, a tenth of a millisecond or more of every answer. Anything else (a terminal, a socket, a
file) is served as the SDK serves it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import sys
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterator
from io import TextIOWrapper
from typing import Any

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
def _claimed(fd: int, diversion: Callable[[], int]) -> Iterator[int]:
    """The wire's ``fd`` (0 or 1) on a private descriptor, with ``fd`` pointed at ``diversion()``
    while serving, so that nothing else in the process (or a child) can read or write protocol
    bytes (stray prints go to stderr); restored afterwards."""
    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    stand_in = diversion()
    os.dup2(stand_in, fd)
    os.close(stand_in)
    try:
        yield private
    finally:
        os.dup2(private, fd)
        os.close(private)


def _nonblocking_pipe(fd: int, flags: int) -> int | None:
    """A new open file description of the pipe at ``fd``, non-blocking; None when ``fd`` is not a
    pipe or cannot be reopened. A description of its own: setting O_NONBLOCK on the inherited one
    would change it for every other process that shares it."""
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return None
        return os.open(f"/proc/self/fd/{fd}", flags | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None


class PipeLines:
    """Text lines read from a non-blocking pipe on the event loop."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        pending = bytearray()
        while True:
            newline = pending.find(b"\n")
            if newline >= 0:
                line = bytes(pending[:newline + 1])
                del pending[:newline + 1]
                yield line.decode("utf-8", errors="replace")
                continue
            try:
                chunk = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                await anyio.wait_readable(self._fd)
                continue
            if not chunk:  # the client closed the wire
                if pending:
                    yield pending.decode("utf-8", errors="replace")
                return
            pending += chunk


class PipeWriter:
    """Replies written to a non-blocking pipe on the event loop; waits while the pipe is full.

    A client that closed its end is gone: its replies are dropped (said once on stderr), and the
    server ends as usual when stdin closes, instead of failing with a traceback.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._reader_gone = False

    async def write(self, text: str) -> None:
        data = memoryview(text.encode("utf-8"))
        while data and not self._reader_gone:
            try:
                data = data[os.write(self._fd, data):]
            except BlockingIOError:
                await anyio.wait_writable(self._fd)
            except BrokenPipeError:
                self._reader_gone = True
                print("the client closed its end of stdout; replies are dropped until stdin closes", file=sys.stderr, flush=True)

    async def flush(self) -> None:
        return None  # os.write has handed every byte to the pipe


def _stray_output() -> int:
    """Where the process's own stdout goes while the wire is served: stderr, or nowhere."""
    try:
        return os.dup(2)
    except OSError:
        return os.open(os.devnull, os.O_WRONLY)


@contextlib.contextmanager
def _wire() -> Iterator[tuple[AsyncIterable[str], Any]]:
    """The wire's line source and reply sink: non-blocking pipes where both ends are pipes."""
    with _claimed(0, lambda: os.open(os.devnull, os.O_RDONLY)) as wire_in, _claimed(1, _stray_output) as wire_out:
        reader = _nonblocking_pipe(wire_in, os.O_RDONLY)
        writer = _nonblocking_pipe(wire_out, os.O_WRONLY) if reader is not None else None
        try:
            if reader is not None and writer is not None:
                yield PipeLines(reader), PipeWriter(writer)
            else:
                text_in = TextIOWrapper(os.fdopen(wire_in, "rb", closefd=False), encoding="utf-8", errors="replace")
                text_out = TextIOWrapper(os.fdopen(wire_out, "wb", closefd=False), encoding="utf-8")
                yield anyio.wrap_file(text_in), anyio.wrap_file(text_out)
        finally:
            for twin in (reader, writer):
                if twin is not None:
                    os.close(twin)


async def serve_screened_stdio(lowlevel: Any) -> None:
    """Run the low-level server over stdio with the reading side screened."""
    with _wire() as (source, sink):
        lines = ScreenedLines(source)
        async with stdio_server(stdin=lines, stdout=sink) as (read_stream, write_stream):  # type: ignore[arg-type]
            lines.reply_with(write_stream.send)
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
