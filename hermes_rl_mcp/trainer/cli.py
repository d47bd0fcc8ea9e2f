"""``hermes-rl-mcp trainer --config run.yaml``: the local CPU trainer and policy server."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import NoReturn


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hermes-rl-mcp trainer",
        description="Train the local policy on batches from the trajectory API and serve it over an "
        "OpenAI-compatible endpoint on 127.0.0.1.",
    )
    parser.add_argument("--config", type=Path, help="the run YAML (sections run, env, openai, trainer)")
    parser.add_argument("--port", type=int, help="policy server port (overrides trainer.port; 0 picks a free one)")
    return parser


def main(argv: list[str] | None = None) -> int:
    from hermes_rl_mcp.runs.lifeline import watch_supervisor

    watch_supervisor()  # under a supervisor, end with it (and end the run's other processes)
    args = _parser().parse_args(argv)
    # The model's matrices are small: multi-threaded BLAS only fights the other processes of the
    # run for the cores. Set before NumPy is first imported.
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    from hermes_rl_mcp.run_document import RunDocument
    from hermes_rl_mcp.trainer.loop import TrainerError, load_run_file, run_trainer

    try:
        config = load_run_file(args.config) if args.config else RunDocument()
        if args.port is not None:
            config.trainer.port = args.port
        trainer = run_trainer(config)
    except TrainerError as exc:
        _fail(exc)
    except BaseExceptionGroup as group:  # errors raised inside the server/training task group
        fatal = _first_trainer_error(group)
        if fatal is None:
            raise
        _fail(fatal)
    except KeyboardInterrupt:
        return 130
    ended = "finished" if trainer.step >= trainer.total_steps else "stopped by signal" if trainer.stop_requested else "ended"
    print(f"hermes-rl-mcp trainer: {ended} at step {trainer.step}", file=sys.stderr)
    return 0


def _fail(error: BaseException) -> NoReturn:
    """Says why the trainer failed and exits at once: an engine that has gone away can leave the
    Tinker SDK's worker threads waiting on it, and a normal interpreter exit would wait for
    them while the run's other components fail in the trainer's place. The trainer's own
    clean-up (metrics, sockets, the learner) has run by the time the error reaches here."""
    print(f"hermes-rl-mcp trainer: {error}", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(1)


def _first_trainer_error(group: BaseExceptionGroup) -> BaseException | None:
    from hermes_rl_mcp.trainer.loop import TrainerError

    match, _ = group.split(TrainerError)
    if match is None:
        return None
    while isinstance(match, BaseExceptionGroup):
        match = match.exceptions[0]
    return match
