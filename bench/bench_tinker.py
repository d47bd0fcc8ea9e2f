"""The tinker backend's loop against a synchronous loop, on the same self-hosted engine.

    python bench/bench_tinker.py [--steps 20] [--warmup 3] [--ahead 3]

Starts SkyRL tx on 127.0.0.1 (the tests' engine: tests/engine/, the tiny Qwen3 built offline),
then trains the same environment (tests/tinker_envs/emit_text.py), model, LoRA rank, batch
(4 groups of 8) and learning rate twice:

* **the project's loop**: a real run as the MCP server starts one (trajectory API, environment
  process and trainer); rollouts for the next steps are sampled while the engine trains, up to
  ``env.max_batches_offpolicy`` 3 batches ahead (the hosted profile's value; the SDK's default
  is 1, for the local policy, and the test environment itself asks for 1);
* **a synchronous loop** in the shape of tinker-cookbook's ``rl_loop`` recipe, in this process:
  sample the batch's groups, score them, build the same datums, forward_backward, optim_step,
  save sampler weights and make a new sampling client, one after the other.

It prints steps per minute of each (after ``--warmup`` steps, which include the engine's
compiles), their ratio, and where a step's time goes. Needs the ``tinker`` extra.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import tinker_engine  # noqa: E402

from hermes_rl_mcp.trainer.datums import training_sequences  # noqa: E402

GROUPS, GROUP_SIZE, MAX_TOKENS, LEARNING_RATE, RANK = 4, 8, 8, 0.02, 8
PROMPT = [{"role": "user", "content": "Write # many times."}]


def share_of_target(text: str) -> float:
    return text.count("#") / len(text) if text else 0.0


def project_loop(engine, model_dir: str, steps: int, warmup: int, work: Path, ahead: int = 3) -> dict:
    """A real run on the tinker backend; step times from metrics.jsonl."""
    from hermes_rl_mcp.core.control import ControlPlane
    from hermes_rl_mcp.runs import TERMINAL_STATES, check_status, start_run, stop_run

    profile = tinker_engine.write_profile(work / "tinker.yaml", model_dir)
    os.environ.update(tinker_engine.server_environment(engine, profile, work / "state"))
    control = ControlPlane()
    control.select_environment("emit_text")
    edits = {"run.backend": "tinker", "trainer.learning_rate": LEARNING_RATE, "trainer.batch_size": GROUPS * GROUP_SIZE,
             "env.total_steps": steps, "env.steps_per_eval": steps, "env.group_size": GROUP_SIZE,
             "env.completion_tokens": MAX_TOKENS, "env.max_batches_offpolicy": ahead}
    for field, value in edits.items():
        control.edit_config(field, value)
    started = start_run(control.run_document(), state=control.state_dir)
    try:
        while (status := check_status(started.run_id, state=control.state_dir)).status not in TERMINAL_STATES:
            time.sleep(0.5)
    finally:
        stop_run(started.run_id, state=control.state_dir)
    assert status.status == "completed", status.reason
    rows = [json.loads(line) for line in (Path(started.run_dir) / "metrics.jsonl").read_text().splitlines()]
    rows = [r for r in rows if "time/forward_backward" in r]
    timed = rows[warmup:]
    minutes = (timed[-1]["time"] - rows[warmup - 1]["time"]) / 60
    return {
        "steps_per_minute": len(timed) / minutes,
        "split": {name: statistics.mean(r[key] for r in timed) for name, key in (
            ("waiting for rollouts", "train/batch_wait_time"), ("forward_backward", "time/forward_backward"),
            ("optim_step", "time/optim_step"), ("weight sync", "time/weight_sync"))},
        "reward": [round(r["reward/mean"], 3) for r in rows],
    }


async def synchronous_loop(engine, model_dir: str, steps: int, warmup: int) -> dict:
    """Sample, score, train, new sampler: one after the other, as the cookbook's rl_loop does."""
    import tinker
    from tinker import types

    from hermes_rl_mcp.trainer.tinker_policy import load_tokenizer

    tokenizer = load_tokenizer(model_dir)
    prompt = list(tokenizer.apply_chat_template(PROMPT, add_generation_prompt=True, tokenize=True))
    service = tinker.ServiceClient(base_url=engine.base_url, api_key=tinker_engine.API_KEY)
    training = await service.create_lora_training_client_async(base_model=model_dir, rank=RANK)
    sampler = service.create_sampling_client(model_path=training.save_weights_for_sampler(name="sync-0").result().path)
    params = types.SamplingParams(max_tokens=MAX_TOKENS, temperature=1.0, stop=[tokenizer.eos_token_id])
    adam = types.AdamParams(learning_rate=LEARNING_RATE, beta1=0.9, beta2=0.95, eps=1e-8)
    split: dict[str, list[float]] = {"sampling": [], "forward_backward": [], "optim_step": [], "weight sync": []}
    times: list[float] = []
    for step in range(steps):
        began = time.perf_counter()
        responses = await asyncio.gather(*(
            sampler.sample_async(prompt=types.ModelInput.from_ints(prompt), num_samples=GROUP_SIZE, sampling_params=params)
            for _ in range(GROUPS)
        ))
        groups = []
        for response in responses:
            completions = [list(s.tokens) for s in response.sequences]
            groups.append({
                "tokens": [prompt + c for c in completions],
                "masks": [[-100] * len(prompt) + c for c in completions],
                "inference_logprobs": [[1.0] * len(prompt) + list(s.logprobs) for s in response.sequences],
                "scores": [share_of_target(tokenizer.decode(c, skip_special_tokens=True)) for c in completions],
            })
        sampled = time.perf_counter()
        data = [types.Datum(model_input=types.ModelInput.from_ints(s.input_tokens_T), loss_fn_inputs={
            "target_tokens": s.target_tokens_T, "logprobs": s.sampling_logprobs_T, "advantages": s.advantages_T})
            for s in training_sequences(groups)]
        await (await training.forward_backward_async(data, loss_fn="importance_sampling")).result_async()
        backward = time.perf_counter()
        await (await training.optim_step_async(adam)).result_async()
        optimised = time.perf_counter()
        sampler = service.create_sampling_client(model_path=training.save_weights_for_sampler(name=f"sync-{step + 1}").result().path)
        synced = time.perf_counter()
        if step >= warmup:
            times.append(synced - began)
            for name, value in zip(split, (sampled - began, backward - sampled, optimised - backward, synced - optimised)):
                split[name].append(value)
    return {"steps_per_minute": 60 / statistics.mean(times), "split": {k: statistics.mean(v) for k, v in split.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--ahead", type=int, default=3, help="env.max_batches_offpolicy of the project's loop")
    args = parser.parse_args()
    paths = tinker_engine.engine_paths()
    with tempfile.TemporaryDirectory() as tmp, tinker_engine.start(paths) as engine:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        ours = project_loop(engine, paths["model_dir"], args.steps, args.warmup, Path(tmp), args.ahead)
        sync = asyncio.run(synchronous_loop(engine, paths["model_dir"], args.steps, args.warmup))
    print(f"batch: {GROUPS} groups x {GROUP_SIZE} completions x {MAX_TOKENS} tokens, {args.steps} steps "
          f"({args.warmup} warm-up steps not timed), LoRA rank {RANK}, lr {LEARNING_RATE}; "
          f"project loop up to {args.ahead} batches ahead")
    for name, result in (("project loop", ours), ("synchronous loop", sync)):
        split = ", ".join(f"{part} {seconds:.2f} s" for part, seconds in result["split"].items())
        print(f"{name:<17} {result['steps_per_minute']:6.1f} steps/min; per step: {split}")
    print(f"ratio (project / synchronous, steps per minute): {ours['steps_per_minute'] / sync['steps_per_minute']:.2f}x "
          "(target >= 1.5x)")
    print(f"project loop reward/mean by step: {ours['reward']}")


if __name__ == "__main__":
    main()
