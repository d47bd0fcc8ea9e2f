"""Server-side cost of a policy request: the policy server's plain-ASGI sampling endpoints
against the same handlers reached through Starlette's routing.

    python bench/bench_policy_server.py [--requests 1500] [--concurrency 32] [--rounds 3]

Two child processes serve the real local policy (an untrained policy) on loopback ports: one
the app as the trainer serves it (``build_app``), the baseline a plain Starlette app over the
same routes, so every request passes Starlette's middleware and routing before reaching the
same handler. This process sends the chat requests of a multi-turn environment
(n=1, a few tokens) through the environment's own keep-alive client, alternating rounds
between the two. Printed for each: requests per second and the server process's CPU
milliseconds per request (from its ``/proc`` counters), and the ratios (fast path / routed).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import time

import httpx

from hermes_rl_mcp.sdk.base import APIServerConfig
from hermes_rl_mcp.sdk.policy_client import PolicyClient

MESSAGES = [{"role": "user", "content": "at 2 goal 5 L/R"}]
ARMS = ("routed", "fast path")


def serve(port: int, arm: str) -> None:
    import numpy as np
    import uvicorn
    from starlette.applications import Starlette

    from hermes_rl_mcp.trainer.model import PolicyModel
    from hermes_rl_mcp.trainer.policy_server import PolicyHolder, build_app
    from hermes_rl_mcp.trainer.tokenizer import CharTokenizer

    holder = PolicyHolder(model=PolicyModel.initialise(CharTokenizer()), default_temperature=1.0, rng=np.random.default_rng(0))
    app = build_app(holder)
    if arm == "routed":
        app = Starlette(routes=app.routes)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False, http="httptools")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process (Linux ``/proc``)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def one_round(client: PolicyClient, pid: int, requests: int, concurrency: int) -> tuple[float, float]:
    """(requests per second, server CPU ms per request)."""
    remaining = iter(range(requests))

    async def worker() -> None:
        for _ in remaining:
            await client.chat(MESSAGES, n=1, max_tokens=3)

    cpu, wall = cpu_seconds(pid), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    cpu, wall = cpu_seconds(pid) - cpu, time.perf_counter() - wall
    return requests / wall, 1000 * cpu / requests


async def measure(servers: dict[str, tuple[str, int]], requests: int, concurrency: int, rounds: int) -> dict[str, list[tuple[float, float]]]:
    clients = {arm: PolicyClient([APIServerConfig(model_name="bench", base_url=url, api_key="x")]) for arm, (url, _) in servers.items()}
    results: dict[str, list[tuple[float, float]]] = {arm: [] for arm in servers}
    for arm, client in clients.items():  # warm up: connections, first-call imports
        await one_round(client, servers[arm][1], 50, concurrency)
    for _ in range(rounds):
        for arm, client in clients.items():
            results[arm].append(await one_round(client, servers[arm][1], requests, concurrency))
    for client in clients.values():
        await client.aclose()
    return results


def start(arm: str) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port), "--arm", arm], env=env)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return server, url
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline or server.poll() is not None:
            server.kill()
            raise SystemExit(f"the {arm} policy server did not start")
        time.sleep(0.1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=1500, help="requests per round (default 1500)")
    parser.add_argument("--concurrency", type=int, default=32, help="requests in flight (default 32: 4 groups of 8 episodes)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per server (default 3)")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--arm", choices=ARMS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is not None:
        serve(args.serve, args.arm)
        return 0

    started: dict[str, tuple[subprocess.Popen[bytes], str]] = {}
    try:
        for arm in ARMS:
            started[arm] = start(arm)
        servers = {arm: (url, process.pid) for arm, (process, url) in started.items()}
        results = asyncio.run(measure(servers, args.requests, args.concurrency, args.rounds))
    finally:
        for process, _ in started.values():
            process.terminate()
            process.wait(timeout=10)

    print(f"chat requests (n=1, max_tokens=3), {args.concurrency} in flight, {args.rounds} rounds of {args.requests} per server")
    best: dict[str, tuple[float, float]] = {}
    for arm, rows in results.items():
        best[arm] = (max(r for r, _ in rows), min(c for _, c in rows))
        print(f"   {arm:<10} {best[arm][0]:8.0f} requests/s   {best[arm][1]:6.3f} ms server CPU per request (best round)")
    fast, base = best["fast path"], best["routed"]
    print(f"   ratio fast path/routed: throughput {fast[0] / base[0]:.2f}x, server CPU per request {fast[1] / base[1]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
