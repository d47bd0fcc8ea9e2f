"""The policy endpoint's sampler on the tinker backend: a Tinker sampling client and the base
model's own tokenizer and chat template.

The tokenizer is loaded with ``transformers`` from the base model's name or directory (the SDK's
``get_tokenizer`` is unreliable across engines and versions). Each request is one
``sample_async`` call for all ``n`` completions, so concurrent requests are served
concurrently. Stop strings are applied here, on the decoded text, and the engine is asked to
stop only at the end-of-turn token: engines differ in how they match stop strings, and this way
every completion's token ids, logprobs and text agree. ``guided_choice`` cannot be honoured by
Tinker's sampler and is refused.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

import anyio

from hermes_rl_mcp.trainer.policy_server import SamplerUnavailable, SamplingRefused, SamplingRequest
from hermes_rl_mcp.trainer.sampling import Generation
from hermes_rl_mcp.trainer.tokenizer import ChatTemplateError

GUIDED_CHOICE_REFUSAL = (
    "guided_choice is not supported on the tinker backend: Tinker's sampler cannot constrain output "
    "to a list of strings. Score free-form answers instead, or train this environment on the local backend"
)


def load_tokenizer(base_model: str) -> Any:
    """The base model's tokenizer, from a local directory or the hub cache."""
    # transformers warns at import that it found no PyTorch: the trainer needs only the tokenizer.
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(base_model)


def cut_at_stop(tokenizer: Any, token_ids: list[int], logprobs: list[float], stops: Sequence[str]) -> tuple[list[int], list[float], bool]:
    """The completion up to and including the token that completes the first stop string."""
    if not stops:
        return token_ids, logprobs, False
    for end in range(1, len(token_ids) + 1):
        text = tokenizer.decode(token_ids[:end], skip_special_tokens=True)
        if any(stop in text for stop in stops):
            return token_ids[:end], logprobs[:end], True
    return token_ids, logprobs, False


class TinkerPolicy:
    """A ``Sampler`` over a Tinker sampling client; the trainer publishes a new client per step."""

    def __init__(
        self, sampling_client: Any, tokenizer: Any, *, model_name: str, default_temperature: float, timeout: float
    ) -> None:
        self.client = sampling_client
        self.tokenizer = tokenizer
        self.model_name = model_name
        self.default_temperature = default_temperature
        self.timeout = timeout
        self.step = 0
        self.last_request = time.monotonic()
        end = tokenizer.eos_token_id
        self.stop_token_ids = [end] if end is not None else []

    def publish(self, sampling_client: Any, step: int) -> None:
        self.client, self.step = sampling_client, step

    def encode_text(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def encode_chat(self, messages: Sequence[dict[str, Any]]) -> list[int]:
        plain = [{"role": m.get("role"), "content": m.get("content") or ""} for m in messages]
        try:
            ids = self.tokenizer.apply_chat_template(plain, add_generation_prompt=True, tokenize=True)
        except Exception as exc:  # noqa: BLE001 - jinja and tokenizer errors alike mean a bad conversation
            raise ChatTemplateError(f"the base model's chat template rejected the messages: {exc}") from None
        return list(ids["input_ids"] if isinstance(ids, dict) else ids)

    def decode(self, token_ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(token_ids), skip_special_tokens=True)

    def token_text(self, token_id: int) -> str:
        return self.tokenizer.decode([token_id])

    async def sample(self, req: SamplingRequest, prompt_ids: list[int]) -> list[Generation]:
        if req.guided_choice is not None:
            raise SamplingRefused(GUIDED_CHOICE_REFUSAL)
        from tinker import types

        self.last_request = time.monotonic()
        client = self.client  # one snapshot of the weights for the whole request
        params = types.SamplingParams(
            max_tokens=req.new_tokens(),
            temperature=self.default_temperature if req.temperature is None else req.temperature,
            top_p=req.top_p,
            seed=req.seed,
            stop=self.stop_token_ids or None,
        )
        try:
            with anyio.fail_after(self.timeout):
                response = await client.sample_async(
                    prompt=types.ModelInput.from_ints(prompt_ids), num_samples=req.n, sampling_params=params
                )
        except TimeoutError:
            raise SamplerUnavailable(f"the Tinker engine did not answer a sampling request within {self.timeout:g} s") from None
        generations = []
        for sequence in response.sequences:
            tokens = [int(t) for t in sequence.tokens]
            logprobs = [float(lp) for lp in (sequence.logprobs or [0.0] * len(tokens))]
            tokens, logprobs, stopped = cut_at_stop(self.tokenizer, tokens, logprobs, req.stop_list())
            ended = stopped or sequence.stop_reason == "stop" or bool(tokens and tokens[-1] in self.stop_token_ids)
            generations.append(Generation(token_ids=tokens, logprobs=logprobs, finish_reason="stop" if ended else "length"))
        return generations
