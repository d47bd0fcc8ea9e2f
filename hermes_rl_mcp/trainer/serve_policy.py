"""``hermes-rl-mcp policy``: serve one fixed policy over the OpenAI-compatible policy endpoint.

What a trainer serves while it trains, without the training: the local policy as initialised
(``--init``), a local checkpoint's saved parameters (``--checkpoint``: the weights' average, as
evaluation served them, when the run kept one), or a tinker run's saved sampler weights
(``--tinker-sampler tinker://...``). Used to try an environment before training, to sample a
trained policy and to evaluate it. Listens on 127.0.0.1 only; the port it took is printed to
stderr, and ``/health`` answers once the policy is loaded.

A self-hosted engine (SkyRL tx) samples saved sampler weights only while the adapter that saved
them is loaded, and a run releases its adapter when it ends. So a tinker policy is first tried
with one short sample; if the engine refuses and the run's saved training state is known
(``--tinker-state``, ``--lora-rank``), that state is loaded into a new adapter, served, and the
adapter is released when the server stops.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

SAMPLE_TIMEOUT_S = 300.0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hermes-rl-mcp policy", description="Serve one fixed policy on 127.0.0.1.")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--init", action="store_true", help="the local policy as a run initialises it")
    source.add_argument("--checkpoint", type=Path, help="a local checkpoint archive (checkpoints/step_<n>.npz)")
    source.add_argument("--tinker-sampler", help="a tinker run's saved sampler weights (tinker://...)")
    parser.add_argument("--base-model", help="with --tinker-sampler: the base model whose tokenizer to use")
    parser.add_argument("--tinker-state", help="with --tinker-sampler: the run's saved training state at that step")
    parser.add_argument("--lora-rank", type=int, help="with --tinker-state: the run's LoRA rank")
    parser.add_argument("--step", type=int, default=0, help="with --tinker-sampler: the step the weights were saved at")
    parser.add_argument("--seed", type=int, default=0, help="with --init: the initialisation seed (trainer.seed)")
    parser.add_argument("--hidden-size", type=int, default=64, help="with --init: the model width (trainer.hidden_size)")
    parser.add_argument("--temperature", type=float, default=1.0, help="default sampling temperature")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0 picks a free one)")
    return parser


def _local_sampler(args: argparse.Namespace) -> Any:
    import numpy as np

    from hermes_rl_mcp.trainer.checkpoints import load_checkpoint
    from hermes_rl_mcp.trainer.model import PolicyModel
    from hermes_rl_mcp.trainer.policy_server import PolicyHolder
    from hermes_rl_mcp.trainer.tokenizer import CharTokenizer

    if args.checkpoint is not None:
        loaded = load_checkpoint(args.checkpoint)
        model, step = loaded.served, loaded.step
    else:
        model, step = PolicyModel.initialise(CharTokenizer(), hidden_size=args.hidden_size, seed=args.seed), 0
    return PolicyHolder(model=model, step=step, default_temperature=args.temperature, rng=np.random.default_rng(args.seed + 1))


def _tinker_sampler(args: argparse.Namespace) -> tuple[Any, Callable[[], None] | None]:
    """The policy, and what releases its adapter once serving ends (None: nothing to release)."""
    import anyio
    import tinker

    from hermes_rl_mcp.runs.tinker_backend import HOSTED_BASE_URL
    from hermes_rl_mcp.trainer.tinker_policy import TinkerPolicy, load_tokenizer

    if not args.base_model:
        raise ValueError("--tinker-sampler needs --base-model (the base model the run trained)")
    key = os.environ.get("TINKER_API_KEY", "")
    if not key:
        raise ValueError("serving tinker sampler weights needs TINKER_API_KEY in the environment")
    base_url = (os.environ.get("TINKER_BASE_URL") or "").strip().rstrip("/") or HOSTED_BASE_URL
    service = tinker.ServiceClient(base_url=base_url, api_key=key)
    client = service.create_sampling_client(model_path=args.tinker_sampler)
    policy = TinkerPolicy(
        client, load_tokenizer(args.base_model), model_name=args.base_model, default_temperature=args.temperature, timeout=SAMPLE_TIMEOUT_S
    )
    policy.publish(client, args.step)
    refused = anyio.run(_first_sample_fails, policy)
    if refused is None:
        return policy, None
    if not (args.tinker_state and args.lora_rank):
        raise ValueError(f"the engine cannot sample {args.tinker_sampler}: {refused}")
    print(f"hermes-rl-mcp policy: the engine cannot sample {args.tinker_sampler} ({refused}); "
          f"loading the run's training state {args.tinker_state} into a new adapter", file=sys.stderr, flush=True)
    return _reloaded_policy(args)


async def _first_sample_fails(policy: Any) -> str | None:
    from hermes_rl_mcp.trainer.policy_server import SamplingRequest

    try:
        await policy.sample(SamplingRequest(max_tokens=1), policy.encode_text("a"))
    except Exception as exc:  # noqa: BLE001 - the SDK raises ValueError, APIError and more for a refusal
        return str(exc)[:300] or type(exc).__name__
    return None


def _reloaded_policy(args: argparse.Namespace) -> tuple[Any, Callable[[], None]]:
    import anyio

    from hermes_rl_mcp.trainer.settings import ResumePoint, TinkerTrainerConfig
    from hermes_rl_mcp.trainer.tinker_learner import EngineError, TinkerLearner

    config = TinkerTrainerConfig(base_model=args.base_model, lora_rank=args.lora_rank, temperature=args.temperature,
                                 request_timeout=SAMPLE_TIMEOUT_S)
    learner = TinkerLearner(
        config, Path.cwd(), max_tokens=1, log=lambda message: print(f"hermes-rl-mcp policy: {message}", file=sys.stderr, flush=True),
        resume_from=ResumePoint(run_id="served", step=args.step, checkpoint=args.tinker_state),
    )
    try:
        anyio.run(learner.start)
    except EngineError as exc:
        anyio.run(learner.close)
        raise ValueError(str(exc)) from exc
    assert learner.policy is not None
    learner.policy.publish(learner.policy.client, args.step)
    return learner.policy, lambda: anyio.run(learner.close)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")  # a small model: extra BLAS threads only compete for cores
    try:
        sampler, release = _tinker_sampler(args) if args.tinker_sampler else (_local_sampler(args), None)
    except (OSError, ValueError, KeyError) as exc:
        print(f"hermes-rl-mcp policy: cannot load the policy: {exc}", file=sys.stderr)
        return 1
    try:
        return _serve(sampler, args.port)
    finally:
        if release is not None:
            release()  # the adapter loaded for this server only


def _serve(sampler: Any, port: int) -> int:
    import uvicorn

    from hermes_rl_mcp.trainer.policy_server import build_app

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        print(f"hermes-rl-mcp policy: cannot listen on 127.0.0.1:{port}: {exc.strerror}", file=sys.stderr)
        return 1
    print(f"hermes-rl-mcp policy: serving step {sampler.step} on http://127.0.0.1:{sock.getsockname()[1]}/v1", file=sys.stderr, flush=True)
    server = uvicorn.Server(uvicorn.Config(build_app(sampler), log_level="warning", access_log=False, lifespan="off"))
    signal.signal(signal.SIGTERM, lambda *_: setattr(server, "should_exit", True))
    server.run(sockets=[sock])
    return 0
