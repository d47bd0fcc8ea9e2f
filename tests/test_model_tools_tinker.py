"""A tinker run's saved sampler weights served by ``hermes-rl-mcp policy``, against the real
self-hosted engine: the path rl_sample, rl_test_inference and rl_evaluate take for a tinker
checkpoint. Short: one adapter, one save, a few samples."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import httpx

import tinker_engine
from hermes_rl_mcp.core.endpoints import Endpoint, serving
from hermes_rl_mcp.runs.procs import descendants


def test_saved_sampler_weights_are_served_with_token_ids(engine, engine_paths: dict, tmp_path: Path, monkeypatch) -> None:
    from hermes_rl_mcp.trainer.settings import TinkerTrainerConfig
    from hermes_rl_mcp.trainer.tinker_learner import TinkerLearner

    monkeypatch.setenv("TINKER_BASE_URL", engine.base_url)
    monkeypatch.setenv("TINKER_API_KEY", tinker_engine.API_KEY)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model_dir = engine_paths["model_dir"]
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    learner = TinkerLearner(TinkerTrainerConfig(base_model=model_dir, lora_rank=8, request_timeout=120), run_dir,
                            max_tokens=64, log=lambda message: None)

    async def save() -> None:
        await learner.start()
        await learner.checkpoint(0, "final")

    anyio.run(save)
    try:
        record = json.loads((run_dir / "checkpoints.jsonl").read_text().splitlines()[-1])
        assert record["sampler_path"].startswith("tinker://")
        endpoint = Endpoint(name="run r step 0", kind="checkpoint", model=model_dir, backend="tinker",
                            checkpoint=record["sampler_path"], run_id="r", step=0)
        engine_processes = {p.pid for p in descendants(os.getpid())}
        with serving(endpoint, tmp_path) as served:
            body = {"messages": [{"role": "user", "content": "Say hi."}], "n": 2, "max_tokens": 6, "temperature": 0}
            answer = httpx.post(f"{served.base_url}/chat/completions", json=body, timeout=120).json()
        assert answer["model"] == model_dir and answer["prompt_token_ids"]
        assert len(answer["choices"]) == 2
        for choice in answer["choices"]:
            assert 1 <= len(choice["token_ids"]) <= 6 and len(choice["logprobs"]["content"]) == len(choice["token_ids"])
        assert answer["choices"][0]["token_ids"] == answer["choices"][1]["token_ids"]  # greedy
        assert {p.pid for p in descendants(os.getpid())} <= engine_processes, "the policy server outlived its use"
    finally:
        anyio.run(learner.close)
