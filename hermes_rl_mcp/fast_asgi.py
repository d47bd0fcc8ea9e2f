"""A Starlette app whose busiest endpoints are served as plain ASGI.

Starlette's routing, middleware stack, request object and response object cost more than the
work of a small JSON endpoint. The project's servers (the trajectory API, the policy server)
each have a few endpoints that carry nearly all their traffic; ``FastPathApp`` hands those to
plain ASGI handlers and everything else (other paths, other methods, errors) to the Starlette
routes, so both forms give the same answers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.types import Receive, Scope, Send

RawHandler = Callable[[Scope, Receive, Send], Awaitable[None]]


class FastPathApp(Starlette):
    """Starlette app that serves the ``(method, path)`` pairs of ``hot`` without routing."""

    def __init__(self, *args: Any, hot: dict[tuple[str, str], RawHandler], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._hot = hot

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            handler = self._hot.get((scope["method"], scope["path"]))
            if handler is not None:
                await handler(scope, receive, send)
                return
        await super().__call__(scope, receive, send)


async def send_json(send: Send, body: bytes, status: int = 200) -> None:
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
    })
    await send({"type": "http.response.body", "body": body})


async def read_body(receive: Receive) -> bytes | None:
    """The whole request body, or None when the client went away first."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def header(scope: Scope, name: bytes) -> str | None:
    """A request header's value; ``name`` lower-cased, as ASGI servers pass header names."""
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None
