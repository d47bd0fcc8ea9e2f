"""Completions from a trained policy (rl_sample): a run's checkpoint, served for the call."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from hermes_rl_mcp.core.endpoints import Endpoint, serving
from hermes_rl_mcp.core.errors import EndpointUnavailable, InvalidCount
from hermes_rl_mcp.core.inference_models import SampledCompletion, SampleResult

MAX_N = 16
MAX_TOKENS = 512
MAX_MESSAGES = 64
REQUEST_TIMEOUT_S = 45.0


def check_request(messages: list[dict[str, str]], n: int, max_tokens: int, temperature: float) -> None:
    if not 1 <= len(messages) <= MAX_MESSAGES:
        raise InvalidCount(f"messages must hold 1 to {MAX_MESSAGES} messages, not {len(messages)}")
    if not 1 <= n <= MAX_N:
        raise InvalidCount(f"n must be from 1 to {MAX_N}, not {n}")
    if not 1 <= max_tokens <= MAX_TOKENS:
        raise InvalidCount(f"max_tokens must be from 1 to {MAX_TOKENS}, not {max_tokens}")
    if not 0 <= temperature <= 5:
        raise InvalidCount(f"temperature must be from 0 to 5, not {temperature}")


def sample(endpoint: Endpoint, messages: list[dict[str, str]], n: int, temperature: float, max_tokens: int, state_dir: Path) -> SampleResult:
    check_request(messages, n, max_tokens, temperature)
    (state_dir / "trials").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sample-", dir=state_dir / "trials") as scratch, serving(endpoint, Path(scratch)) as served:
        started = time.monotonic()
        data = _ask(served.base_url, served.model, served.api_key, messages, n, temperature, max_tokens)
        seconds = round(time.monotonic() - started, 3)
    choices = data.get("choices") or []
    return SampleResult(
        endpoint=endpoint,
        completions=[
            SampledCompletion(
                text=(choice.get("message") or {}).get("content") or "",
                finish_reason=choice.get("finish_reason") or "stop",
                tokens=len(choice.get("token_ids") or []),
            )
            for choice in choices
        ],
        prompt_tokens=int((data.get("usage") or {}).get("prompt_tokens", 0)),
        seconds=seconds,
    )


def _ask(base_url: str, model: str, key: str, messages: list[dict[str, str]], n: int, temperature: float, max_tokens: int) -> dict[str, Any]:
    import httpx

    body = {"model": model, "messages": messages, "n": n, "temperature": temperature, "max_tokens": max_tokens}
    try:
        response = httpx.post(base_url.rstrip("/") + "/chat/completions", json=body, timeout=REQUEST_TIMEOUT_S,
                              headers={"Authorization": f"Bearer {key}"})
    except httpx.HTTPError as exc:
        raise EndpointUnavailable(f"the policy endpoint did not answer: {type(exc).__name__}") from None
    if response.status_code != 200:
        raise EndpointUnavailable(f"the policy endpoint refused the request ({response.status_code}): {response.text[:300]}")
    data = response.json()
    return data if isinstance(data, dict) else {}
