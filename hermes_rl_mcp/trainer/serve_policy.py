"""``hermes-rl-mcp policy``: serve one fixed policy over the OpenAI-compatible policy endpoint.

What a trainer serves while it trains, without the training: the local policy as initialised
(``--init``), a local checkpoint's saved parameters (``--checkpoint``), or a tinker run's saved
sampler weights (``--tinker-sampler tinker://...``). Used to try an environment before
training, to sample a trained policy and to evaluate it. Listens on 127.0.0.1 only; the port
it took is printed to stderr, and ``/health`` answers once the policy is loaded.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hermes-rl-mcp policy", description="Serve one fixed policy on 127.0.0.1.")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--init", action="store_true", help="the local policy as a run initialises it")
    source.add_argument("--checkpoint", type=Path, help="a local checkpoint archive (checkpoints/step_<n>.npz)")
    source.add_argument("--tinker-sampler", help="a tinker run's saved sampler weights (tinker://...)")
    parser.add_argument("--base-model", help="with --tinker-sampler: the base model whose tokenizer to use")
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
        model, step = loaded.model, loaded.step
    else:
        model, step = PolicyModel.initialise(CharTokenizer(), hidden_size=args.hidden_size, seed=args.seed), 0
    return PolicyHolder(model=model, step=step, default_temperature=args.temperature, rng=np.random.default_rng(args.seed + 1))


def _tinker_sampler(args: argparse.Namespace) -> Any:
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
    return TinkerPolicy(
        client, load_tokenizer(args.base_model), model_name=args.base_model, default_temperature=args.temperature, timeout=300.0
    )


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")  # a small model: extra BLAS threads only compete for cores
    import uvicorn

    from hermes_rl_mcp.trainer.policy_server import build_app

    try:
        sampler = _tinker_sampler(args) if args.tinker_sampler else _local_sampler(args)
    except (OSError, ValueError, KeyError) as exc:
        print(f"hermes-rl-mcp policy: cannot load the policy: {exc}", file=sys.stderr)
        return 1
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", args.port))
    except OSError as exc:
        print(f"hermes-rl-mcp policy: cannot listen on 127.0.0.1:{args.port}: {exc.strerror}", file=sys.stderr)
        return 1
    print(f"hermes-rl-mcp policy: serving step {sampler.step} on http://127.0.0.1:{sock.getsockname()[1]}/v1", file=sys.stderr, flush=True)
    server = uvicorn.Server(uvicorn.Config(build_app(sampler), log_level="warning", access_log=False, lifespan="off"))
    signal.signal(signal.SIGTERM, lambda *_: setattr(server, "should_exit", True))
    server.run(sockets=[sock])
    return 0
