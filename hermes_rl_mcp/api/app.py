"""The trajectory API as a Starlette ASGI app (Atropos wire protocol).

``create_app()`` returns an app with its own :class:`TrajectoryState`; serve it with any ASGI
server (``hermes-rl-mcp api`` uses Uvicorn). Handlers run on the event loop and never await
between reading and changing the state, so no locking is needed.

Wire-compatible fixes to Atropos's server, beyond those listed in :mod:`.state`:

* ``/status-env`` also accepts ``?env_id=N`` and POST (Atropos only reads a JSON body on GET,
  which many HTTP clients and proxies cannot send).
* Malformed requests get a 4xx with ``{"detail": "<what was wrong and what is valid>"}``;
  an unknown ``env_id`` is a 404 rather than a server error.
* ``/batch`` before ``/register`` answers ``"batch": null`` (with the error message), so a
  polling trainer keeps polling instead of training on an empty list.
* Responses are never gzip-compressed: on loopback compression only costs time, and every HTTP
  client reads an uncompressed body.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from hermes_rl_mcp.api.models import EnvIdentifier, RegisterEnv, Registration, WireError
from hermes_rl_mcp.api.payload import (
    DEFAULT_MAX_BODY_BYTES,
    decode_content,
    parse_json,
    parse_scored_group,
    parse_scored_group_list,
)
from hermes_rl_mcp.api.state import EMPTY_EXAMPLE, TrajectoryState

logger = logging.getLogger("hermes_rl_mcp.api")

_JSON = "application/json"


def _json(payload: Any, status_code: int = 200) -> Response:
    return Response(json.dumps(payload, separators=(",", ":")), status_code=status_code, media_type=_JSON)


def _error(exc: WireError) -> Response:
    return _json({"detail": exc.reason}, exc.status)


def _validation_reason(model: type[BaseModel], exc: ValidationError) -> str:
    problems = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "body"
        got = "" if error["type"] == "missing" else f" (got {error['input']!r})"
        problems.append(f"{where}: {error['msg']}{got}")
    fields = ", ".join(
        f"{name}{'' if info.is_required() else '?'}" for name, info in model.model_fields.items()
    )
    return f"{'; '.join(problems)}. Expected a JSON object with fields {fields}"


def _model(model: type[BaseModel], payload: Any) -> Any:
    if not isinstance(payload, dict):
        raise WireError(422, f"body must be a JSON object, got {type(payload).__name__}")
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        raise WireError(422, _validation_reason(model, exc)) from None


RawHandler = Callable[[Scope, Receive, Send], Awaitable[None]]
_QUERY_ENV_ID = re.compile(rb"env_id=([0-9]{1,18})")


class TrajectoryApi(Starlette):
    """Starlette app whose three hot endpoints skip routing, middleware and request objects.

    ``POST /scored_data``, ``GET /batch`` and ``GET /status-env?env_id=N`` carry nearly all the
    traffic; they are served as plain ASGI (same answers, same errors, same log lines). Every
    other request, including any form of these the fast path does not recognise, goes through
    the Starlette routes.
    """

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


async def _send_json(send: Send, body: bytes, status: int = 200) -> None:
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
    })
    await send({"type": "http.response.body", "body": body})


async def _read_body(receive: Receive) -> bytes | None:
    """The whole request body, or None when the client went away first."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None


def create_app(max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> TrajectoryApi:
    """A fresh trajectory API; ``app.state.trajectory`` is its :class:`TrajectoryState`."""
    state = TrajectoryState()

    async def body_of(request: Request) -> bytes:
        return decode_content(await request.body(), request.headers.get("content-encoding"), max_body_bytes)

    async def model_from(request: Request, model: type[BaseModel]) -> Any:
        return _model(model, parse_json(await body_of(request)))

    async def root(request: Request) -> Response:
        return _json({"message": "hermes-rl-mcp trajectory API (Atropos protocol)"})

    async def health(request: Request) -> Response:
        return _json({"status": "ok", "current_step": state.step})

    async def register(request: Request) -> Response:
        registration: Registration = await model_from(request, Registration)
        previous = state.registration
        requester, replaced = state.register_trainer(registration)
        if previous is not None:
            changed = {
                name: value
                for name, value in registration.model_dump().items()
                if getattr(previous, name) != value
            }
            logger.warning("trainer registered again; now in effect: %s", changed or "same settings")
        logger.info(
            "trainer registered: batch_size=%d starting_step=%d num_steps=%d",
            registration.batch_size, registration.starting_step, registration.num_steps,
        )
        return _json({"uuid": requester, "reregistered": replaced})

    async def register_env(request: Request) -> Response:
        request_env: RegisterEnv = await model_from(request, RegisterEnv)
        record = state.register_env(request_env)
        if record is None:
            return _json({"status": "wait for trainer to start"})
        registration = state.registration
        assert registration is not None
        logger.info(
            "env %d registered as %s (group_size=%d, weight=%g, min_batch_allocation=%s)",
            record.env_id, record.wandb_name, record.group_size, record.weight, record.min_batch_allocation,
        )
        return _json(
            {
                "status": "success",
                "env_id": record.env_id,
                "wandb_name": record.wandb_name,
                "checkpoint_dir": registration.checkpoint_dir,
                "starting_step": state.step,
                "checkpoint_interval": registration.save_checkpoint_interval,
                "num_steps": registration.num_steps,
            }
        )

    async def disconnect_env(request: Request) -> Response:
        ident: EnvIdentifier = await model_from(request, EnvIdentifier)
        try:
            state.disconnect_env(ident.env_id)
        except WireError as exc:
            return _json({"status": "failure", "error": exc.reason}, exc.status)
        logger.info("env %d disconnected", ident.env_id)
        return _json({"status": "success"})

    async def wandb_info(request: Request) -> Response:
        registration = state.registration
        if registration is None:
            return _json({"group": None, "project": None})
        return _json({"group": registration.wandb_group, "project": registration.wandb_project})

    async def info(request: Request) -> Response:
        registration = state.registration
        if registration is None:
            return _json({"batch_size": -1, "max_token_len": -1})
        return _json({"batch_size": registration.batch_size, "max_token_len": registration.max_token_len})

    async def batch(request: Request) -> Response:
        if state.registration is None:
            return _json(
                {"status": "error", "message": "Trainer not registered. Call /register first.", "batch": None}
            )
        formed = state.next_batch()
        if formed is None:
            return Response(b'{"batch":null}', media_type=_JSON)
        logger.info(
            "step %d: delivered %d sequences in %d groups; %d groups still queued",
            formed.step, formed.sequences, len(formed.groups), state.queued_groups,
        )
        # One copy of the groups' texts into the reply (a batch is several MB).
        parts: list[bytes | memoryview] = [b'{"batch":[']
        for group in formed.groups:
            parts.extend(group.parts)
            parts.append(b",")
        parts[-1] = b"]}"
        return Response(b"".join(parts), media_type=_JSON)

    async def latest_example(request: Request) -> Response:
        return Response(state.latest.raw if state.latest else EMPTY_EXAMPLE, media_type=_JSON)

    async def scored_data(request: Request) -> Response:
        group = parse_scored_group(await body_of(request))
        state.check_groups([group])
        result = state.add_group(group)
        if result.buffered:
            return _json({"status": "buffered", "buffer_size": result.buffer_size})
        return Response(b'{"status":"received"}', media_type=_JSON)

    async def scored_data_list(request: Request) -> Response:
        groups = parse_scored_group_list(await body_of(request))
        state.check_groups(groups, where="body")
        buffered = 0
        last_buffer_size: int | None = None
        for group in groups:
            result = state.add_group(group)
            if result.buffered:
                buffered += 1
                last_buffer_size = result.buffer_size
        response: dict[str, Any] = {"status": "received", "groups_processed": len(groups)}
        if buffered:
            response["buffered"] = buffered
            response["last_buffer_size"] = last_buffer_size
        return _json(response)

    async def status(request: Request) -> Response:
        return _json({"current_step": state.step, "queue_size": state.queued_groups})

    async def status_env(request: Request) -> Response:
        raw_id = request.query_params.get("env_id")
        if raw_id is not None:
            try:
                env_id = int(raw_id)
            except ValueError:
                raise WireError(422, f"query parameter env_id must be an integer, got {raw_id!r}") from None
        else:
            body = await body_of(request)
            if not body.strip():
                raise WireError(422, 'env_id is missing: pass ?env_id=N or a JSON body {"env_id": N}')
            env_id = _model(EnvIdentifier, parse_json(body)).env_id
        return _json(state.status_env(env_id))

    async def reset_data(request: Request) -> Response:
        state.reset()
        logger.info("state reset: trainer, environments, queue and step counter cleared")
        return PlainTextResponse("Reset successful")

    def guarded(handler: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            try:
                return await handler(request)
            except WireError as exc:
                logger.warning("%s %s -> %d: %s", request.method, request.url.path, exc.status, exc.reason)
                return _error(exc)

        return endpoint

    # -- hot endpoints as plain ASGI (see TrajectoryApi) ------------------------------------

    def refused(scope: Scope, exc: WireError) -> bytes:
        logger.warning("%s %s -> %d: %s", scope["method"], scope["path"], exc.status, exc.reason)
        return json.dumps({"detail": exc.reason}, separators=(",", ":")).encode()

    async def raw_scored_data(scope: Scope, receive: Receive, send: Send) -> None:
        body = await _read_body(receive)
        if body is None:
            return
        try:
            group = parse_scored_group(decode_content(body, _header(scope, b"content-encoding"), max_body_bytes))
            state.check_groups([group])
        except WireError as exc:
            await _send_json(send, refused(scope, exc), exc.status)
            return
        result = state.add_group(group)
        if result.buffered:
            reply = json.dumps({"status": "buffered", "buffer_size": result.buffer_size}, separators=(",", ":"))
            await _send_json(send, reply.encode())
        else:
            await _send_json(send, b'{"status":"received"}')

    async def raw_batch(scope: Scope, receive: Receive, send: Send) -> None:
        response = await batch(None)  # type: ignore[arg-type]  # batch() never reads the request
        await _send_json(send, bytes(response.body))

    async def raw_status_env(scope: Scope, receive: Receive, send: Send) -> None:
        match = _QUERY_ENV_ID.fullmatch(scope["query_string"])
        if match is None:  # a body, another query layout, a bad id: the full handler explains
            await app_router(scope, receive, send)
            return
        try:
            reply = state.status_env(int(match.group(1)))
        except WireError as exc:
            await _send_json(send, refused(scope, exc), exc.status)
            return
        await _send_json(send, json.dumps(reply, separators=(",", ":")).encode())

    hot: dict[tuple[str, str], RawHandler] = {
        ("POST", "/scored_data"): raw_scored_data,
        ("GET", "/batch"): raw_batch,
        ("GET", "/status-env"): raw_status_env,
    }

    get, post = ["GET"], ["POST"]
    routes = [
        Route("/", guarded(root), methods=get),
        Route("/health", guarded(health), methods=get),
        Route("/register", guarded(register), methods=post),
        Route("/register-env", guarded(register_env), methods=post),
        Route("/disconnect-env", guarded(disconnect_env), methods=post),
        Route("/wandb_info", guarded(wandb_info), methods=get),
        Route("/info", guarded(info), methods=get),
        Route("/batch", guarded(batch), methods=get),
        Route("/latest_example", guarded(latest_example), methods=get),
        Route("/scored_data", guarded(scored_data), methods=post),
        Route("/scored_data_list", guarded(scored_data_list), methods=post),
        Route("/status", guarded(status), methods=get),
        Route("/status-env", guarded(status_env), methods=["GET", "POST"]),
        Route("/reset_data", guarded(reset_data), methods=["GET", "POST"]),
    ]

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        reason = exc.detail
        if exc.status_code == 404:
            reason = f"no endpoint {request.url.path}; endpoints: " + ", ".join(r.path for r in routes)
        elif exc.status_code == 405:
            allowed = (exc.headers or {}).get("Allow", "")
            reason = f"{request.method} is not allowed on {request.url.path}; use {allowed}"
        response = _json({"detail": reason}, exc.status_code)
        response.headers.update(exc.headers or {})
        return response

    app = TrajectoryApi(routes=routes, exception_handlers={HTTPException: http_error}, hot=hot)
    app.state.trajectory = state

    async def app_router(scope: Scope, receive: Receive, send: Send) -> None:
        await Starlette.__call__(app, scope, receive, send)

    return app
