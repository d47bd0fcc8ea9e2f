"""``hermes-rl-mcp demo``: a full training run driven through the real MCP server over stdio.

It does what an agent would: list the environments, select one, edit a setting, start a run,
follow its status, then read the results (the learning curve drawn as text) and the end of the
trainer's log. It talks to a freshly spawned server process exactly as any MCP client does.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from hermes_rl_mcp.runs.states import TERMINAL_STATES


def _say(text: str = "") -> None:
    print(text, flush=True)


async def _call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    shown = ", ".join(f"{k}={json.dumps(v)}" for k, v in arguments.items())
    _say(f"\n> {tool}({shown})")
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        raise SystemExit(f"{tool} failed: {result.content[0].text}")
    return result.structured_content or {}


async def session(environment: str, edits: list[tuple[str, str]]) -> None:
    server = StdioServerParameters(command=sys.executable, args=["-m", "hermes_rl_mcp"], env=dict(os.environ))
    async with Client(server, mode="legacy") as client:
        _say(f"connected to {client.server_info.name} {client.server_info.version} (protocol {client.protocol_version})")
        listing = await _call(client, "rl_list_environments")
        for env in listing["environments"]:
            _say(f"  {env['name']:<16} {env['description']}")
        for problem in listing["problems"]:
            _say(f"  problem: {problem['file']}: {problem['reason']}")

        selected = await _call(client, "rl_select_environment", name=environment)
        _say(f"  selected {selected['environment']['name']} on the {selected['backend']} backend: "
             f"{selected['editable_fields']} editable fields, {selected['locked_fields']} locked")

        for field, value in edits:
            edit = await _call(client, "rl_edit_config", field=field, value=value)
            _say(f"  {edit['field']}: {json.dumps(edit['old_value'])} -> {json.dumps(edit['new_value'])}")

        config = await _call(client, "rl_get_current_config")
        interesting = ("env.group_size", "env.total_steps", "env.steps_per_eval", "trainer.learning_rate", "run.backend")
        for name, field in config["editable"].items():
            if name in interesting or field.get("edited"):
                _say(f"  {name:<28} = {json.dumps(field['value'])}")
        _say(f"  locked: {', '.join(config['locked'])}")

        started = await _call(client, "rl_start_training")
        run_id = started["run_id"]
        _say(f"  run {run_id} is {started['status']}; config in {started['config_path']}")
        try:
            final = await _follow(client, run_id)
        except (KeyboardInterrupt, anyio.get_cancelled_exc_class()):
            with anyio.CancelScope(shield=True):
                await _call(client, "rl_stop_training", run_id=run_id)
            raise
        results = await _call(client, "rl_get_results", run_id=run_id)
        _show_results(results)
        logs = await _call(client, "rl_get_logs", run_id=run_id, component="trainer", lines=8)
        for line in logs["text"].splitlines():
            _say(f"  | {line}")
        if final["status"] != "completed":
            raise SystemExit(f"run {run_id} ended {final['status']}: {final.get('reason')}")


def _bar(fraction: float, width: int = 24) -> str:
    filled = round(max(0.0, min(1.0, fraction)) * width)
    return "#" * filled + "." * (width - filled)


def _fmt(value: Any) -> str:
    return "  -  " if value is None else f"{value:5.2f}"


async def _follow(client: Client, run_id: str, poll_seconds: float = 2.0) -> dict[str, Any]:
    """Poll the run's status like a person watching it, one line per change."""
    _say(f"\n> rl_check_status(run_id={json.dumps(run_id)})  every {poll_seconds:g} s")
    last = None
    began = time.monotonic()
    while True:
        result = await client.call_tool("rl_check_status", {"run_id": run_id})
        if result.is_error:
            raise SystemExit(f"rl_check_status failed: {result.content[0].text}")
        status = result.structured_content
        metrics = status["metrics"]
        line = (
            f"  {status['status']:<9} step {status['step']:>4}/{status['total_steps'] or '?':<4} "
            f"[{_bar(status['progress'])}] train {_fmt(metrics.get('train/percent_correct'))} "
            f"eval {_fmt(metrics.get('eval/percent_correct'))} reward {_fmt(metrics.get('reward/mean'))}"
        )
        if line != last:
            _say(f"{line}  ({time.monotonic() - began:5.1f} s)")
            last = line
        if status["status"] in TERMINAL_STATES:
            if status.get("log_tail"):
                _say(f"  {status['failed_component']} log tail:\n{status['log_tail']}")
            return status
        await anyio.sleep(poll_seconds)


def _show_results(results: dict[str, Any]) -> None:
    _say(f"  {results['status']} in {results['duration_seconds']:.0f} s, {results['step']} steps")
    for name in ("eval/percent_correct", "train/percent_correct"):
        series = results["history"].get(name)
        if not series:
            continue
        _say(f"\n  {name} (learning curve)")
        for step, value in zip(series["steps"], series["values"]):
            _say(f"  step {step:>4} {value:5.2f} |{_bar(value, 40)}|")
    best = results["best_metrics"].get("eval/percent_correct")
    if best:
        _say(f"\n  best eval/percent_correct {best['value']:.2f} at step {best['step']}")
    _say(f"  final checkpoint: {results['final_checkpoint']}")
    wandb = results["wandb"]
    if wandb["mode"] == "offline":
        for command in wandb["sync_commands"]:
            _say(f"  W&B (offline; upload with): {command}")
    elif wandb["url"]:
        _say(f"  W&B: {wandb['url']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hermes-rl-mcp demo", description="A full training run driven through the real MCP server over stdio, as an agent would.")
    parser.add_argument("--environment", default="reverse_text", help="environment to select (default reverse_text)")
    parser.add_argument("--set", dest="edits", action="append", default=[], metavar="FIELD=VALUE",
                        help="a config edit to make (repeatable; default env.steps_per_eval=20)")
    args = parser.parse_args(argv)
    edits = []
    for item in args.edits or ["env.steps_per_eval=20"]:
        field, sep, value = item.partition("=")
        if not sep:
            parser.error(f"--set takes FIELD=VALUE, got {item!r}")
        edits.append((field, value))
    try:
        anyio.run(session, args.environment, edits)
    except KeyboardInterrupt:
        print("\ninterrupted: the run was stopped", file=sys.stderr)
        return 130
    return 0
