"""Control-plane figures: discovery of 1,000 files, server start-up and tool-call latency.

Start-up and latency are printed as ratios to a bare MCPServer with one echo tool, measured in
the same run over the same stdio transport. Usage: python bench/bench_control_plane.py
"""

from __future__ import annotations

import os
import statistics
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


async def time_calls(state: Path) -> tuple[float, float]:
    """Median warm latency of rl_list_environments and of the bare echo, calls interleaved."""
    calls = {"bare": ("echo", {"text": "hello"}), "ours": ("rl_list_environments", {})}
    samples: dict[str, list[float]] = {"bare": [], "ours": []}
    async with Client(server_params("bare", state), mode="legacy") as bare, \
            Client(server_params("ours", state), mode="legacy") as ours:
        clients = {"bare": bare, "ours": ours}
        for round_ in range(CALLS + 20):
            for kind, client in clients.items():
                tool, args = calls[kind]
                started = time.perf_counter()
                result = await client.call_tool(tool, args)
                elapsed = time.perf_counter() - started
                assert not result.is_error
                if round_ >= 20:  # the first calls warm caches and code paths
                    samples[kind].append(elapsed)
    return statistics.median(samples["ours"]), statistics.median(samples["bare"])


async def bench_server(state: Path) -> None:
    spawn: dict[str, list[float]] = {"bare": [], "ours": []}
    for _ in range(SPAWNS):  # interleaved so both see the same machine load
        for kind in spawn:
            spawn[kind].append(await time_initialize(kind, state))
    bare, ours = statistics.median(spawn["bare"]), statistics.median(spawn["ours"])
    print(f"spawn to initialize answered: ours {ours * 1000:.0f} ms, bare {bare * 1000:.0f} ms, "
          f"ratio {ours / bare:.2f}x (median of {SPAWNS}; target <= 1.5x)")
    ours_call, bare_call = await time_calls(state)
    print(f"warm call latency: rl_list_environments {ours_call * 1000:.2f} ms, echo {bare_call * 1000:.2f} ms, "
          f"ratio {ours_call / bare_call:.2f}x (median of {CALLS}; target <= 1.5x)")


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
