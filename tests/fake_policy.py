"""A tiny real policy for the runtime tests: an OpenAI-compatible server over a seeded bigram
character model. It samples every token from its distribution and reports that token's true
logprob, so tests can recompute each logprob from the model and check the runtime carried it
through. ``alphabet`` restricts what it can emit (e.g. digits and '-'), so groups come out with
differing scores often enough to exercise the keep/drop paths; nothing is hard-coded. It honours
``guided_choice`` as a constrained-decoding server does (``honour_guided_choice=False`` plays an
endpoint that ignores it).
"""

from __future__ import annotations

import math
import random
import socket
import threading
import time
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

PRINTABLE = [chr(c) for c in range(32, 127)]
SPECIALS = ["<|user|>", "<|assistant|>", "<|end|>"]
VOCAB = PRINTABLE + SPECIALS
USER, ASSISTANT, END = (len(PRINTABLE) + i for i in range(3))


def encode(text: str) -> list[int]:
    return [PRINTABLE.index(ch) for ch in text]


def decode(ids: list[int]) -> str:
    return "".join(VOCAB[i] for i in ids if i < len(PRINTABLE))


class BigramModel:
    """p(next | previous token): seeded random logits over ``alphabet`` plus the end token."""

    def __init__(self, alphabet: str, seed: int = 0, end_bias: float = 0.0) -> None:
        rng = random.Random(seed)
        # The trainer step /health reports, as the project's policy server does; None: no step
        # reported, as an endpoint that is not a trainer's.
        self.served_step: int | None = None
        self.allowed = [PRINTABLE.index(ch) for ch in alphabet] + [END]
        self.logits = {
            prev: {tok: rng.gauss(0.0, 1.0) + (end_bias if tok == END else 0.0) for tok in self.allowed}
            for prev in range(len(VOCAB))
        }

    def distribution(self, prev: int, temperature: float, allowed: set[int] | None = None) -> dict[int, float]:
        """Log-probabilities of the next token at ``temperature`` (0 = greedy, one-hot), over
        ``allowed`` tokens only when given."""
        row = self.logits[prev]
        if allowed is not None:
            row = {tok: value for tok, value in row.items() if tok in allowed}
        if temperature <= 0:
            best = max(row, key=row.__getitem__)
            return {tok: (0.0 if tok == best else -math.inf) for tok in row}
        scaled = {tok: value / temperature for tok, value in row.items()}
        top = max(scaled.values())
        norm = top + math.log(sum(math.exp(v - top) for v in scaled.values()))
        return {tok: v - norm for tok, v in scaled.items()}

    def sample(
        self, prompt: list[int], max_tokens: int, temperature: float, rng: random.Random, choices: list[str] | None = None
    ) -> tuple[list[int], list[float], str]:
        """One completion; with ``choices`` (guided_choice), renormalised over the tokens that
        keep it on one of those strings, as a constrained-decoding server reports it."""
        ids: list[int] = []
        logprobs: list[float] = []
        prev = prompt[-1]
        for _ in range(max_tokens):
            dist = self.distribution(prev, temperature, None if choices is None else next_tokens(decode(ids), choices))
            tokens = list(dist)
            weights = [math.exp(dist[t]) for t in tokens]
            tok = rng.choices(tokens, weights)[0]
            ids.append(tok)
            logprobs.append(dist[tok])
            if tok == END:
                return ids, logprobs, "stop"
            prev = tok
        return ids, logprobs, "length"


def next_tokens(text: str, choices: list[str]) -> set[int]:
    """Tokens that keep ``text`` on one of ``choices`` (the end token where it is complete)."""
    allowed = {END} if text in choices else set()
    return allowed | {PRINTABLE.index(c[len(text)]) for c in choices if c.startswith(text) and len(c) > len(text)}


def render_chat(messages: list[dict[str, str]], consistent: bool = True) -> list[int]:
    ids: list[int] = []
    for i, message in enumerate(messages):
        ids.append(ASSISTANT if message["role"] == "assistant" else USER)
        content = message["content"]
        if not consistent and message["role"] == "assistant" and i < len(messages) - 1:
            content = " " + content  # a template that rewrites history: breaks prefix-consistency
        ids.extend(encode(content))
        ids.append(END)
    return ids + [ASSISTANT]


def create_app(model: BigramModel, *, seed: int = 0, consistent_template: bool = True, honour_guided_choice: bool = True) -> Starlette:
    rng = random.Random(seed)

    def sample_choices(prompt_ids: list[int], body: dict[str, Any]) -> list[tuple[list[int], list[float], str]]:
        n = int(body.get("n", 1))
        temperature = float(body.get("temperature", 1.0))
        max_tokens = int(body.get("max_tokens", 16))
        choices = body.get("guided_choice") if honour_guided_choice else None
        return [model.sample(prompt_ids, max_tokens, temperature, rng, choices) for _ in range(n)]

    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        if not isinstance(body.get("messages"), list):
            return JSONResponse({"error": "messages must be a list"}, status_code=400)
        prompt_ids = render_chat(body["messages"], consistent_template)
        choices = []
        for index, (ids, logprobs, finish) in enumerate(sample_choices(prompt_ids, body)):
            choices.append(
                {
                    "index": index,
                    "message": {"role": "assistant", "content": decode(ids)},
                    "finish_reason": finish,
                    "token_ids": ids,
                    "logprobs": {"content": [{"token": VOCAB[t], "logprob": lp} for t, lp in zip(ids, logprobs)]},
                }
            )
        return JSONResponse(
            {"id": "chat-1", "object": "chat.completion", "created": int(time.time()), "model": body.get("model"), "prompt_token_ids": prompt_ids, "choices": choices}
        )

    async def completions(request: Request) -> JSONResponse:
        body = await request.json()
        prompt_ids = encode(str(body.get("prompt", "")))
        choices = []
        for index, (ids, logprobs, finish) in enumerate(sample_choices(prompt_ids, body)):
            choices.append(
                {
                    "index": index,
                    "text": decode(ids),
                    "finish_reason": finish,
                    "token_ids": ids,
                    "logprobs": {"tokens": [VOCAB[t] for t in ids], "token_logprobs": logprobs},
                }
            )
        return JSONResponse(
            {"id": "cmpl-1", "object": "text_completion", "created": int(time.time()), "model": body.get("model"), "prompt_token_ids": prompt_ids, "choices": choices}
        )

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"} if model.served_step is None else {"status": "ok", "step": model.served_step})

    return Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/completions", completions, methods=["POST"]),
            Route("/health", health),
        ]
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServerThread:
    """Runs an ASGI app with uvicorn on a free loopback port in a background thread."""

    def __init__(self, app: Starlette) -> None:
        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("test server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"
