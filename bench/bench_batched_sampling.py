"""What sampling requests together saves: the local policy's cost per request, alone and batched.

    python bench/bench_batched_sampling.py [--requests 32] [--rounds 20]

The requests are a multi-turn environment's: ``--requests`` different corridor conversations
(one to four turns so far), each asking for one reply of at most three tokens. The baseline
samples them one after another (``generate``, as the policy server did per request); the other
samples them in one ``generate_batch``, as the server now does with requests that arrive
together. Printed: milliseconds per request for each and the ratio, and the time to read one
prompt (``prompt_view``), which every request pays once whatever the batch.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from hermes_rl_mcp.trainer.model import PolicyModel
from hermes_rl_mcp.trainer.sampling import SampleJob, generate, generate_batch
from hermes_rl_mcp.trainer.tokenizer import CharTokenizer


def conversations(count: int, rng: np.random.Generator) -> list[list[dict[str, str]]]:
    out = []
    for _ in range(count):
        goal = int(rng.integers(6))
        messages = []
        for _turn in range(int(rng.integers(1, 5))):
            if messages:
                messages.append({"role": "assistant", "content": str(rng.choice(["L", "R"]))})
            messages.append({"role": "user", "content": f"You are at {int(rng.integers(6))}, the goal is at {goal}. Move L or R."})
        out.append(messages)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    tok = CharTokenizer()
    model = PolicyModel.initialise(tok)
    prompts = [tok.generation_prompt(m) for m in conversations(args.requests, np.random.default_rng(0))]
    rng = np.random.default_rng(1)

    def alone() -> None:
        for prompt in prompts:
            generate(model, prompt, n=1, max_tokens=3, temperature=1.0, rng=rng)

    def together() -> None:
        generate_batch(model, [SampleJob(prompt, 1, 3, rng) for prompt in prompts], temperature=1.0)

    def views() -> None:
        for prompt in prompts:
            model.prompt_view(prompt)

    best = {}
    for name, work in (("alone", alone), ("together", together), ("views", views)):
        work()  # warm up
        times = []
        for _ in range(args.rounds):
            started = time.perf_counter()
            work()
            times.append(time.perf_counter() - started)
        best[name] = min(times) / len(prompts) * 1000
    print(f"{len(prompts)} corridor requests (n=1, at most 3 tokens), best of {args.rounds} rounds, ms per request:")
    print(f"   one at a time   {best['alone']:7.3f}")
    print(f"   in one batch    {best['together']:7.3f}")
    print(f"   ratio batch/one-at-a-time: {best['together'] / best['alone']:.2f}x")
    print(f"   reading one prompt (prompt_view): {best['views']:.3f} ms")


if __name__ == "__main__":
    main()
