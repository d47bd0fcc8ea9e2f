"""Environment-side cost of policy requests: the keep-alive JSON client against httpx.

    python bench/bench_policy_client.py [--requests 3000] [--concurrency 32]

A child process serves the real local policy server (an untrained policy) on a loopback port.
This process then sends the same chat requests as a multi-turn environment does (n=1, a few
tokens, logprobs) through ``PolicyClient``, once over httpx (the baseline, as every policy
request went before) and once over ``HTTPJSONClient``, alternating rounds so both see the
same server load. Printed for each: requests per second and this process's CPU milliseconds
per request, and the ratios (keep-alive client / httpx).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import time
from typing import Any

import httpx

from hermes_rl_mcp.sdk.base import APIServerConfig
from hermes_rl_mcp.sdk.policy_client import PolicyClient

MESSAGES = [{"role": "user", "content": "at 2 goal 5 L/R"}]


def serve(port: int) -> None:
    import numpy as np
    import uvicorn

    from hermes_rl_mcp.trainer.model import PolicyModel
    from hermes_rl_mcp.trainer.policy_server import PolicyHolder, build_app
    from hermes_rl_mcp.trainer.tokenizer import CharTokenizer

    holder = PolicyHolder(model=PolicyModel.initialise(CharTokenizer()), default_temperature=1.0, rng=np.random.default_rng(0))
    uvicorn.run(build_app(holder), host="127.0.0.1", port=port, log_level="warning", access_log=False, http="httptools")


class HttpxPolicyClient(PolicyClient):
    """The same client, forced onto httpx for plain-HTTP endpoints (the baseline)."""

    def _client(self) -> tuple[APIServerConfig, Any]:
        server = self.servers[0]
        if 0 not in self._clients:
            self._clients[0] = httpx.AsyncClient(
                base_url=str(server.base_url).rstrip("/") + "/",
                timeout=server.timeout,
                limits=httpx.Limits(max_connections=max(1, min(server.num_max_requests_at_once, 64))),
            )
        return server, self._clients[0]


async def one_round(client: PolicyClient, requests: int, concurrency: int) -> tuple[float, float]:
    """(requests per second, client CPU ms per request)."""
    remaining = iter(range(requests))

    async def worker() -> None:
        for _ in remaining:
            await client.chat(MESSAGES, n=1, max_tokens=3)

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return requests / wall, 1000 * cpu / requests


async def measure(url: str, requests: int, concurrency: int, rounds: int) -> dict[str, list[tuple[float, float]]]:
    config = [APIServerConfig(model_name="bench", base_url=url, api_key="x")]
    clients = {"httpx": HttpxPolicyClient(config), "keep-alive": PolicyClient(config)}
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in clients}
    for client in clients.values():  # warm up: connections, first-call imports
        await one_round(client, 50, concurrency)
    for _ in range(rounds):
        for name, client in clients.items():
            results[name].append(await one_round(client, requests, concurrency))
    for client in clients.values():
        await client.aclose()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000, help="requests per round (default 2000)")
    parser.add_argument("--concurrency", type=int, default=32, help="requests in flight (default 32: 4 groups of 8 episodes)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per client (default 3)")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is not None:
        serve(args.serve)
        return 0

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port)], env=env)
    try:
        url = f"http://127.0.0.1:{port}/v1"
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                print("the policy server did not start", file=sys.stderr)
                return 1
            time.sleep(0.1)
        results = asyncio.run(measure(url, args.requests, args.concurrency, args.rounds))
    finally:
        server.terminate()
        server.wait(timeout=10)

    print(f"chat requests (n=1, max_tokens=3), {args.concurrency} in flight, {args.rounds} rounds of {args.requests}")
    best: dict[str, tuple[float, float]] = {}
    for name, rows in results.items():
        rate = max(r for r, _ in rows)
        cpu = min(c for _, c in rows)
        best[name] = (rate, cpu)
        print(f"   {name:<11} {rate:8.0f} requests/s   {cpu:6.3f} ms client CPU per request (best round)")
    fast, base = best["keep-alive"], best["httpx"]
    print(f"   ratio keep-alive/httpx: throughput {fast[0] / base[0]:.2f}x, client CPU per request {fast[1] / base[1]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
