"""The current policy over an OpenAI-compatible HTTP endpoint (Starlette), with vLLM-style extras.

Every choice carries its token ids and their logprobs (of the distribution actually sampled from),
and every response the prompt's token ids, so environments never tokenize. The endpoint is the
same for every backend; what samples is a ``Sampler``: ``PolicyHolder`` here for the local NumPy
policy, the Tinker sampling client in ``tinker_policy``. The trainer swaps in a new snapshot of
the policy after each step; the local policy samples concurrent requests together, each batch
from the snapshot current when it starts, so a step never changes the weights under a request.
``guided_choice`` constrains a completion to one of a list of strings where the sampler can
honour it (see ``constraints``).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from hermes_rl_mcp.errors import HermesRLError
from hermes_rl_mcp.fast_asgi import FastPathApp, header, read_body, send_json
from hermes_rl_mcp.sdk.env_types import PURPOSE_HEADER
from hermes_rl_mcp.trainer.constraints import MAX_CHOICES, ConstraintError, choice_constraint
from hermes_rl_mcp.trainer.exploration import FORK_SHARE, ExploredTurns, RewardedAnswers, WordFrequencies, explore
from hermes_rl_mcp.trainer.model import PolicyModel
from hermes_rl_mcp.trainer.sampling import Generation, SampleJob, generate_batch
from hermes_rl_mcp.trainer.tokenizer import ChatTemplateError

MAX_N = 256
MAX_NEW_TOKENS = 512
DEFAULT_MAX_TOKENS = 16


class SamplingRefused(HermesRLError, ValueError):
    """A request the sampler cannot honour; answered with HTTP 400 and this message."""


class SamplerUnavailable(HermesRLError, RuntimeError):
    """The sampler's backend did not answer in time; answered with HTTP 503 and this message."""


class Sampler(Protocol):
    """What the policy endpoint samples from and tokenizes with."""

    model_name: str
    step: int
    last_request: float  # time.monotonic() of the latest sampling request

    def encode_text(self, text: str) -> list[int]: ...

    def encode_chat(self, messages: Sequence[dict[str, Any]]) -> list[int]:
        """The prompt that makes the model answer ``messages``; raises ChatTemplateError."""

    def decode(self, token_ids: Sequence[int]) -> str: ...

    def token_text(self, token_id: int) -> str: ...

    async def sample(self, req: SamplingRequest, prompt_ids: list[int]) -> list[Generation]:
        """``req.n`` completions of ``prompt_ids``; raises SamplingRefused for what it cannot do."""


@dataclass
class _Waiting:
    job: SampleJob
    temperature: float
    top_p: float
    evaluation: bool
    answer: asyncio.Future[tuple[PolicyModel, list[Generation]]]


class SamplingBatches:
    """Requests that arrive while a batch is being sampled wait, and go together in the next.

    Sampling runs on the event loop, so the requests that came in meanwhile are read as soon as
    a batch ends; one forward pass per token step then serves all of them (a multi-turn
    environment sends its episodes' turns at once). A lone request is sampled at once, never
    held back to wait for company. Each batch samples from one snapshot of the policy, the one
    current when it starts (for evaluation, or for training), and hands it back with the samples.
    """

    def __init__(self, current_model: Callable[[bool], PolicyModel]) -> None:
        self._current_model = current_model
        self._waiting: list[_Waiting] = []
        self._worker: asyncio.Task[None] | None = None
        self.batches_sampled = 0  # and the requests in them: how much batching there was
        self.requests_sampled = 0

    async def sample(
        self, job: SampleJob, temperature: float, top_p: float, *, evaluation: bool = False
    ) -> tuple[PolicyModel, list[Generation]]:
        answer: asyncio.Future[tuple[PolicyModel, list[Generation]]] = asyncio.get_running_loop().create_future()
        self._waiting.append(_Waiting(job, temperature, top_p, evaluation, answer))
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._drain())
        return await answer

    async def _drain(self) -> None:
        while self._waiting:
            await asyncio.sleep(0)  # requests parsed in this turn of the loop join the batch
            batch, self._waiting = self._waiting, []
            models = {purpose: self._current_model(purpose) for purpose in (False, True)}
            by_settings: dict[tuple[float, float, bool], list[_Waiting]] = {}
            for waiting in batch:
                if not waiting.answer.done():  # a request whose client left is not sampled
                    by_settings.setdefault((waiting.temperature, waiting.top_p, waiting.evaluation), []).append(waiting)
            for (temperature, top_p, evaluation), group in by_settings.items():
                self.batches_sampled += 1
                self.requests_sampled += len(group)
                self._answer(models[evaluation], group, temperature, top_p)

    def _answer(self, model: PolicyModel, group: list[_Waiting], temperature: float, top_p: float) -> None:
        try:
            results = generate_batch(model, [w.job for w in group], temperature=temperature, top_p=top_p)
        except Exception as exc:
            if len(group) > 1:  # one request's failure is its own: sample the others alone
                for waiting in group:
                    self._answer(model, [waiting], temperature, top_p)
            elif not group[0].answer.done():
                group[0].answer.set_exception(exc)
            return
        for waiting, samples in zip(group, results):
            if not waiting.answer.done():
                waiting.answer.set_result((model, samples))


@dataclass
class PolicyHolder:
    """The local policy as a Sampler; the trainer replaces ``model``, ``evaluated`` and ``step``
    after each step."""

    model: PolicyModel
    # What answers an environment's evaluation requests (the learner's average of the weights);
    # None: ``model`` does.
    evaluated: PolicyModel | None = None
    model_name: str = "hermes-rl-local"
    step: int = 0
    default_temperature: float = 1.0
    # Share of sampled completions replaced by a word of the prompt (the run's trainer sets it
    # while training; a checkpoint served for sampling or evaluation keeps 0).
    explore_prompt_words: float = 0.0
    # Share replaced by an answer that scored on another prompt (from ``rewarded``, which the
    # run's learner fills).
    explore_rewarded: float = 0.0
    rewarded: RewardedAnswers | None = None
    explored: ExploredTurns | None = None
    # which words of the prompts explored vary from prompt to prompt (exploration favours them)
    word_frequencies: WordFrequencies = field(default_factory=WordFrequencies)
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))
    last_request: float = field(default_factory=time.monotonic)
    batches: SamplingBatches = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.batches = SamplingBatches(self._model_for)

    def _model_for(self, evaluation: bool) -> PolicyModel:
        return self.evaluated if evaluation and self.evaluated is not None else self.model

    def publish(self, model: PolicyModel, step: int, evaluated: PolicyModel | None = None) -> None:
        self.model, self.evaluated, self.step = model, evaluated, step

    def encode_text(self, text: str) -> list[int]:
        return self.model.tokenizer.encode(text)

    def encode_chat(self, messages: Sequence[dict[str, Any]]) -> list[int]:
        return self.model.tokenizer.generation_prompt(messages)

    def decode(self, token_ids: Sequence[int]) -> str:
        return self.model.tokenizer.decode(token_ids)

    def token_text(self, token_id: int) -> str:
        return self.model.tokenizer.token_text(token_id)

    async def sample(self, req: SamplingRequest, prompt_ids: list[int]) -> list[Generation]:
        constraint = None
        if req.guided_choice is not None:
            try:
                constraint = choice_constraint(tuple(req.guided_choice), self.model.tokenizer)
            except ConstraintError as exc:
                raise SamplingRefused(str(exc)) from None
        self.last_request = time.monotonic()
        temperature = self.default_temperature if req.temperature is None else req.temperature
        rng = np.random.default_rng(req.seed) if req.seed is not None else self.rng
        job = SampleJob(prompt_ids, req.n, req.new_tokens(), rng, tuple(req.stop_list()), constraint)
        model, samples = await self.batches.sample(job, temperature, req.top_p, evaluation=req.for_evaluation)
        exploring = self.explore_prompt_words > 0 or self.explore_rewarded > 0
        if not exploring or req.for_evaluation or req.stop_list() or req.top_p < 1.0:
            return samples
        boost = 1.0
        if self.explored is not None:
            self.explored.served(len(samples))
            boost = self.explored.boost()
        return explore(
            model, prompt_ids, samples, share=self.explore_prompt_words * boost, max_tokens=req.new_tokens(),
            temperature=temperature, constraint=constraint, rng=rng, record=self.explored,
            rewarded=self.rewarded, rewarded_share=self.explore_rewarded * boost, frequencies=self.word_frequencies,
            fork_share=FORK_SHARE,
        )


class SamplingRequest(BaseModel):
    model_config = ConfigDict(extra="allow")  # other OpenAI fields (user, penalties, ...) are ignored
    # Set from the PURPOSE_HEADER of the HTTP request: an environment's evaluation, never explored.
    _for_evaluation: bool = PrivateAttr(False)

    @property
    def for_evaluation(self) -> bool:
        return self._for_evaluation

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


class CompletionRequest(SamplingRequest):
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


class ChatRequest(SamplingRequest):
    messages: list[ChatMessage] = Field(min_length=1)


Answer = tuple[dict[str, Any], int]  # a JSON body and its HTTP status


def _error(status: int, message: str) -> Answer:
    return {"error": {"message": message, "type": "invalid_request_error", "code": status}}, status


def _encode(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")


_Request = TypeVar("_Request", bound="SamplingRequest")


def _parse(body: bytes, model_cls: type[_Request], purpose: str | None) -> _Request | Answer:
    """The request in ``body``, or the refusal that says what was wrong."""
    try:
        payload = json.loads(body)
    except ValueError:
        return _error(400, "request body is not valid JSON")
    if not isinstance(payload, dict):
        return _error(400, "request body must be a JSON object")
    try:
        parsed = model_cls.model_validate(payload)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'body'}: {err['msg']}" for err in exc.errors(include_url=False)
        )
        return _error(400, f"invalid request: {problems}")
    parsed._for_evaluation = (purpose or "").strip().lower() == "evaluation"
    return parsed


def _finish_stop(text: str, stops: list[str]) -> str:
    """The text up to the first stop string (as OpenAI-compatible servers return it). The stop
    may end inside the completion's last token when a token spans several characters; the
    token ids still include that token, since it was sampled."""
    ends = [text.find(stop) for stop in stops if stop in text]
    return text[: min(ends)] if ends else text


def _usage(prompt_ids: list[int], samples: list[Generation]) -> dict[str, int]:
    completion = sum(len(s.token_ids) for s in samples)
    return {"prompt_tokens": len(prompt_ids), "completion_tokens": completion, "total_tokens": len(prompt_ids) + completion}


def _text_choice(sampler: Sampler, sample: Generation, text: str) -> dict[str, Any]:
    return {
        "text": text,
        "logprobs": {"tokens": [sampler.token_text(t) for t in sample.token_ids], "token_logprobs": sample.logprobs},
    }


def _chat_choice(sampler: Sampler, sample: Generation, text: str) -> dict[str, Any]:
    return {
        "message": {"role": "assistant", "content": text},
        "logprobs": {
            "content": [{"token": sampler.token_text(t), "logprob": lp} for t, lp in zip(sample.token_ids, sample.logprobs)]
        },
    }


async def _respond(
    sampler: Sampler,
    req: SamplingRequest,
    prompt_ids: list[int],
    *,
    kind: str,
    id_prefix: str,
    choice_fields: Callable[[Sampler, Generation, str], dict[str, Any]],
) -> Answer:
    """Sample ``req.n`` completions and answer in the OpenAI shape of ``kind``; every choice
    carries its token ids, and the response the prompt's."""
    try:
        samples = await sampler.sample(req, prompt_ids)
    except SamplingRefused as exc:
        return _error(400, f"invalid request: {exc}")
    except SamplerUnavailable as exc:
        return _error(503, str(exc))
    stops = req.stop_list()
    choices = []
    for index, sample in enumerate(samples):
        text = _finish_stop(sampler.decode(sample.token_ids), stops)
        choices.append(
            {"index": index, "finish_reason": sample.finish_reason, "token_ids": sample.token_ids, **choice_fields(sampler, sample, text)}
        )
    payload = {
        "id": f"{id_prefix}-{uuid.uuid4().hex[:24]}",
        "object": kind,
        "created": int(time.time()),
        "model": sampler.model_name,
        "prompt_token_ids": prompt_ids,
        "choices": choices,
        "usage": _usage(prompt_ids, samples),
    }
    return payload, 200


async def _completions(sampler: Sampler, body: bytes, purpose: str | None) -> Answer:
    parsed = _parse(body, CompletionRequest, purpose)
    if isinstance(parsed, tuple):
        return parsed
    prompt_ids = sampler.encode_text(parsed.prompt_text())
    if not prompt_ids:
        return _error(400, "invalid request: prompt is empty")
    return await _respond(sampler, parsed, prompt_ids, kind="text_completion", id_prefix="cmpl", choice_fields=_text_choice)


async def _chat_completions(sampler: Sampler, body: bytes, purpose: str | None) -> Answer:
    parsed = _parse(body, ChatRequest, purpose)
    if isinstance(parsed, tuple):
        return parsed
    try:
        prompt_ids = sampler.encode_chat([m.model_dump() for m in parsed.messages])
    except ChatTemplateError as exc:
        return _error(400, f"invalid request: {exc}")
    return await _respond(sampler, parsed, prompt_ids, kind="chat.completion", id_prefix="chatcmpl", choice_fields=_chat_choice)


_PURPOSE_KEY = PURPOSE_HEADER.lower().encode()  # ASGI header names arrive lower-cased


class _SamplingEndpoint:
    """A sampling endpoint as plain ASGI: the body in, the JSON answer out. An object, not a
    function, so that a Starlette route given it calls it as an ASGI app too."""

    def __init__(self, sampler: Sampler, answer: Callable[[Sampler, bytes, str | None], Awaitable[Answer]]) -> None:
        self.sampler = sampler
        self.answer = answer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await read_body(receive)
        if body is None:
            return  # the client went away
        payload, status = await self.answer(self.sampler, body, header(scope, _PURPOSE_KEY))
        await send_json(send, _encode(payload), status)


def build_app(holder: Sampler) -> FastPathApp:
    """The policy server's ASGI app over ``holder``. The two sampling endpoints carry nearly
    all the traffic (a multi-turn environment sends one request per episode per turn) and are
    served as plain ASGI; the Starlette routes answer everything else (health, models, a
    wrong method or path)."""
    completions = _SamplingEndpoint(holder, _completions)
    chat_completions = _SamplingEndpoint(holder, _chat_completions)

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "step": holder.step})

    async def models(request: Request) -> JSONResponse:
        return JSONResponse(
            {"object": "list", "data": [{"id": holder.model_name, "object": "model", "created": 0, "owned_by": "hermes-rl-mcp"}]}
        )

    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/v1/health", health, methods=["GET"]),
        Route("/v1/models", models, methods=["GET"]),
        # listed so that a wrong method is answered with the one allowed; a POST never gets here
        Route("/v1/completions", completions, methods=["POST"]),
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
    ]
    hot = {("POST", "/v1/completions"): completions, ("POST", "/v1/chat/completions"): chat_completions}
    return FastPathApp(routes=routes, hot=hot)
