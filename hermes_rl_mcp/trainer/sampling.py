"""Sampling from the local policy: the completions of many prompts decoded together.

Every token step is one forward pass over all the rows still generating, whatever prompt each
follows, so a batch of requests costs little more than one of them. Each request keeps its own
token budget, stop strings, constraint and random generator; rows draw from their request's
generator in the order a request sampled alone would, so what a request gets does not depend
on what it was batched with (up to float rounding in the batched matrix products).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from hermes_rl_mcp.trainer.constraints import ChoiceConstraint
from hermes_rl_mcp.trainer.model import PolicyModel
from hermes_rl_mcp.trainer.tokenizer import END, PAD


@dataclass
class Generation:
    token_ids: list[int]
    logprobs: list[float]
    finish_reason: str  # "stop" (end token or stop string) or "length"


@dataclass
class SampleJob:
    """One request's part of a batch: ``n`` completions of ``prompt``."""

    prompt: Sequence[int]
    n: int
    max_tokens: int
    rng: np.random.Generator
    stop: Sequence[str] = ()
    constraint: ChoiceConstraint | None = None
    # Tokens every completion starts with, taken as given (exploration continues a changed
    # sample from them); they count toward ``max_tokens`` and carry their logprobs.
    prefix: Sequence[int] = ()


def generate(
    model: PolicyModel,
    prompt: Sequence[int],
    *,
    n: int,
    max_tokens: int,
    temperature: float,
    rng: np.random.Generator,
    top_p: float = 1.0,
    stop: Sequence[str] = (),
    constraint: ChoiceConstraint | None = None,
) -> list[Generation]:
    """Sample ``n`` continuations of one prompt (see ``generate_batch``)."""
    job = SampleJob(prompt, n, max_tokens, rng, tuple(stop), constraint)
    return generate_batch(model, [job], temperature=temperature, top_p=top_p)[0]


def generate_batch(model: PolicyModel, jobs: Sequence[SampleJob], *, temperature: float, top_p: float = 1.0) -> list[list[Generation]]:
    """Each job's completions, sampled together, one vectorised step per token.

    Logprobs are those of the distribution actually sampled from: after the constraint's mask,
    temperature and top-p; temperature 0 is greedy decoding, whose chosen tokens have
    log-probability 0.
    """
    if not jobs:
        return []
    tok = model.tokenizer
    prompts = model.prompt_features([model.prompt_view(job.prompt) for job in jobs])
    job_of = np.repeat(np.arange(len(jobs)), [job.n for job in jobs])
    limit = np.asarray([jobs[j].max_tokens for j in job_of], dtype=np.int64)
    constrained = any(job.constraint is not None for job in jobs)
    prefix_lengths = np.asarray([len(jobs[j].prefix) for j in job_of], dtype=np.int64)
    # the parameters do not change while sampling: the copy map is the same at every step
    map_logits = model._map_logits()
    images, copy_map = map_logits.argmax(axis=1), model._copy_map(map_logits)
    total = len(job_of)
    tokens = np.full((total, int(limit.max())), PAD, dtype=np.int64)
    logps = np.zeros(tokens.shape)
    active = np.ones(total, dtype=bool)
    lengths = limit.copy()
    finish = ["length"] * total
    for t in range(tokens.shape[1]):
        active &= t < limit
        rows = np.flatnonzero(active)
        if rows.size == 0:
            break
        feats = model.features_for_rows(prompts, job_of[rows], tokens[rows, :t], images)
        allowed = None
        if constrained:
            # every constrained row so far followed its trie, so each has a mask
            allowed = np.stack([_allowed(model, jobs[job_of[row]], tokens[row, :t]) for row in rows])
        cache = model.forward(feats, temperature or 1.0, allowed, copy_map)
        if temperature == 0:
            chosen = cache.probs.argmax(axis=1)
            chosen_lp = np.zeros(rows.size)
        else:
            probs = _nucleus(cache.probs, top_p) if top_p < 1.0 else cache.probs
            cumulative = np.cumsum(probs, axis=1)
            draws = _draws(jobs, job_of[rows]) * cumulative[:, -1]
            chosen = np.minimum((cumulative < draws[:, None]).sum(axis=1), probs.shape[1] - 1)
            if top_p < 1.0:
                with np.errstate(divide="ignore"):
                    chosen_lp = np.log(probs[np.arange(rows.size), chosen])
            else:
                chosen_lp = cache.log_probs[np.arange(rows.size), chosen]
        forced = t < prefix_lengths[rows]
        if forced.any():
            given = np.asarray([jobs[job_of[row]].prefix[t] for row in rows[forced]])
            chosen[forced] = given
            chosen_lp[forced] = cache.log_probs[np.flatnonzero(forced), given]
        tokens[rows, t] = chosen
        logps[rows, t] = chosen_lp
        for row, token in zip(rows, chosen):
            stop = jobs[job_of[row]].stop
            if token == END or (stop and any(tok.decode(tokens[row, : t + 1]).endswith(s) for s in stop)):
                active[row], lengths[row], finish[row] = False, t + 1, "stop"
    out: list[list[Generation]] = [[] for _ in jobs]
    for row, j in enumerate(job_of):
        out[j].append(Generation(tokens[row, : lengths[row]].tolist(), logps[row, : lengths[row]].tolist(), finish[row]))
    return out


def _allowed(model: PolicyModel, job: SampleJob, generated: np.ndarray) -> np.ndarray:
    if job.constraint is None:
        return model.allowed
    mask = job.constraint.allowed(generated)
    assert mask is not None, "a constrained row left its trie"
    return mask


def _draws(jobs: Sequence[SampleJob], job_of_rows: np.ndarray) -> np.ndarray:
    """One uniform draw per row, each from its job's generator, in row order."""
    draws = np.empty(job_of_rows.size)
    for j in np.unique(job_of_rows):
        mine = job_of_rows == j
        draws[mine] = jobs[j].rng.random(int(mine.sum()))
    return draws


def _nucleus(probs: np.ndarray, top_p: float) -> np.ndarray:
    """Keep each row's most likely tokens up to cumulative mass ``top_p`` and renormalise."""
    order = np.argsort(-probs, axis=1)
    sorted_probs = np.take_along_axis(probs, order, axis=1)
    before = np.cumsum(sorted_probs, axis=1) - sorted_probs
    keep_sorted = before < top_p
    keep = np.zeros_like(keep_sorted)
    np.put_along_axis(keep, order, keep_sorted, axis=1)
    kept = np.where(keep, probs, 0.0)
    return kept / kept.sum(axis=1, keepdims=True)
