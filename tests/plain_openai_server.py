"""A second OpenAI-compatible server for tests: plain chat completions as OpenAI sends them
(no token ids, no prompt token ids), behind a bearer key, on a free loopback port.

It answers arithmetic prompts ("a+b", "a-b"): the first choice of a request is the right
answer, the others are wrong by 1, 2, ..., so every group's scores differ. It records the
Authorization header of every request, so a test can see which key arrived.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

PROBLEM = re.compile(r"^\s*(\d+)\s*([+-])\s*(\d+)\s*$")


@dataclass
class PlainServer:
    key: str
    model: str = "plain-test-model"
    authorizations: list[str] = field(default_factory=list)
    bodies: list[dict] = field(default_factory=list)
    base_url: str = ""

    def app(self) -> Starlette:
        async def chat(request: Request) -> JSONResponse:
            self.authorizations.append(request.headers.get("authorization", ""))
            if request.headers.get("authorization") != f"Bearer {self.key}":
                return JSONResponse({"error": {"message": "invalid api key"}}, status_code=401)
            body = await request.json()
            self.bodies.append(body)
            match = PROBLEM.match(str(body["messages"][-1]["content"]))
            right = 0
            if match:
                a, op, b = int(match[1]), match[2], int(match[3])
                right = a + b if op == "+" else a - b
            choices = [
                {"index": i, "finish_reason": "stop", "message": {"role": "assistant", "content": str(right + i)}}
                for i in range(int(body.get("n", 1)))
            ]
            return JSONResponse({"id": "chatcmpl-test", "object": "chat.completion", "model": self.model, "choices": choices})

        return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


@contextmanager
def plain_openai_server(key: str) -> Iterator[PlainServer]:
    """The server, listening, for the duration of the block; its thread is joined at the end."""
    state = PlainServer(key=key)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    state.base_url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    server = uvicorn.Server(uvicorn.Config(state.app(), log_level="warning", lifespan="off"))
    server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "the plain OpenAI server did not start"
        time.sleep(0.01)
    try:
        yield state
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
        assert not thread.is_alive(), "the plain OpenAI server did not stop"
