"""Wire models of the trajectory API (the Atropos protocol).

Small control payloads (``/register``, ``/register-env``, ``/status-env`` ...) are pydantic models.
Scored groups are the bulk of the traffic (three number matrices of sequences x tokens each), so
they are checked by :func:`check_scored_group`, a structural check that runs at C speed over
already-decoded JSON instead of building a pydantic object per number. :class:`ScoredData`
states the same schema as a pydantic model; it documents the format and the tests hold the fast
check to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hermes_rl_mcp.errors import HermesRLError


class WireError(HermesRLError):
    """A request the server refuses; ``status`` is the HTTP status, ``reason`` says what to fix."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


# ---------------------------------------------------------------------------------------------
# Requests


class Registration(BaseModel):
    """``POST /register``: the trainer announces itself and its batch shape."""

    model_config = ConfigDict(extra="ignore")

    batch_size: int = Field(gt=0, description="Sequences per batch handed to the trainer.")
    max_token_len: int = Field(-1, description="Longest sequence the trainer takes; -1 unknown.")
    num_steps: int = Field(-1, description="Trainer steps in the run; -1 unknown.")
    starting_step: int = Field(0, ge=0, description="Step the trainer resumes from.")
    checkpoint_dir: str = ""
    save_checkpoint_interval: int = -1
    wandb_group: str | None = None
    wandb_project: str | None = None


class RegisterEnv(BaseModel):
    """``POST /register-env``: an environment process announces itself."""

    model_config = ConfigDict(extra="ignore")

    max_token_length: int = Field(gt=0)
    group_size: int = Field(gt=0, description="Sequences per scored group this env sends.")
    desired_name: str | None = Field(None, description="Name prefix; null becomes 'env'.")
    weight: float = Field(1.0, ge=0, description="Share of generation work relative to other envs.")
    min_batch_allocation: float | None = Field(
        None, ge=0, le=1, description="Minimum share of every batch reserved for this env."
    )

    @field_validator("weight", mode="before")
    @classmethod
    def _null_weight_is_default(cls, value: Any) -> Any:
        return 1.0 if value is None else value


class EnvIdentifier(BaseModel):
    """Body of ``/disconnect-env`` and ``/status-env``."""

    model_config = ConfigDict(extra="ignore")

    env_id: int = Field(ge=0)


# ---------------------------------------------------------------------------------------------
# Scored groups


class ScoredData(BaseModel):
    """One scored group as sent by an environment (reference schema; see module docstring)."""

    model_config = ConfigDict(strict=True, extra="allow")

    tokens: list[list[int]]
    masks: list[list[int]]
    scores: list[float]
    advantages: list[list[float]] | None = None
    ref_logprobs: list[list[float]] | None = None
    messages: list[list[dict[str, Any]]] | None = None
    generation_params: dict[str, Any] | None = None
    inference_logprobs: list[list[float]] | None = None
    overrides: list[dict[str, Any]] | None = None
    group_overrides: dict[str, Any] | None = None
    images: Any = None
    env_id: int | None = None
    distill_token_ids: list[list[list[int]]] | None = None
    distill_logprobs: list[list[list[float]]] | None = None


SCORED_DATA_FIELDS: tuple[str, ...] = tuple(ScoredData.model_fields)
"""Every field a delivered group carries; absent ones are sent as null, as Atropos does."""

PER_SEQUENCE_FIELDS = ("advantages", "ref_logprobs", "inference_logprobs")

# Groups are decoded with floats kept as their text (bytes) instead of converted: correct
# rounding of 17-digit floats dominates decoding time, and the server never reads a float.
# bytes cannot come out of JSON any other way, so {int, bytes} is exactly "a JSON number".
_INTS = frozenset({int})
_NUMBERS = frozenset({int, bytes})
_LISTS = frozenset({list})


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, (float, bytes)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _wrong(where: str, expected: str, got: Any) -> WireError:
    return WireError(422, f"{where} must be {expected}, got {_json_type(got)}")


def _first_bad(values: list[Any], allowed: frozenset[type]) -> int:
    return next(i for i, v in enumerate(values) if type(v) not in allowed)


_SINGULAR = {"integers": "an integer", "numbers": "a number"}


@dataclass(frozen=True, slots=True)
class CheckedMatrix:
    """A number matrix already proven well-formed from its JSON text (see lexer.py)."""

    row_lengths: list[int]
    integers: bool


def _check_rows(value: Any, where: str, allowed: frozenset[type], expected: str) -> list[int]:
    """``value`` is an array of arrays whose elements' types are in ``allowed``; return row lengths."""
    if type(value) is CheckedMatrix and (value.integers or allowed is _NUMBERS):
        return value.row_lengths
    if type(value) is not list:
        raise _wrong(where, f"an array of arrays of {expected}", value)
    if not set(map(type, value)) <= _LISTS:
        i = _first_bad(value, _LISTS)
        raise _wrong(f"{where}[{i}]", f"an array of {expected}", value[i])
    if not set(map(type, chain.from_iterable(value))) <= allowed:
        for i, row in enumerate(value):
            if not set(map(type, row)) <= allowed:
                j = _first_bad(row, allowed)
                raise _wrong(f"{where}[{i}][{j}]", _SINGULAR[expected], row[j])
    return list(map(len, value))


def _check_cubes(value: Any, where: str, allowed: frozenset[type], expected: str) -> None:
    """``value`` is an array of arrays of arrays of ``expected``."""
    if type(value) is not list:
        raise _wrong(where, f"an array of arrays of arrays of {expected}", value)
    for i, rows in enumerate(value):
        _check_rows(rows, f"{where}[{i}]", allowed, expected)


def check_scored_group(group: Any, where: str = "body") -> tuple[int, int | None]:
    """Check one decoded scored group; return (number of sequences, env_id).

    Raises :class:`WireError` (422) naming the first offending field and what is valid. Beyond
    the Atropos schema it requires what a trainer relies on: at least one sequence, one mask row
    and one score per sequence, each mask row as long as its token row, and per-sequence
    optional fields (logprobs, advantages) with one entry per sequence.
    """
    if type(group) is not dict:
        raise _wrong(where, "a JSON object (a scored group with tokens, masks, scores)", group)
    missing = [name for name in ("tokens", "masks", "scores") if name not in group]
    if missing:
        raise WireError(422, f"{where} is missing required field(s) {', '.join(missing)}")
    token_lengths = _check_rows(group["tokens"], f"{where}.tokens", _INTS, "integers")
    n = len(token_lengths)
    if n == 0:
        raise WireError(422, f"{where}.tokens is empty; a group needs at least one sequence")
    mask_lengths = _check_rows(group["masks"], f"{where}.masks", _INTS, "integers")
    if len(mask_lengths) != n:
        raise WireError(422, f"{where}.masks has {len(mask_lengths)} rows but tokens has {n}; send one mask row per sequence")
    if token_lengths != mask_lengths:
        i = next(i for i, (a, b) in enumerate(zip(token_lengths, mask_lengths)) if a != b)
        raise WireError(
            422,
            f"{where}.masks[{i}] has {mask_lengths[i]} entries but tokens[{i}] has "
            f"{token_lengths[i]}; masks align with tokens position by position",
        )
    scores = group["scores"]
    if type(scores) is not list:
        raise _wrong(f"{where}.scores", "an array of numbers", scores)
    if not set(map(type, scores)) <= _NUMBERS:
        i = _first_bad(scores, _NUMBERS)
        raise _wrong(f"{where}.scores[{i}]", "a number", scores[i])
    if len(scores) != n:
        raise WireError(422, f"{where}.scores has {len(scores)} entries but tokens has {n}; send one score per sequence")

    for name in PER_SEQUENCE_FIELDS:
        value = group.get(name)
        if value is None:
            continue
        lengths = _check_rows(value, f"{where}.{name}", _NUMBERS, "numbers")
        if len(lengths) != n:
            raise WireError(422, f"{where}.{name} has {len(lengths)} rows but tokens has {n}; send one row per sequence")

    messages = group.get("messages")
    if messages is not None:
        if type(messages) is not list:
            raise _wrong(f"{where}.messages", "an array (one message list per sequence) or null", messages)
        for i, conversation in enumerate(messages):
            if type(conversation) is not list:
                raise _wrong(f"{where}.messages[{i}]", "an array of message objects", conversation)
            for j, message in enumerate(conversation):
                if type(message) is not dict:
                    raise _wrong(f"{where}.messages[{i}][{j}]", "an object with role and content", message)
                if "role" not in message or "content" not in message:
                    raise WireError(422, f"{where}.messages[{i}][{j}] needs both 'role' and 'content'")

    for name in ("generation_params", "group_overrides"):
        value = group.get(name)
        if value is not None and type(value) is not dict:
            raise _wrong(f"{where}.{name}", "an object or null", value)
    overrides = group.get("overrides")
    if overrides is not None:
        if type(overrides) is not list:
            raise _wrong(f"{where}.overrides", "an array of objects or null", overrides)
        for i, item in enumerate(overrides):
            if type(item) is not dict:
                raise _wrong(f"{where}.overrides[{i}]", "an object", item)

    value = group.get("distill_token_ids")
    if value is not None:
        _check_cubes(value, f"{where}.distill_token_ids", _INTS, "integers")
    value = group.get("distill_logprobs")
    if value is not None:
        _check_cubes(value, f"{where}.distill_logprobs", _NUMBERS, "numbers")

    env_id = group.get("env_id")
    if env_id is not None and type(env_id) is not int:
        raise _wrong(f"{where}.env_id", "an integer or null", env_id)
    return n, env_id
