"""Resume on the tinker backend against the real self-hosted engine (SkyRL tx on CPU, tiny Qwen3):
a learner started from another's saved training state samples exactly what that learner had
learned, not the base model. Brief on purpose: two adapters, one optimiser step."""

from __future__ import annotations

import math
from pathlib import Path

import anyio

import tinker_engine
from hermes_rl_mcp.trainer.policy_server import SamplingRequest
from hermes_rl_mcp.trainer.settings import ResumePoint, TinkerTrainerConfig
from hermes_rl_mcp.trainer.tinker_learner import TinkerLearner

PROMPT = [{"role": "user", "content": "Say yes."}]
PROBE = SamplingRequest(n=2, max_tokens=6, temperature=1.0, seed=11)


async def probe(learner: TinkerLearner) -> list[tuple[list[int], list[float]]]:
    prompt_ids = learner.policy.encode_chat(PROMPT)
    return [(g.token_ids, g.logprobs) for g in await learner.policy.sample(PROBE, prompt_ids)]


async def one_step(learner: TinkerLearner) -> None:
    """One optimiser step on a group of the learner's own samples, scored by length."""
    prompt_ids = learner.policy.encode_chat(PROMPT)
    samples = await learner.policy.sample(SamplingRequest(n=4, max_tokens=6, temperature=1.0, seed=5), prompt_ids)
    group = {
        "tokens": [prompt_ids + s.token_ids for s in samples],
        "masks": [[-100] * len(prompt_ids) + s.token_ids for s in samples],
        "inference_logprobs": [[1.0] * len(prompt_ids) + s.logprobs for s in samples],
        "scores": [float(i) for i in range(len(samples))],
    }
    await learner.step([group])
    await learner.publish(1)


def close(first: list[tuple[list[int], list[float]]], second: list[tuple[list[int], list[float]]]) -> bool:
    return all(
        tokens_a == tokens_b and all(math.isclose(a, b, abs_tol=1e-3) for a, b in zip(logprobs_a, logprobs_b))
        for (tokens_a, logprobs_a), (tokens_b, logprobs_b) in zip(first, second)
    )


def test_a_resumed_learner_continues_from_the_saved_training_state(engine, engine_paths: dict, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TINKER_BASE_URL", engine.base_url)
    monkeypatch.setenv("TINKER_API_KEY", tinker_engine.API_KEY)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    config = TinkerTrainerConfig(base_model=engine_paths["model_dir"], lora_rank=8, learning_rate=0.05, request_timeout=120)
    (tmp_path / "parent").mkdir()
    (tmp_path / "child").mkdir()
    parent = TinkerLearner(config, tmp_path / "parent", max_tokens=64, log=lambda message: None)

    async def scenario() -> None:
        await parent.start()
        try:
            base = await probe(parent)
            await one_step(parent)
            trained = await probe(parent)
            state = await parent.checkpoint(1, "final")
        finally:
            await parent.close()
        assert state.startswith("tinker://")
        assert not close(base, trained), "one step at this learning rate must change what the adapter samples"

        logged: list[str] = []
        child = TinkerLearner(
            config, tmp_path / "child", max_tokens=64, log=logged.append,
            resume_from=ResumePoint(run_id="r-20261201-0000-abcdef", step=1, checkpoint=state),
        )
        await child.start()
        try:
            resumed = await probe(child)
            assert child.sampler_path and child.sampler_path.endswith("step-1")
        finally:
            await child.close()
        assert close(resumed, trained), (resumed, trained)
        assert any(f"resumed from {state}" in line for line in logged)
        assert tinker_engine.adapter_status(engine, child.model_id) == "unloaded"

    anyio.run(scenario)
