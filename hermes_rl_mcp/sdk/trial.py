"""``trial`` mode: collect a few groups against a policy endpoint and write what happened.

Nothing is trained and no group is dropped: each group's prompt, completions, scores and time
go to ``trial.jsonl`` in the run directory as it finishes (so a trial cut short by its time
bound still reports the groups it finished), with any exception the environment raised and the
last lines of its traceback. The settings come from the run document's ``run.trial``
(``groups``, ``group_timeout`` in seconds); ``run.policy_key_env`` names the variable holding
the endpoint's key, which is read here and never written to a file.

The endpoint may be any OpenAI-compatible server: completions without token ids or logprobs
are accepted (a trial needs only their text), and an endpoint that cannot constrain its output
to ``guided_choice`` is tried all the same; its answers are scored as they come.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import os
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hermes_rl_mcp.run_document import TrialSettings
from hermes_rl_mcp.sdk.policy_client import Completion, CompletionGroup, PolicyClient, PolicyError
from hermes_rl_mcp.start_gate import wait_for_predecessor

TRACEBACK_LINES = 8
ITEM_CHARS = 300
RESULTS_FILE = "trial.jsonl"

_calls: contextvars.ContextVar[list[dict[str, Any]] | None] = contextvars.ContextVar("trial_calls", default=None)


class RecordingPolicyClient(PolicyClient):
    """A policy client that keeps every request and its completions for the group being collected."""

    async def chat(self, messages: list[dict[str, str]], **kwargs: Any) -> CompletionGroup:
        group = await super().chat(messages, **kwargs)
        self._record([{"role": str(m.get("role", "")), "content": _text(m.get("content"))} for m in messages], group)
        return group

    async def complete(self, prompt: str, **kwargs: Any) -> CompletionGroup:
        group = await super().complete(prompt, **kwargs)
        self._record([{"role": "text", "content": prompt}], group)
        return group

    @staticmethod
    def _record(prompt: list[dict[str, str]], group: CompletionGroup) -> None:
        calls = _calls.get()
        if calls is not None:
            calls.append({"prompt": prompt, "completions": [c.text for c in group.completions],
                          "finish_reasons": [c.finish_reason for c in group.completions]})

    def _chat_group(self, data: dict[str, Any]) -> CompletionGroup:
        try:
            return super()._chat_group(data)
        except PolicyError:
            return _lenient(data, lambda choice: (choice.get("message") or {}).get("content"))

    def _text_group(self, data: dict[str, Any]) -> CompletionGroup:
        try:
            return super()._text_group(data)
        except PolicyError:
            return _lenient(data, lambda choice: choice.get("text"))

    def _checked(self, group: CompletionGroup, n: int, guided_choice: Sequence[str] | None) -> CompletionGroup:
        if len(group.completions) != n:
            raise PolicyError(f"asked for {n} completions, got {len(group.completions)}")
        return group


def _text(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content, default=str)


def _lenient(data: dict[str, Any], text_of: Any) -> CompletionGroup:
    """Completions of an endpoint that sends no token ids: their text, with empty token lists."""
    try:
        completions = [
            Completion(text=text_of(choice) or "", token_ids=[], logprobs=[], finish_reason=choice.get("finish_reason") or "stop")
            for choice in data["choices"]
        ]
    except (KeyError, TypeError, AttributeError) as exc:
        raise PolicyError(f"the endpoint's answer has no choices: {exc!r}") from exc
    return CompletionGroup(prompt_token_ids=list(data.get("prompt_token_ids") or []), completions=completions)


def error_record(exc: BaseException) -> dict[str, Any]:
    lines = "".join(traceback.format_exception(exc)).rstrip().splitlines()
    return {"type": type(exc).__name__, "message": str(exc)[:2000], "traceback": lines[-TRACEBACK_LINES:]}


async def _one_group(env: Any, index: int, timeout: float) -> dict[str, Any]:
    calls: list[dict[str, Any]] = []
    _calls.set(calls)  # this task's own context: groups collected at once keep their calls apart
    started = time.monotonic()
    record: dict[str, Any] = {"index": index}
    try:
        item = await asyncio.wait_for(env.get_next_item(), timeout)
        record["item"] = repr(item)[:ITEM_CHARS]
        group, _backlog = await asyncio.wait_for(env.collect_trajectories(item), timeout)
        if not group:
            record["error"] = {"type": "NoGroup", "message": "collect_trajectories returned no group", "traceback": []}
        else:
            record["scores"] = [round(float(s), 6) for s in group.get("scores", [])]
    except TimeoutError:
        record["error"] = {"type": "TimeoutError", "message": f"the group took longer than {timeout:g} s", "traceback": []}
    except Exception as exc:  # noqa: BLE001 - the environment's own failure is what a trial reports
        record["error"] = error_record(exc)
    record["seconds"] = round(time.monotonic() - started, 3)
    record["calls"] = calls
    return record


async def trial(runtime: Any) -> int:
    """Collect ``run.trial.groups`` groups; one JSON line per group (or one for a failed setup)."""
    run = runtime.settings.document.run
    spec = run.trial or TrialSettings()
    groups, timeout = spec.groups, spec.group_timeout
    path = Path(runtime.settings.run_dir) / RESULTS_FILE
    key_variable = run.policy_key_env
    servers = runtime.settings.servers
    if key_variable:
        for server in servers:
            server.api_key = os.environ.get(key_variable, "")
    runtime.env.policy = RecordingPolicyClient(servers, temperature=runtime.settings.temperature)
    with open(path, "a", encoding="utf-8") as out:
        started = time.monotonic()
        try:
            await asyncio.wait_for(runtime.env.setup(), timeout)
        except Exception as exc:  # noqa: BLE001 - reported, as the environment raised it
            error = error_record(exc) if not isinstance(exc, TimeoutError) else {
                "type": "TimeoutError", "message": f"setup() took longer than {timeout:g} s", "traceback": []}
            out.write(json.dumps({"setup_error": error}) + "\n")
            return 1
        out.write(json.dumps({"setup_seconds": round(time.monotonic() - started, 3)}) + "\n")
        out.flush()
        await asyncio.to_thread(wait_for_predecessor)  # the policy endpoint, started alongside
        workers = max(1, min(groups, runtime.workers))
        pending = iter(range(groups))

        async def worker() -> None:
            for index in pending:
                record = await asyncio.create_task(_one_group(runtime.env, index, timeout))
                out.write(json.dumps(record, default=str) + "\n")
                out.flush()

        await asyncio.gather(*(worker() for _ in range(workers)))
    return 0
