"""Asks an OpenAI-compatible policy endpoint for completions, with token ids and logprobs.

The endpoint returns the prompt's token ids and each choice's token ids and logprobs (see the
policy server contract), so environments build scored groups without ever tokenizing.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
from pydantic import BaseModel, ValidationError

from hermes_rl_mcp.errors import HermesRLError
from hermes_rl_mcp.sdk.env_types import PROMPT_LOGPROB, PROMPT_MASK, PURPOSE_HEADER, APIServerConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.http_json import HTTPJSONClient, HTTPJSONError, JSONResponse


class PolicyError(HermesRLError, RuntimeError):
    """The policy endpoint failed or answered something that breaks the contract."""


class Completion(BaseModel):
    text: str
    token_ids: list[int]
    logprobs: list[float]
    finish_reason: str


class CompletionGroup(BaseModel):
    """The ``n`` completions of one request, all sharing one prompt."""

    prompt_token_ids: list[int]
    completions: list[Completion]
    # sampling settings the trainer must know to score these tokens as they were sampled
    generation_params: dict[str, Any] = {}


def sequence_from(prompt_token_ids: Sequence[int], completion: Completion) -> tuple[list[int], list[int], list[float]]:
    """tokens, masks and inference logprobs of one prompt + completion."""
    tokens = list(prompt_token_ids) + list(completion.token_ids)
    masks = [PROMPT_MASK] * len(prompt_token_ids) + list(completion.token_ids)
    logprobs = [PROMPT_LOGPROB] * len(prompt_token_ids) + list(completion.logprobs)
    return tokens, masks, logprobs


def scored_group(group: CompletionGroup, scores: Sequence[float], messages: list[Any] | None = None) -> ScoredDataGroup:
    """The wire form of a scored group built from one request's completions."""
    if len(scores) != len(group.completions):
        raise ValueError(f"{len(scores)} scores for {len(group.completions)} completions")
    out: ScoredDataGroup = {"tokens": [], "masks": [], "inference_logprobs": [], "scores": [float(s) for s in scores]}
    for completion in group.completions:
        tokens, masks, logprobs = sequence_from(group.prompt_token_ids, completion)
        out["tokens"].append(tokens)
        out["masks"].append(masks)
        out["inference_logprobs"].append(logprobs)
    if messages is not None:
        out["messages"] = messages
    if group.generation_params:
        out["generation_params"] = dict(group.generation_params)
    return out


_evaluating = contextvars.ContextVar("evaluating", default=False)


@contextlib.contextmanager
def evaluating() -> Iterator[None]:
    """Policy requests made inside (and in tasks started inside) are marked as evaluation."""
    token = _evaluating.set(True)
    try:
        yield
    finally:
        _evaluating.reset(token)


def is_evaluating() -> bool:
    """Whether the current task is inside ``evaluating()``."""
    return _evaluating.get()


class PolicyClient:
    """Async client over one or more policy endpoints (requests rotate between them)."""

    def __init__(self, servers: Sequence[APIServerConfig], *, temperature: float = 1.0) -> None:
        usable = [s for s in servers if s.base_url]
        if not usable:
            raise PolicyError("no policy endpoint configured: set openai.base_url (or run.policy_url)")
        self.servers = usable
        self.temperature = temperature
        self._rotation = itertools.cycle(range(len(usable)))
        self._clients: dict[int, HTTPJSONClient | httpx.AsyncClient] = {}

    def _client(self) -> tuple[APIServerConfig, HTTPJSONClient | httpx.AsyncClient]:
        index = next(self._rotation)
        server = self.servers[index]
        client = self._clients.get(index)
        if client is None:
            headers = {"Authorization": f"Bearer {server.api_key}"} if server.api_key else {}
            base_url = str(server.base_url).rstrip("/") + "/"
            connections = max(1, min(server.num_max_requests_at_once, 64))
            if base_url.startswith("http://"):
                # plain HTTP (a local policy server): the lean keep-alive client, see http_json
                client = HTTPJSONClient(base_url, headers=headers, timeout=server.timeout, max_connections=connections)
            else:
                client = httpx.AsyncClient(
                    base_url=base_url, headers=headers, timeout=server.timeout, limits=httpx.Limits(max_connections=connections)
                )
            self._clients[index] = client
        return server, client

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        server, client = self._client()
        body = {"model": server.model_name, **body}
        response: JSONResponse | httpx.Response
        headers = {PURPOSE_HEADER: "evaluation"} if is_evaluating() else None
        try:
            if isinstance(client, HTTPJSONClient):
                response = await client.post_json(path, body, headers=headers)
            else:
                response = await client.post(path, json=body, headers=headers)
        except (httpx.HTTPError, HTTPJSONError) as exc:
            raise PolicyError(f"policy endpoint {server.base_url} unreachable: {exc!r}") from exc
        if response.status_code != 200:
            raise PolicyError(f"policy endpoint {server.base_url.rstrip('/')}/{path} answered {response.status_code}: {response.text[:300]}")
        try:
            return response.json()
        except ValueError as exc:
            raise PolicyError(f"policy endpoint {server.base_url.rstrip('/')}/{path} answered non-JSON") from exc

    def _sampling(
        self, n: int, max_tokens: int, temperature: float | None, stop: list[str] | None, guided_choice: Sequence[str] | None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "n": n,
            "max_tokens": max_tokens,
            "temperature": self.temperature if temperature is None else temperature,
            "logprobs": True,
        }
        if stop:
            body["stop"] = stop
        if guided_choice is not None:
            body["guided_choice"] = list(guided_choice)
        return body

    async def chat(
        self,
        messages: list[dict[str, str]],
        *,
        n: int = 1,
        max_tokens: int = 16,
        temperature: float | None = None,
        stop: list[str] | None = None,
        guided_choice: Sequence[str] | None = None,
    ) -> CompletionGroup:
        """``n`` assistant replies to ``messages``; with ``guided_choice``, each reply is one of
        those strings (constrained decoding)."""
        body = {"messages": messages, **self._sampling(n, max_tokens, temperature, stop, guided_choice)}
        data = await self._post("chat/completions", body)
        return self._checked(self._chat_group(data), n, guided_choice)

    def _chat_group(self, data: dict[str, Any]) -> CompletionGroup:
        try:
            completions = [
                Completion(
                    text=choice["message"]["content"] or "",
                    token_ids=choice["token_ids"],
                    logprobs=[entry["logprob"] for entry in choice["logprobs"]["content"]],
                    finish_reason=choice.get("finish_reason") or "stop",
                )
                for choice in data["choices"]
            ]
            return CompletionGroup(prompt_token_ids=data["prompt_token_ids"], completions=completions)
        except (KeyError, TypeError, ValidationError) as exc:
            raise PolicyError(f"chat completion lacks token ids or logprobs: {exc!r}") from exc

    async def complete(
        self,
        prompt: str,
        *,
        n: int = 1,
        max_tokens: int = 16,
        temperature: float | None = None,
        stop: list[str] | None = None,
        guided_choice: Sequence[str] | None = None,
    ) -> CompletionGroup:
        """``n`` text completions of ``prompt``; ``guided_choice`` as for ``chat``."""
        body = {"prompt": prompt, **self._sampling(n, max_tokens, temperature, stop, guided_choice)}
        data = await self._post("completions", body)
        return self._checked(self._text_group(data), n, guided_choice)

    def _text_group(self, data: dict[str, Any]) -> CompletionGroup:
        try:
            completions = [
                Completion(
                    text=choice["text"],
                    token_ids=choice["token_ids"],
                    logprobs=choice["logprobs"]["token_logprobs"],
                    finish_reason=choice.get("finish_reason") or "stop",
                )
                for choice in data["choices"]
            ]
            return CompletionGroup(prompt_token_ids=data["prompt_token_ids"], completions=completions)
        except (KeyError, TypeError, ValidationError) as exc:
            raise PolicyError(f"text completion lacks token ids or logprobs: {exc!r}") from exc

    def _checked(self, group: CompletionGroup, n: int, guided_choice: Sequence[str] | None) -> CompletionGroup:
        if len(group.completions) != n:
            raise PolicyError(f"asked for {n} completions, got {len(group.completions)}")
        for completion in group.completions:
            if len(completion.token_ids) != len(completion.logprobs):
                raise PolicyError(
                    f"{len(completion.token_ids)} token ids but {len(completion.logprobs)} logprobs in a completion"
                )
        if guided_choice is not None:
            allowed = set(guided_choice)
            for completion in group.completions:
                cut_off = completion.finish_reason == "length"
                if completion.text not in allowed and not (cut_off and any(c.startswith(completion.text) for c in allowed)):
                    # a trainer told the group was constrained would score it under the wrong mask
                    raise PolicyError(
                        f"the policy endpoint ignored guided_choice: it answered {completion.text[:40]!r}, "
                        "which is none of the allowed strings"
                    )
            group.generation_params = {"guided_choice": list(guided_choice)}
        return group

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()
