"""Queue and batch formation of the trajectory API, without HTTP.

Terms: a *group* is one scored group as an environment posted it; a *unit* is what the queue
holds and what batch formation never splits: one group of the env's registered ``group_size``,
or several smaller groups of one env that were buffered until their sizes summed to exactly
``group_size``. ``batch_size`` counts sequences.

Deliberate differences from Atropos's reference server (the wire format is unchanged):

* A second ``/register`` takes effect (new batch size, step counter set to its
  ``starting_step``, ...) instead of being silently ignored; environments and queued data stay.
* The step counter advances once per batch actually delivered, and batches are formed when
  asked for, oldest data first, so ``/status`` never counts steps the trainer has not received.
* Buffered groups that combine to ``group_size`` travel as one unit, so they are batched like a
  regular group (Atropos queues the pieces separately, where sizes that do not divide the
  largest group size are never batched).
* A group larger than its env's ``group_size`` is refused with a reason (it could never combine
  to ``group_size`` and would wait in the buffer forever); so is an unknown ``env_id``.
* ``min_batch_allocation`` is a guarantee: a batch is formed only once every connected env with
  a minimum can supply its share.
* Environments may register as soon as a trainer has registered (no need to wait for its first
  ``/batch`` poll).
"""

from __future__ import annotations

import math
import uuid
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from hermes_rl_mcp.api.models import RegisterEnv, Registration, WireError
from hermes_rl_mcp.api.payload import GroupPayload

MIN_ENV_WEIGHT = 0.01
"""Floor of an env's weight in ``/status-env`` so no environment is starved completely."""

EMPTY_EXAMPLE = b'{"tokens":[],"masks":[],"scores":[],"advantages":[],"ref_logprobs":[],' \
    b'"generation_params":[],"inference_logprobs":[],"messages":[],"images":[]}'
"""``/latest_example`` before any group was queued (Atropos's placeholder)."""


@dataclass(slots=True)
class QueueUnit:
    groups: tuple[GroupPayload, ...]
    size: int
    env_id: int | None


@dataclass(slots=True)
class EnvRecord:
    env_id: int
    desired_name: str
    wandb_name: str
    max_token_length: int
    weight: float
    group_size: int
    min_batch_allocation: float | None
    connected: bool = True


@dataclass(slots=True)
class AddResult:
    buffered: bool
    buffer_size: int = 0  # sequences waiting in this env's buffer after the add


@dataclass(slots=True)
class Batch:
    groups: list[GroupPayload]
    sequences: int
    step: int  # step counter after this delivery


class TrajectoryState:
    """Everything the server remembers; one instance per app, used from one event loop."""

    def __init__(self) -> None:
        self.registration: Registration | None = None
        self.step = 0
        self.requesters: list[int] = []
        self.envs: list[EnvRecord] = []
        self.queue: deque[QueueUnit] = deque()
        self.queued_sequences = 0
        self.queued_groups = 0
        self.buffers: dict[int, list[GroupPayload]] = {}
        self.latest: GroupPayload | None = None  # joined into text only when asked for

    def reset(self) -> None:
        """Forget trainer, environments, queued and buffered data, and the step counter."""
        self.__init__()  # type: ignore[misc]

    # -- trainer -----------------------------------------------------------------------------

    def register_trainer(self, registration: Registration) -> tuple[int, bool]:
        """Apply a trainer registration; return (its uuid, whether it replaced an earlier one)."""
        replaced = self.registration is not None
        self.registration = registration
        self.step = registration.starting_step
        requester = uuid.uuid4().int
        self.requesters.append(requester)
        return requester, replaced

    @property
    def batch_size(self) -> int:
        return self.registration.batch_size if self.registration else -1

    # -- environments -------------------------------------------------------------------------

    def register_env(self, request: RegisterEnv) -> EnvRecord | None:
        """Add an environment; None while no trainer has registered (the env retries)."""
        if self.registration is None:
            return None
        desired = request.desired_name or "env"
        same_name = sum(1 for env in self.envs if env.desired_name == desired)
        record = EnvRecord(
            env_id=len(self.envs),
            desired_name=desired,
            wandb_name=f"{desired}_{same_name}",
            max_token_length=request.max_token_length,
            weight=request.weight,
            group_size=request.group_size,
            min_batch_allocation=request.min_batch_allocation,
        )
        self.envs.append(record)
        return record

    def env(self, env_id: int) -> EnvRecord:
        if 0 <= env_id < len(self.envs):
            return self.envs[env_id]
        known = f"registered ids are 0..{len(self.envs) - 1}" if self.envs else "no environment is registered"
        raise WireError(404, f"env_id {env_id} is not registered ({known}); call /register-env first")

    def disconnect_env(self, env_id: int) -> None:
        self.env(env_id).connected = False

    # -- incoming groups ----------------------------------------------------------------------

    def check_groups(self, groups: Sequence[GroupPayload], where: str = "body") -> None:
        """Refuse groups the queue could not take; called on a whole request before adding any."""
        many = len(groups) > 1 or where != "body"
        for index, group in enumerate(groups):
            label = f"{where}[{index}]" if many else where
            if group.env_id is None:
                continue
            try:
                env = self.env(group.env_id)
            except WireError as exc:
                raise WireError(422, f"{label}.env_id: {exc.reason}") from None
            if group.size > env.group_size:
                raise WireError(
                    422,
                    f"{label} has {group.size} sequences but env {env.env_id} registered group_size "
                    f"{env.group_size}; a group may be smaller (it is buffered until groups add up "
                    f"to group_size) but never larger",
                )

    def add_group(self, group: GroupPayload) -> AddResult:
        """Queue a checked group, or buffer it when it is smaller than its env's group_size."""
        env_id = group.env_id
        if env_id is None or group.size == self.envs[env_id].group_size:
            self._enqueue(QueueUnit((group,), group.size, env_id))
            return AddResult(buffered=False)
        target = self.envs[env_id].group_size
        buffer = self.buffers.setdefault(env_id, [])
        buffer.append(group)
        chosen = _exact_subset([g.size for g in buffer], range(len(buffer)), target)
        if chosen is not None:
            picked = set(chosen)
            self._enqueue(QueueUnit(tuple(buffer[i] for i in chosen), target, env_id))
            buffer[:] = [g for i, g in enumerate(buffer) if i not in picked]
        return AddResult(buffered=True, buffer_size=sum(g.size for g in buffer))

    def _enqueue(self, unit: QueueUnit) -> None:
        self.queue.append(unit)
        self.queued_sequences += unit.size
        self.queued_groups += len(unit.groups)
        self.latest = unit.groups[-1]

    # -- batches ------------------------------------------------------------------------------

    def next_batch(self) -> Batch | None:
        """Take exactly ``batch_size`` sequences from the queue, or None if not possible yet."""
        batch_size = self.batch_size
        if batch_size <= 0 or self.queued_sequences < batch_size:
            return None
        units = self.queue
        minimums = self._minimum_sequences(batch_size)
        if minimums:
            chosen = self._choose_with_minimums(units, batch_size, minimums)
        else:
            chosen = _exact_subset([u.size for u in units], range(len(units)), batch_size)
        if chosen is None:
            return None
        if chosen[-1] == len(chosen) - 1:  # a prefix of the queue: the common case
            taken = [units.popleft() for _ in chosen]
        else:
            picked = set(chosen)
            taken = [units[i] for i in chosen]
            self.queue = deque(u for i, u in enumerate(units) if i not in picked)
        groups = [g for unit in taken for g in unit.groups]
        self.queued_sequences -= batch_size
        self.queued_groups -= len(groups)
        self.step += 1
        return Batch(groups, batch_size, self.step)

    def _minimum_sequences(self, batch_size: int) -> dict[int, int]:
        minimums: dict[int, int] = {}
        for env in self.envs:
            if env.connected and env.min_batch_allocation is not None:
                need = int(batch_size * env.min_batch_allocation)
                if need > 0:
                    minimums[env.env_id] = need
        return minimums

    def _choose_with_minimums(
        self, units: Sequence[QueueUnit], batch_size: int, minimums: dict[int, int]
    ) -> list[int] | None:
        by_env: dict[int, list[int]] = {env_id: [] for env_id in minimums}
        for index, unit in enumerate(units):
            if unit.env_id in by_env:
                by_env[unit.env_id].append(index)  # type: ignore[index]
        if any(not indices for indices in by_env.values()):
            return None  # an env with a minimum has nothing queued: wait for it
        total_minimum = sum(minimums.values())
        if total_minimum > batch_size:  # shares over 100%: scale down, keep one unit each
            scale = batch_size / total_minimum
            minimums = {
                env_id: max(min(units[i].size for i in by_env[env_id]), int(need * scale))
                for env_id, need in minimums.items()
            }
        chosen: list[int] = []
        total = 0
        for env_id, need in minimums.items():
            taken = 0
            for index in by_env[env_id]:
                if taken >= need:
                    break
                size = units[index].size
                if total + size <= batch_size:
                    chosen.append(index)
                    taken += size
                    total += size
            if taken < need:
                return None
        if total < batch_size:
            picked = set(chosen)
            rest = [i for i in range(len(units)) if i not in picked]
            filler = _exact_subset([u.size for u in units], rest, batch_size - total)
            if filler is None:
                return None
            chosen.extend(filler)
        return sorted(chosen)

    # -- status -------------------------------------------------------------------------------

    def status_env(self, env_id: int) -> dict[str, float | int]:
        """Atropos's ``/status-env`` figures, which environments use to pace themselves."""
        env = self.env(env_id)
        connected = [e for e in self.envs if e.connected]
        total_weight = sum(e.max_token_length * max(0.0, e.weight) for e in connected)
        share = env.max_token_length * env.weight / total_weight if total_weight > 0 else 0.0
        env_weight = max(MIN_ENV_WEIGHT, share)

        minimum_shares = sum(e.min_batch_allocation or 0.0 for e in connected)
        unallocated_fraction = 1.0 - min(minimum_shares, 1.0)
        batch_size = max(self.batch_size, 0)
        minimums = {
            e.env_id: int(batch_size * e.min_batch_allocation)
            for e in connected
            if e.min_batch_allocation is not None
        }

        max_group_size = 1
        own_group_size = env.group_size
        own_sequences = 0
        others: dict[int | None, int] = {}
        for unit in self.queue:
            if unit.size > max_group_size:
                max_group_size = unit.size
            if unit.env_id == env_id:
                own_sequences += unit.size
                if unit.size > own_group_size:
                    own_group_size = unit.size
            else:
                others[unit.env_id] = others.get(unit.env_id, 0) + unit.size
        # Other envs' data counts as whole packs of the largest group, less what their
        # minimum allocation reserves for them anyway.
        available_from_others = sum(
            max(0, math.ceil(sequences / max_group_size) * max_group_size - minimums.get(other, 0))  # type: ignore[arg-type]
            for other, sequences in others.items()
        )
        return {
            "current_step": self.step,
            "queue_size": (own_sequences + available_from_others) // own_group_size,
            "unallocated_fraction": unallocated_fraction,
            "self_queue_size": own_sequences // own_group_size,
            "max_group_size": max_group_size,
            "env_weight": env_weight,
        }


def _exact_subset(sizes: Sequence[int], candidates: Iterable[int], target: int) -> list[int] | None:
    """Indices (ascending) from ``candidates`` whose sizes sum to exactly ``target``.

    Oldest first: take candidates in order while they fit; if that misses the target, find the
    shortest prefix of candidates that contains an exact subset (subset sum over a bitset) and
    take one from it.
    """
    order = list(candidates)
    chosen: list[int] = []
    total = 0
    for index in order:
        size = sizes[index]
        if total + size <= target:
            chosen.append(index)
            total += size
            if total == target:
                return chosen
    mask = (1 << (target + 1)) - 1
    reachable = [1]  # reachable[k]: bit s set when some subset of the first k candidates sums to s
    bits = 1
    for index in order:
        bits = (bits | (bits << sizes[index])) & mask
        reachable.append(bits)
        if bits >> target & 1:
            break
    else:
        return None
    chosen = []
    remaining = target
    for k in range(len(reachable) - 1, 0, -1):
        if reachable[k - 1] >> remaining & 1:
            continue  # reachable without candidate k-1: leave it
        index = order[k - 1]
        chosen.append(index)
        remaining -= sizes[index]
    return sorted(chosen)
