"""Malformed JSON-RPC lines over real stdio, against the installed console script: every one is answered.

JSON-RPC 2.0: invalid JSON gets -32700, anything else that is not a valid request -32600, with the
request's id when it can be read and null otherwise. The server goes on serving afterwards, in
either protocol era.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from typing import Any

import pytest

from mcp_helpers import console_script

REPLY_TIMEOUT_S = 30.0  # the first reply waits for the server's start-up on a busy machine
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
HANDSHAKE = {
    "legacy": [
        {"jsonrpc": "2.0", "id": "init", "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ],
    "modern": [],
}

# (line, expected code, expected id): ids that are not a string or an integer cannot be echoed.
MALFORMED: list[tuple[str, int, Any]] = [
    ("not json at all", -32700, None),
    ('{"jsonrpc": "2.0", "id": 1, "method": "ping"', -32700, None),
    ('{"jsonrpc": "2.0", "id": 5, "method": "ping", "params": {"a": NaN}}', -32700, None),
    ('{"jsonrpc": "1.0", "id": 11, "method": "ping"}', -32600, 11),
    ('{"id": "no-version", "method": "ping"}', -32600, "no-version"),
    ('[{"jsonrpc": "2.0", "id": 12, "method": "ping"}, {"jsonrpc": "2.0", "id": 13, "method": "ping"}]', -32600, None),
    ("[]", -32600, None),
    ('{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', -32600, None),
    ('{"jsonrpc": "2.0", "id": 2.0, "method": "ping"}', -32600, None),
    ('{"jsonrpc": "2.0", "id": true, "method": "ping"}', -32600, None),
    ('{"jsonrpc": "2.0", "id": false, "method": "ping"}', -32600, None),
    ('{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}', -32600, None),
    ('{"jsonrpc": "2.0", "id": [1], "method": "ping"}', -32600, None),
    ('{"jsonrpc": "2.0", "id": null, "method": "ping"}', -32600, None),
    ('{"jsonrpc": "2.0", "id": 14, "method": 7}', -32600, 14),
    ('{"jsonrpc": "2.0", "id": 15, "method": "ping", "params": [1, 2]}', -32600, 15),
    ('{"jsonrpc": "2.0", "id": 16}', -32600, 16),
    ('{"jsonrpc": "2.0"}', -32600, None),
    ('"just a string"', -32600, None),
    ("42", -32600, None),
    ("null", -32600, None),
]


class Wire:
    """The console script on a pipe, read line by line on a thread as a client does."""

    def __init__(self, state: str, read: bool = True) -> None:
        self.process = subprocess.Popen(
            [console_script()], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/"), "HERMES_RL_HOME": state},
        )
        self.replies: queue.Queue[dict[str, Any]] = queue.Queue()
        if read:
            self.start_reading()

    def start_reading(self) -> None:
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.replies.put(json.loads(line))  # every line the server writes is one JSON object

    def send(self, line: str | dict[str, Any]) -> None:
        assert self.process.stdin is not None
        text = line if isinstance(line, str) else json.dumps(line)
        self.process.stdin.write(text.encode() + b"\n")
        self.process.stdin.flush()

    def reply(self) -> dict[str, Any]:
        try:
            return self.replies.get(timeout=REPLY_TIMEOUT_S)
        except queue.Empty:
            raise AssertionError(f"no reply within {REPLY_TIMEOUT_S} s: a client would wait forever") from None

    def close(self) -> str:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=15)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
        assert self.process.stderr is not None
        return self.process.stderr.read().decode(errors="replace")


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_every_malformed_line_gets_a_jsonrpc_error_and_serving_goes_on(era: str, isolated_state) -> None:
    wire = Wire(str(isolated_state))
    try:
        for message in HANDSHAKE[era]:
            wire.send(message)
        if era == "legacy":
            assert wire.reply()["id"] == "init"
        for line, code, expected_id in MALFORMED:
            wire.send(line)
            reply = wire.reply()
            assert reply.get("jsonrpc") == "2.0" and "id" in reply, reply
            assert reply["id"] == expected_id, (line, reply)
            assert reply["error"]["code"] == code, (line, reply)
            assert reply["error"]["message"], reply
        # A blank line is no message and gets no answer; the next request is answered as usual.
        wire.send("")
        params = {"_meta": META} if era == "modern" else {}
        wire.send({"jsonrpc": "2.0", "id": "after", "method": "tools/list", "params": params})
        listed = wire.reply()
        assert listed["id"] == "after", listed
        assert "rl_start_training" in {tool["name"] for tool in listed["result"]["tools"]}
        assert wire.replies.empty(), "one reply per line, none for the blank one"
    finally:
        errors = wire.close()
    assert wire.process.returncode == 0, errors
    assert "Traceback" not in errors, errors


def test_a_late_reader_gets_every_reply_whole_and_split_lines_are_read_whole(isolated_state) -> None:
    """Replies far beyond a pipe's buffer wait for the client instead of being cut or lost, and a
    request written in pieces is read as one line."""
    wire = Wire(str(isolated_state), read=False)
    try:
        for message in HANDSHAKE["legacy"]:
            wire.send(message)
        requests = [json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/list", "params": {}}) for n in range(24)]
        wire.send("\n".join(requests))  # one write, many lines
        split = json.dumps({"jsonrpc": "2.0", "id": "split", "method": "tools/list", "params": {}})
        assert wire.process.stdin is not None
        wire.process.stdin.write(split[:20].encode())
        wire.process.stdin.flush()
        time.sleep(0.3)  # the server has half a line, and a pipe full of replies nobody reads yet
        wire.send(split[20:])
        time.sleep(0.5)
        wire.start_reading()
        replies = [wire.reply() for _ in range(26)]
    finally:
        errors = wire.close()
    assert [r["id"] for r in replies] == ["init", *range(24), "split"]
    sizes = {len(json.dumps(r["result"]["tools"])) for r in replies[1:]}
    assert len(sizes) == 1 and sizes.pop() * 25 > 4 * 65536  # well past what a pipe holds
    assert wire.process.returncode == 0, errors


def test_a_client_that_closes_its_end_of_stdout_ends_the_server_cleanly(isolated_state) -> None:
    """Its replies cannot be delivered: the server says so once and ends as usual when stdin closes."""
    wire = Wire(str(isolated_state), read=False)
    for message in HANDSHAKE["legacy"]:
        wire.send(message)
    assert wire.process.stdout is not None
    assert json.loads(wire.process.stdout.readline())["id"] == "init"
    wire.process.stdout.close()  # the client stops reading for good
    for n in range(20):
        wire.send({"jsonrpc": "2.0", "id": n, "method": "tools/list", "params": {}})
    time.sleep(1.0)
    assert wire.process.poll() is None, "the server must not die on a client's closed pipe"
    errors = wire.close()
    assert wire.process.returncode == 0, errors
    assert "Traceback" not in errors and "closed its end of stdout" in errors, errors
