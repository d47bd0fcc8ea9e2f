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
from hermes_rl_mcp.fast_asgi import FastPathApp, RawHandler, header, read_body, send_json
from hermes_rl_mcp.runs.probe import PROBE_HEADER

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


_QUERY_ENV_ID = re.compile(rb"env_id=([0-9]{1,18})")
_PROBE_HEADER_KEY = PROBE_HEADER.lower().encode()  # ASGI header names arrive lower-cased


class TrajectoryApi(FastPathApp):
    """The trajectory API: ``POST /scored_data``, ``GET /batch`` and ``GET /status-env?env_id=N``
    carry nearly all the traffic and are served as plain ASGI (same answers, same errors, same
    log lines); every other request, including any form of these the fast path does not
    recognise, goes through the Starlette routes."""


class _Body:
    """Reads a request's body within the size limit, decoding any content encoding."""

    def __init__(self, max_body_bytes: int) -> None:
        self.max_body_bytes = max_body_bytes

    async def bytes_of(self, request: Request) -> bytes:
        return decode_content(await request.body(), request.headers.get("content-encoding"), self.max_body_bytes)

    async def model_of(self, request: Request, model: type[BaseModel]) -> Any:
        return _model(model, parse_json(await self.bytes_of(request)))


# -- Routes, grouped by what they serve -----------------------------------------------------


def _info_routes(state: TrajectoryState) -> list[Route]:
    """What the server is and what the trainer registered: ``/``, ``/health``, ``/info``,
    ``/wandb_info``."""

    async def root(request: Request) -> Response:
        return _json({"message": "hermes-rl-mcp trajectory API (Atropos protocol)"})

    async def health(request: Request) -> Response:
        return _json({"status": "ok", "current_step": state.step})

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

    return [
        Route("/", _guarded(root), methods=["GET"]),
        Route("/health", _guarded(health), methods=["GET"]),
        Route("/wandb_info", _guarded(wandb_info), methods=["GET"]),
        Route("/info", _guarded(info), methods=["GET"]),
    ]


def _trainer_routes(state: TrajectoryState, body: _Body) -> list[Route]:
    """The trainer's side: ``/register``, ``/batch``, ``/reset_data``."""

    async def register(request: Request) -> Response:
        registration: Registration = await body.model_of(request, Registration)
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

    async def batch(request: Request) -> Response:
        return Response(_batch_reply(state), media_type=_JSON)

    async def reset_data(request: Request) -> Response:
        state.reset()
        logger.info("state reset: trainer, environments, queue and step counter cleared")
        return PlainTextResponse("Reset successful")

    return [
        Route("/register", _guarded(register), methods=["POST"]),
        Route("/batch", _guarded(batch), methods=["GET"]),
        Route("/reset_data", _guarded(reset_data), methods=["GET", "POST"]),
    ]


def _batch_reply(state: TrajectoryState) -> bytes:
    """The body of ``GET /batch``: the next batch, ``null`` when none is ready, or an error
    before any trainer registered."""
    if state.registration is None:
        return json.dumps(
            {"status": "error", "message": "Trainer not registered. Call /register first.", "batch": None},
            separators=(",", ":"),
        ).encode()
    formed = state.next_batch()
    if formed is None:
        return b'{"batch":null}'
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
    return b"".join(parts)


def _environment_routes(state: TrajectoryState, body: _Body) -> list[Route]:
    """Environments joining and leaving: ``/register-env``, ``/disconnect-env``."""

    async def register_env(request: Request) -> Response:
        request_env: RegisterEnv = await body.model_of(request, RegisterEnv)
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
        ident: EnvIdentifier = await body.model_of(request, EnvIdentifier)
        try:
            state.disconnect_env(ident.env_id)
        except WireError as exc:
            return _json({"status": "failure", "error": exc.reason}, exc.status)
        logger.info("env %d disconnected", ident.env_id)
        return _json({"status": "success"})

    return [
        Route("/register-env", _guarded(register_env), methods=["POST"]),
        Route("/disconnect-env", _guarded(disconnect_env), methods=["POST"]),
    ]


def _scored_data_routes(state: TrajectoryState, body: _Body) -> list[Route]:
    """Environments sending scored groups: ``/scored_data``, ``/scored_data_list``,
    ``/latest_example``."""

    async def scored_data(request: Request) -> Response:
        group = parse_scored_group(await body.bytes_of(request))
        state.check_groups([group])
        return Response(_queued_reply(state, group), media_type=_JSON)

    async def scored_data_list(request: Request) -> Response:
        groups = parse_scored_group_list(await body.bytes_of(request))
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

    async def latest_example(request: Request) -> Response:
        return Response(state.latest.raw if state.latest else EMPTY_EXAMPLE, media_type=_JSON)

    return [
        Route("/scored_data", _guarded(scored_data), methods=["POST"]),
        Route("/scored_data_list", _guarded(scored_data_list), methods=["POST"]),
        Route("/latest_example", _guarded(latest_example), methods=["GET"]),
    ]


def _queued_reply(state: TrajectoryState, group: Any) -> bytes:
    """Queues one checked group; the body of the ``/scored_data`` reply."""
    result = state.add_group(group)
    if result.buffered:
        return json.dumps({"status": "buffered", "buffer_size": result.buffer_size}, separators=(",", ":")).encode()
    return b'{"status":"received"}'


def _status_routes(state: TrajectoryState, body: _Body) -> list[Route]:
    """Queue figures for environments pacing themselves: ``/status``, ``/status-env``."""

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
            request_body = await body.bytes_of(request)
            if not request_body.strip():
                raise WireError(422, 'env_id is missing: pass ?env_id=N or a JSON body {"env_id": N}')
            env_id = _model(EnvIdentifier, parse_json(request_body)).env_id
        return _json(state.status_env(env_id))

    return [
        Route("/status", _guarded(status), methods=["GET"]),
        Route("/status-env", _guarded(status_env), methods=["GET", "POST"]),
    ]


def _guarded(handler: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
    """The handler, with a refused request logged and answered as ``{"detail": reason}``."""

    async def endpoint(request: Request) -> Response:
        try:
            return await handler(request)
        except WireError as exc:
            _log_refusal(request.method, request.url.path, exc, probe=PROBE_HEADER in request.headers)
            return _error(exc)

    return endpoint


def _http_error_handler(routes: list[Route]) -> Callable[[Request, Exception], Awaitable[Response]]:
    """Answers an unknown path or method with what exists instead."""

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

    return http_error


# -- Hot endpoints as plain ASGI (see TrajectoryApi) ----------------------------------------


def _log_refusal(method: str, path: str, exc: WireError, *, probe: bool) -> None:
    # A readiness probe is refused by design until its component is up: not worth a warning.
    logger.log(logging.DEBUG if probe else logging.WARNING, "%s %s -> %d: %s", method, path, exc.status, exc.reason)


def _refused(scope: Scope, exc: WireError) -> bytes:
    _log_refusal(scope["method"], scope["path"], exc, probe=header(scope, _PROBE_HEADER_KEY) is not None)
    return json.dumps({"detail": exc.reason}, separators=(",", ":")).encode()


def _hot_handlers(state: TrajectoryState, max_body_bytes: int, routed: RawHandler) -> dict[tuple[str, str], RawHandler]:
    """Plain-ASGI forms of the three busiest endpoints; ``routed`` serves any request through
    the Starlette routes (for the forms the fast path does not recognise)."""

    async def raw_scored_data(scope: Scope, receive: Receive, send: Send) -> None:
        body = await read_body(receive)
        if body is None:
            return
        try:
            group = parse_scored_group(decode_content(body, header(scope, b"content-encoding"), max_body_bytes))
            state.check_groups([group])
        except WireError as exc:
            await send_json(send, _refused(scope, exc), exc.status)
            return
        await send_json(send, _queued_reply(state, group))

    async def raw_batch(scope: Scope, receive: Receive, send: Send) -> None:
        await send_json(send, _batch_reply(state))

    async def raw_status_env(scope: Scope, receive: Receive, send: Send) -> None:
        match = _QUERY_ENV_ID.fullmatch(scope["query_string"])
        if match is None:  # a body, another query layout, a bad id: the full handler explains
            await routed(scope, receive, send)
            return
        try:
            reply = state.status_env(int(match.group(1)))
        except WireError as exc:
            await send_json(send, _refused(scope, exc), exc.status)
            return
        await send_json(send, json.dumps(reply, separators=(",", ":")).encode())

    return {
        ("POST", "/scored_data"): raw_scored_data,
        ("GET", "/batch"): raw_batch,
        ("GET", "/status-env"): raw_status_env,
    }


def create_app(max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> TrajectoryApi:
    """A fresh trajectory API over its own, empty :class:`TrajectoryState`."""
    state = TrajectoryState()
    body = _Body(max_body_bytes)
    routes = [
        *_info_routes(state),
        *_trainer_routes(state, body),
        *_environment_routes(state, body),
        *_scored_data_routes(state, body),
        *_status_routes(state, body),
    ]

    async def routed(scope: Scope, receive: Receive, send: Send) -> None:
        # The routes without the fast path; ``app`` is bound below, before any request arrives.
        await Starlette.__call__(app, scope, receive, send)

    app = TrajectoryApi(
        routes=routes,
        exception_handlers={HTTPException: _http_error_handler(routes)},
        hot=_hot_handlers(state, max_body_bytes, routed),
    )
    return app
