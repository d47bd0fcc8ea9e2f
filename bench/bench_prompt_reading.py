"""What reading a prompt costs the local policy: ``PolicyModel._read``, uncached, per prompt.

    python bench/bench_prompt_reading.py [--rounds 5] [--baseline REV]

Every prompt the policy server samples for is read once (its view is then cached), and on a
multi-turn environment nearly every turn is a new prompt: the conversation so far, which the
replies make different for every episode. The prompts here are 300 conversations of one to five
user turns of everyday sentences, some with numbers, lists or names in brackets, and the short
replies between them. Printed: microseconds per prompt, best of ``--rounds``. With
``--baseline REV``, the same script runs on a temporary ``git worktree`` of that revision in a
subprocess first, and the ratio this code / the baseline is printed too.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from hermes_rl_mcp.trainer.model import PolicyModel  # noqa: E402
from hermes_rl_mcp.trainer.tokenizer import CharTokenizer  # noqa: E402

SENTENCES = (
    "Help me keep track of who turns up tonight. Priya just arrived. Reply OK.",
    "Now Tom is here, with his sister (the one from Leeds). Reply OK.",
    "I bought 3 apples, 2 pears and 12 eggs for 7.50 in total.",
    "Sort these by size: melon, grape, apple, cherry, plum",
    "Which of these opens first: the bakery at 7:30am or the cafe at 8am?",
    "My meeting with Ana Berg moved from Monday to Thursday at 10:30.",
    "Who arrived first?",
    "What was the second thing I asked you to remember?",
)
REPLIES = ("OK", "Got it.", "Priya", "12", "melon, apple", "Thursday")


def conversations(count: int, rng: np.random.Generator) -> list[list[dict[str, str]]]:
    out = []
    for _ in range(count):
        messages: list[dict[str, str]] = []
        for _turn in range(int(rng.integers(1, 6))):
            if messages:
                messages.append({"role": "assistant", "content": str(rng.choice(REPLIES))})
            messages.append({"role": "user", "content": " ".join(rng.choice(SENTENCES, size=int(rng.integers(1, 3))))})
        out.append(messages)
    return out


def measure(rounds: int) -> float:
    """Microseconds per prompt read, best of ``rounds``."""
    tokenizer = CharTokenizer()
    model = PolicyModel.initialise(tokenizer, seed=0)
    prompts = [np.asarray(tokenizer.generation_prompt(c), dtype=np.int64) for c in conversations(300, np.random.default_rng(0))]
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        for prompt in prompts:
            model._read(prompt)
        best = min(best, (time.perf_counter() - started) / len(prompts) * 1e6)
    return best


def baseline(revision: str, rounds: int) -> float:
    """The same figure for ``revision``, measured in a worktree of it."""
    with tempfile.TemporaryDirectory() as folder:
        tree = Path(folder) / "tree"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(tree), revision], check=True)
        try:
            script = tree / "bench" / "bench_prompt_reading.py"
            if not script.exists():  # a revision before this script: run this one against its code
                script.parent.mkdir(exist_ok=True)
                script.write_text(Path(__file__).read_text())
            env = {**os.environ, "PYTHONPATH": str(tree)}
            out = subprocess.run([sys.executable, str(script), "--rounds", str(rounds), "--figure"], env=env, check=True, capture_output=True, text=True)
            return float(out.stdout.strip().splitlines()[-1])
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline", metavar="REV", help="a git revision to measure first, for a ratio")
    parser.add_argument("--figure", action="store_true", help=argparse.SUPPRESS)  # print the number alone
    args = parser.parse_args()
    if args.figure:
        print(f"{measure(args.rounds):.3f}")
        return
    before = baseline(args.baseline, args.rounds) if args.baseline else None
    now = measure(args.rounds)
    print(f"reading one prompt (PolicyModel._read, uncached), best of {args.rounds} rounds of 300 conversations:")
    if before is not None:
        print(f"   {args.baseline}: {before:8.1f} us")
    print(f"   this code: {now:8.1f} us")
    if before is not None:
        print(f"   ratio this code / {args.baseline}: {now / before:.2f}x")


if __name__ == "__main__":
    main()
