"""Control-plane figures: discovery of 1,000 files, server start-up and every read tool's latency.

Start-up and latency are printed as ratios to a bare MCPServer with one echo tool, measured in
the same run over the same stdio transport. The run tools read two short runs that the benchmark
trains first. Usage: python bench/bench_control_plane.py
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from hermes_rl_mcp.core.discovery import Discovery

HERE = Path(__file__).resolve().parent
SPAWNS = 7
CALLS = 200

ENV_SOURCE = '''"""Generated environment {i}."""
from pydantic import Field
from hermes_rl_mcp.sdk import BaseEnv, BaseEnvConfig


class Env{i}Config(BaseEnvConfig):
    level: int = Field({i}, ge=0)


class Env{i}(BaseEnv):
    """Environment number {i}, for the discovery benchmark."""

    name = "env_{i}"
    env_config_cls = Env{i}Config

    async def setup(self):
        self.items = list(range({i}))

    async def get_next_item(self):
        return self.items.pop()

    async def evaluate(self, *args, **kwargs):
        return None
'''


def bench_discovery(root: Path) -> None:
    for i in range(1000):
        folder = root / f"group_{i % 20}"
        folder.mkdir(exist_ok=True)
        (folder / f"env_{i}.py").write_text(ENV_SOURCE.format(i=i))
    cold = []
    warm = []
    for _ in range(3):
        scanner = Discovery()
        started = time.perf_counter()
        listing = scanner.scan([root])
        cold.append(time.perf_counter() - started)
        assert len(listing.environments) == 1000, len(listing.environments)
        for _ in range(10):
            started = time.perf_counter()
            scanner.scan([root])
            warm.append(time.perf_counter() - started)
    print(f"discovery, 1,000 files: cold {min(cold) * 1000:.0f} ms (best of 3; target <= 1000 ms), "
          f"warm {statistics.median(warm) * 1000:.1f} ms (median of 30; target <= 20 ms)")


def server_params(kind: str, state: Path) -> StdioServerParameters:
    env = {"HERMES_RL_HOME": str(state)}
    if kind == "bare":
        return StdioServerParameters(command=sys.executable, args=[str(HERE / "bare_server.py")], env=env)
    script = Path(sys.executable).with_name("hermes-rl-mcp")
    return StdioServerParameters(command=str(script), args=[], env=env)


async def time_initialize(kind: str, state: Path) -> float:
    started = time.perf_counter()
    async with Client(server_params(kind, state), mode="legacy") as client:
        elapsed = time.perf_counter() - started
        assert client.server_info is not None
    return elapsed


async def prepare_runs(state: Path) -> list[str]:
    """Two completed short runs in the state directory (one with another learning rate), so the
    run tools have something to read and rl_compare_runs something to compare."""
    run_ids = []
    async with Client(server_params("ours", state), mode="legacy") as client:
        await client.call_tool("rl_select_environment", {"name": "reverse_text"})
        for learning_rate in (0.003, 0.01):
            edits = {"env.total_steps": 6, "env.steps_per_eval": 3, "env.use_wandb": False, "trainer.learning_rate": learning_rate}
            for field, value in edits.items():
                await client.call_tool("rl_edit_config", {"field": field, "value": value})
            run_id = (await client.call_tool("rl_start_training", {})).structured_content["run_id"]
            deadline = time.monotonic() + 120
            while (await client.call_tool("rl_check_status", {"run_id": run_id})).structured_content["status"] != "completed":
                assert time.monotonic() < deadline, "the benchmark's run did not complete"
                await anyio.sleep(0.5)
            run_ids.append(run_id)
    return run_ids


def read_calls(run_ids: list[str]) -> dict[str, dict]:
    """Every read-only tool that reads recorded state, with typical arguments. (The other read-only
    tools run code: rl_check_environment and rl_test_inference an environment's, rl_sample a policy.)"""
    run_id = run_ids[0]
    return {
        "rl_list_environments": {},
        "rl_get_current_config": {},
        "rl_list_runs": {},
        "rl_check_status": {"run_id": run_id},
        "rl_get_results": {"run_id": run_id},
        "rl_get_logs": {"run_id": run_id, "component": "trainer", "lines": 50},
        "rl_compare_runs": {"run_ids": run_ids},
    }


async def time_calls(state: Path, run_ids: list[str]) -> dict[str, tuple[float, float]]:
    """Per read tool: median warm latency of the tool and of the bare echo, calls interleaved."""
    figures: dict[str, tuple[float, float]] = {}
    async with Client(server_params("bare", state), mode="legacy") as bare, \
            Client(server_params("ours", state), mode="legacy") as ours:
        for tool, args in read_calls(run_ids).items():
            samples: dict[str, list[float]] = {"bare": [], "ours": []}
            for round_ in range(CALLS + 20):
                for kind, client, name, arguments in (("bare", bare, "echo", {"text": "hello"}), ("ours", ours, tool, args)):
                    started = time.perf_counter()
                    result = await client.call_tool(name, arguments)
                    elapsed = time.perf_counter() - started
                    assert not result.is_error and not (result.structured_content or {}).get("refused"), result
                    if round_ >= 20:  # the first calls warm caches and code paths
                        samples[kind].append(elapsed)
            figures[tool] = (statistics.median(samples["ours"]), statistics.median(samples["bare"]))
    return figures


class RawStdioClient:
    """JSON-RPC lines over the server's stdio with no client-side processing: the server's own latency.

    The SDK's client validates every structured result against the tool's output schema with
    jsonschema, which for a result of a few kB costs more than the server does; this client
    measures the server and the pipe alone: the clock stops when the reply's line has arrived,
    before it is parsed.
    """

    def __init__(self, params: StdioServerParameters) -> None:
        self.process = subprocess.Popen(
            [params.command, *params.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env={**os.environ, **(params.env or {})},
        )
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict) -> None:
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict) -> dict:
        return self.parse(self.request_line(method, params))

    def request_line(self, method: str, params: dict) -> bytes:
        """The raw line of the reply: what the server wrote, before any parsing on this side."""
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        reply_prefix = f'{{"jsonrpc":"2.0","id":{self.next_id},'.encode()
        while True:
            line = self.process.stdout.readline()
            if line.startswith(reply_prefix):
                return line

    @staticmethod
    def parse(line: bytes) -> dict:
        message = json.loads(line)
        assert "error" not in message, message
        return message["result"]

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=10)


def time_raw_calls(state: Path, run_ids: list[str]) -> dict[str, tuple[float, float]]:
    """Per read tool: median server latency (raw JSON-RPC) of the tool and of the bare echo, interleaved."""
    bare, ours = RawStdioClient(server_params("bare", state)), RawStdioClient(server_params("ours", state))
    figures: dict[str, tuple[float, float]] = {}
    try:
        for tool, args in read_calls(run_ids).items():
            samples: dict[str, list[float]] = {"bare": [], "ours": []}
            for round_ in range(CALLS + 20):
                for kind, client, name, arguments in (("bare", bare, "echo", {"text": "hello"}), ("ours", ours, tool, args)):
                    started = time.perf_counter()
                    line = client.request_line("tools/call", {"name": name, "arguments": arguments})
                    elapsed = time.perf_counter() - started
                    result = client.parse(line)  # checked after the clock stops: parsing is the client's cost
                    assert not result.get("isError") and not (result.get("structuredContent") or {}).get("refused"), result
                    if round_ >= 20:
                        samples[kind].append(elapsed)
            figures[tool] = (statistics.median(samples["ours"]), statistics.median(samples["bare"]))
    finally:
        bare.close()
        ours.close()
    return figures


async def bench_server(state: Path) -> None:
    spawn: dict[str, list[float]] = {"bare": [], "ours": []}
    for _ in range(SPAWNS):  # interleaved so both see the same machine load
        for kind in spawn:
            spawn[kind].append(await time_initialize(kind, state))
    bare, ours = statistics.median(spawn["bare"]), statistics.median(spawn["ours"])
    print(f"spawn to initialize answered: ours {ours * 1000:.0f} ms, bare {bare * 1000:.0f} ms, "
          f"ratio {ours / bare:.2f}x (median of {SPAWNS}; target <= 1.5x)")
    run_ids = await prepare_runs(state)
    for tool, (ours_call, bare_call) in time_raw_calls(state, run_ids).items():
        print(f"server latency, raw JSON-RPC: {tool:<22} {ours_call * 1000:.2f} ms, echo {bare_call * 1000:.2f} ms, "
              f"ratio {ours_call / bare_call:.2f}x (median of {CALLS}; target <= 1.2x)")
    for tool, (ours_call, bare_call) in (await time_calls(state, run_ids)).items():
        print(f"end to end, SDK client:       {tool:<22} {ours_call * 1000:.2f} ms, echo {bare_call * 1000:.2f} ms, "
              f"ratio {ours_call / bare_call:.2f}x (median of {CALLS}; includes the client's schema validation)")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "envs"
        root.mkdir()
        bench_discovery(root)
        state = Path(tmp) / "state"
        os.environ["HERMES_RL_HOME"] = str(state)
        anyio.run(bench_server, state)


if __name__ == "__main__":
    main()
