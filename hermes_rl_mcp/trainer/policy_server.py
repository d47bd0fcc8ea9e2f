"""The current policy over an OpenAI-compatible HTTP endpoint (Starlette), with vLLM-style extras.

Every choice carries its token ids and their logprobs (of the distribution actually sampled from),
and every response the prompt's token ids, so environments never tokenize. ``guided_choice``
constrains a completion to one of a list of strings (see ``constraints``). The trainer swaps in
a new snapshot of the policy after each step; a request samples from the snapshot current when
it arrived, so a step never changes the weights under a request.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from hermes_rl_mcp.trainer.constraints import MAX_CHOICES, ChoiceConstraint, ConstraintError, choice_constraint
from hermes_rl_mcp.trainer.model import Generation, PolicyModel, generate
from hermes_rl_mcp.trainer.tokenizer import CharTokenizer, ChatTemplateError

MAX_N = 256
MAX_NEW_TOKENS = 512
DEFAULT_MAX_TOKENS = 16


@dataclass
class PolicyHolder:
    """What the server samples from; the trainer replaces ``model`` and ``step`` after each step."""

    model: PolicyModel
    model_name: str = "hermes-rl-local"
    step: int = 0
    default_temperature: float = 1.0
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))
    last_request: float = field(default_factory=time.monotonic)

    def publish(self, model: PolicyModel, step: int) -> None:
        self.model, self.step = model, step


class _SamplingRequest(BaseModel):
    model_config = ConfigDict(extra="allow")  # other OpenAI fields (user, penalties, ...) are ignored

    model: str | None = None
    n: int = Field(1, ge=1, le=MAX_N)
    max_tokens: int | None = Field(None, ge=1, le=MAX_NEW_TOKENS)
    max_completion_tokens: int | None = Field(None, ge=1, le=MAX_NEW_TOKENS)
    temperature: float | None = Field(None, ge=0, le=5)
    top_p: float = Field(1.0, gt=0, le=1)
    stop: str | list[str] | None = None
    seed: int | None = Field(None, ge=0)
    logprobs: bool | int | None = None
    # vLLM's constrained decoding to one of these strings (checked against the vocabulary later)
    guided_choice: list[str] | None = Field(None, min_length=1, max_length=MAX_CHOICES)

    @field_validator("stop")
    @classmethod
    def _stops(cls, value: str | list[str] | None) -> str | list[str] | None:
        stops = [value] if isinstance(value, str) else (value or [])
        if len(stops) > 32:
            raise ValueError("at most 32 stop strings")
        if any(not s for s in stops):
            raise ValueError("stop strings must be non-empty")
        return value

    def stop_list(self) -> list[str]:
        return [self.stop] if isinstance(self.stop, str) else list(self.stop or [])

    def new_tokens(self) -> int:
        return self.max_tokens or self.max_completion_tokens or DEFAULT_MAX_TOKENS


class CompletionRequest(_SamplingRequest):
    prompt: str | list[str]

    @field_validator("prompt")
    @classmethod
    def _one_prompt(cls, value: str | list[str]) -> str | list[str]:
        if isinstance(value, list) and len(value) != 1:
            raise ValueError("send one prompt per request (a string, or a list holding one string); use n for several samples")
        return value

    def prompt_text(self) -> str:
        return self.prompt if isinstance(self.prompt, str) else self.prompt[0]


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str
    content: Any = None


class ChatRequest(_SamplingRequest):
    messages: list[ChatMessage] = Field(min_length=1)


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": "invalid_request_error", "code": status}}, status_code=status)


async def _parse(request: Request, model_cls: type[BaseModel]) -> BaseModel | JSONResponse:
    try:
        body = await request.json()
    except ValueError:
        return _error(400, "request body is not valid JSON")
    if not isinstance(body, dict):
        return _error(400, "request body must be a JSON object")
    try:
        return model_cls.model_validate(body)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'body'}: {err['msg']}" for err in exc.errors(include_url=False)
        )
        return _error(400, f"invalid request: {problems}")


def _finish_stop(text: str, stops: list[str]) -> str:
    """The text without the stop string it ended on (as OpenAI-compatible servers return it)."""
    for stop in stops:
        if text.endswith(stop):
            return text[: -len(stop)]
    return text


def _sample(
    holder: PolicyHolder, model: PolicyModel, req: _SamplingRequest, prompt_ids: list[int], constraint: ChoiceConstraint | None
) -> list[Generation]:
    holder.last_request = time.monotonic()
    temperature = holder.default_temperature if req.temperature is None else req.temperature
    rng = np.random.default_rng(req.seed) if req.seed is not None else holder.rng
    return generate(
        model,
        prompt_ids,
        n=req.n,
        max_tokens=req.new_tokens(),
        temperature=temperature,
        rng=rng,
        top_p=req.top_p,
        stop=req.stop_list(),
        constraint=constraint,
    )


def _usage(prompt_ids: list[int], samples: list[Generation]) -> dict[str, int]:
    completion = sum(len(s.token_ids) for s in samples)
    return {"prompt_tokens": len(prompt_ids), "completion_tokens": completion, "total_tokens": len(prompt_ids) + completion}


def _text_choice(tok: CharTokenizer, sample: Generation, text: str) -> dict[str, Any]:
    return {
        "text": text,
        "logprobs": {"tokens": [tok.token_text(t) for t in sample.token_ids], "token_logprobs": sample.logprobs},
    }


def _chat_choice(tok: CharTokenizer, sample: Generation, text: str) -> dict[str, Any]:
    return {
        "message": {"role": "assistant", "content": text},
        "logprobs": {"content": [{"token": tok.token_text(t), "logprob": lp} for t, lp in zip(sample.token_ids, sample.logprobs)]},
    }


def _respond(
    holder: PolicyHolder,
    req: _SamplingRequest,
    prompt_ids: list[int],
    *,
    kind: str,
    id_prefix: str,
    choice_fields: Callable[[CharTokenizer, Generation, str], dict[str, Any]],
) -> JSONResponse:
    """Sample ``req.n`` completions and answer in the OpenAI shape of ``kind``; every choice
    carries its token ids, and the response the prompt's."""
    model = holder.model  # one snapshot for the whole request
    tok = model.tokenizer
    constraint = None
    if req.guided_choice is not None:
        try:
            constraint = choice_constraint(tuple(req.guided_choice), tok)
        except ConstraintError as exc:
            return _error(400, f"invalid request: {exc}")
    samples = _sample(holder, model, req, prompt_ids, constraint)
    stops = req.stop_list()
    choices = []
    for index, sample in enumerate(samples):
        text = _finish_stop(tok.decode(sample.token_ids), stops)
        choices.append(
            {"index": index, "finish_reason": sample.finish_reason, "token_ids": sample.token_ids, **choice_fields(tok, sample, text)}
        )
    return JSONResponse(
        {
            "id": f"{id_prefix}-{uuid.uuid4().hex[:24]}",
            "object": kind,
            "created": int(time.time()),
            "model": holder.model_name,
            "prompt_token_ids": prompt_ids,
            "choices": choices,
            "usage": _usage(prompt_ids, samples),
        }
    )


def build_app(holder: PolicyHolder) -> Starlette:
    """The policy server's ASGI app over ``holder``."""

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "step": holder.step})

    async def models(request: Request) -> JSONResponse:
        return JSONResponse(
            {"object": "list", "data": [{"id": holder.model_name, "object": "model", "created": 0, "owned_by": "hermes-rl-mcp"}]}
        )

    async def completions(request: Request) -> JSONResponse:
        parsed = await _parse(request, CompletionRequest)
        if isinstance(parsed, JSONResponse):
            return parsed
        assert isinstance(parsed, CompletionRequest)
        prompt_ids = holder.model.tokenizer.encode(parsed.prompt_text())
        if not prompt_ids:
            return _error(400, "invalid request: prompt is empty")
        return _respond(holder, parsed, prompt_ids, kind="text_completion", id_prefix="cmpl", choice_fields=_text_choice)

    async def chat_completions(request: Request) -> JSONResponse:
        parsed = await _parse(request, ChatRequest)
        if isinstance(parsed, JSONResponse):
            return parsed
        assert isinstance(parsed, ChatRequest)
        try:
            prompt_ids = holder.model.tokenizer.generation_prompt([m.model_dump() for m in parsed.messages])
        except ChatTemplateError as exc:
            return _error(400, f"invalid request: {exc}")
        return _respond(holder, parsed, prompt_ids, kind="chat.completion", id_prefix="chatcmpl", choice_fields=_chat_choice)

    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/v1/health", health, methods=["GET"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/v1/completions", completions, methods=["POST"]),
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
    ]
    return Starlette(routes=routes)



