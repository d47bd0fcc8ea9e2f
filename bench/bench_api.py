"""Benchmark of the trajectory API: sequences/s through /scored_data + /batch, and memory.

Starts ``python -m hermes_rl_mcp api --port 0`` as a real subprocess and drives it over loopback
HTTP: several posting clients send scored groups (16 sequences x 512 tokens with tokens, masks,
inference logprobs and scores, like an environment) and pace themselves with /status-env as
environments do; one reader polls /batch like a trainer. Prints:

* sequences/s in (accepted by /scored_data) and end to end (delivered by /batch),
* server CPU seconds per 10,000 sequences,
* server RSS growth per 10,000 queued sequences (from /proc, with nothing being read),
* the CPU the benchmark's own clients used per 10,000 sequences, and the load average: the
  clients share the machine with the server, so a busy client or machine caps the rates.

Usage: python bench/bench_api.py [--seconds 10] [--posters 4] [--batch-size 256] [--gzip]
       [--parse-batches]
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import json
import os
import random
import re
import resource
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

GROUP_SIZE = 16
SEQUENCE_LENGTH = 512
PROMPT_LENGTH = 192
VOCAB = 32_000
MEMORY_SEQUENCES = 10_000


def make_group(rng: random.Random, env_id: int) -> dict:
    """One scored group shaped like real traffic: full-precision logprobs, -100 prompt masks."""
    tokens, masks, logprobs, scores = [], [], [], []
    for _ in range(GROUP_SIZE):
        row = [rng.randrange(VOCAB) for _ in range(SEQUENCE_LENGTH)]
        tokens.append(row)
        masks.append([-100] * PROMPT_LENGTH + row[PROMPT_LENGTH:])
        logprobs.append([1.0] * PROMPT_LENGTH + [-rng.expovariate(1.5) for _ in range(SEQUENCE_LENGTH - PROMPT_LENGTH)])
        scores.append(rng.random())
    return {"tokens": tokens, "masks": masks, "scores": scores, "inference_logprobs": logprobs, "env_id": env_id}


class Api:
    """A keep-alive HTTP/1.1 connection to the server."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.conn.connect()
        # http.client sends headers and body in separate writes; without TCP_NODELAY, Nagle's
        # algorithm and delayed ACKs stall every request ~40 ms. aiohttp (Atropos's client),
        # urllib3 and httpx set it too.
        self.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def call(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None) -> bytes:
        self.conn.request(method, path, body=body, headers=headers or {})
        response = self.conn.getresponse()
        data = response.read()
        if response.status != 200:
            raise RuntimeError(f"{method} {path} -> {response.status}: {data[:300]!r}")
        return data

    def json(self, method: str, path: str, payload: object | None = None) -> dict:
        body = None if payload is None else json.dumps(payload).encode()
        return json.loads(self.call(method, path, body, {"Content-Type": "application/json"}))


def start_server() -> tuple[subprocess.Popen, int]:
    process = subprocess.Popen(
        [sys.executable, "-m", "hermes_rl_mcp", "api", "--port", "0", "--log-level", "warning"],
        stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 30
    assert process.stderr is not None
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            raise RuntimeError(f"server exited early with {process.wait()}")
        match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if match:
            port = int(match.group(1))
            threading.Thread(target=lambda: [None for _ in process.stderr], daemon=True).start()  # type: ignore[union-attr]
            Api(port).json("GET", "/health")
            return process, port
    process.kill()
    raise RuntimeError("server did not start within 30 s")


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def cpu_seconds(pid: int) -> tuple[float, float]:
    """User and system CPU seconds of a process."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / ticks, int(fields[12]) / ticks


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def setup_run(port: int, batch_size: int) -> int:
    api = Api(port)
    api.call("GET", "/reset_data")
    api.json("POST", "/register", {
        "batch_size": batch_size, "max_token_len": SEQUENCE_LENGTH, "num_steps": 1_000_000,
        "checkpoint_dir": "", "save_checkpoint_interval": -1, "starting_step": 0,
        "wandb_group": "bench", "wandb_project": "bench",
    })
    reply = api.json("POST", "/register-env", {
        "max_token_length": SEQUENCE_LENGTH, "desired_name": "bench", "weight": 1.0, "group_size": GROUP_SIZE,
    })
    assert reply["status"] == "success", reply
    return int(reply["env_id"])


def measure_memory(pid: int, port: int, batch_size: int, body: bytes, headers: dict) -> float:
    """Server RSS growth per 10,000 queued sequences (bytes)."""
    setup_run(port, batch_size)
    api = Api(port)
    for _ in range(2 * batch_size // GROUP_SIZE):  # warm allocator and buffers, then drain
        api.call("POST", "/scored_data", body, headers)
    while json.loads(api.call("GET", "/batch"))["batch"] is not None:
        pass
    before = rss_bytes(pid)
    groups = MEMORY_SEQUENCES // GROUP_SIZE
    for _ in range(groups):
        api.call("POST", "/scored_data", body, headers)
    after = rss_bytes(pid)
    status = api.json("GET", "/status")
    assert status["queue_size"] == groups, status
    return (after - before) * MEMORY_SEQUENCES / (groups * GROUP_SIZE)


@dataclass
class Counters:
    lock: threading.Lock = field(default_factory=threading.Lock)
    posted_sequences: int = 0
    delivered_sequences: int = 0
    batches: int = 0
    errors: list = field(default_factory=list)


@dataclass
class Throughput:
    rate_in: float
    rate_out: float
    server_user_per_10k: float
    server_system_per_10k: float
    client_per_10k: float
    counters: Counters


def run_throughput(
    port: int, pid: int, bodies: list[bytes], headers: dict, args: argparse.Namespace
) -> Throughput:
    env_id = setup_run(port, args.batch_size)
    counters = Counters()
    stop = threading.Event()
    measuring = threading.Event()
    max_queued_groups = 4 * args.batch_size // GROUP_SIZE  # environments pause beyond ~4 batches

    def poster(index: int) -> None:
        api = Api(port)
        paused = False
        try:
            for n in range(10**9):
                if stop.is_set():
                    return
                if n % 4 == 0:
                    status = api.json("GET", f"/status-env?env_id={env_id}")
                    paused = status["self_queue_size"] > max_queued_groups
                if paused:
                    time.sleep(0.002)
                    n = -1
                    continue
                api.call("POST", "/scored_data", bodies[(index + n) % len(bodies)], headers)
                if measuring.is_set():
                    with counters.lock:
                        counters.posted_sequences += GROUP_SIZE
        except Exception as exc:  # noqa: BLE001 - reported below
            counters.errors.append(repr(exc))

    def reader() -> None:
        api = Api(port)
        try:
            while not stop.is_set():
                data = api.call("GET", "/batch")
                if data.startswith(b'{"batch":null'):
                    time.sleep(0.001)
                    continue
                if args.parse_batches or counters.batches == 0:
                    batch = json.loads(data)["batch"]
                    sequences = sum(len(group["tokens"]) for group in batch)
                    if sequences != args.batch_size:
                        raise RuntimeError(f"batch of {sequences} sequences, expected {args.batch_size}")
                else:
                    sequences = data.count(b'"tokens":') * GROUP_SIZE
                if measuring.is_set():
                    with counters.lock:
                        counters.delivered_sequences += sequences
                        counters.batches += 1
        except Exception as exc:  # noqa: BLE001
            counters.errors.append(repr(exc))

    threads = [threading.Thread(target=poster, args=(i,)) for i in range(args.posters)]
    threads.append(threading.Thread(target=reader))
    for thread in threads:
        thread.start()
    time.sleep(min(2.0, args.seconds / 4))  # warm-up
    user_start, system_start = cpu_seconds(pid)
    client_start = own_cpu_seconds()
    start = time.perf_counter()
    measuring.set()
    time.sleep(args.seconds)
    measuring.clear()
    elapsed = time.perf_counter() - start
    user_end, system_end = cpu_seconds(pid)
    client = own_cpu_seconds() - client_start
    stop.set()
    for thread in threads:
        thread.join(timeout=30)
    per_10k = 10_000 / max(counters.delivered_sequences, 1)
    return Throughput(
        rate_in=counters.posted_sequences / elapsed,
        rate_out=counters.delivered_sequences / elapsed,
        server_user_per_10k=(user_end - user_start) * per_10k,
        server_system_per_10k=(system_end - system_start) * per_10k,
        client_per_10k=client * per_10k,
        counters=counters,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="measured seconds of traffic")
    parser.add_argument("--posters", type=int, default=4, help="posting clients (threads)")
    parser.add_argument("--batch-size", type=int, default=256, help="trainer batch size in sequences")
    parser.add_argument("--gzip", action="store_true", help="gzip request bodies, as Atropos environments do")
    parser.add_argument("--parse-batches", action="store_true", help="reader json-decodes every batch")
    args = parser.parse_args()

    rng = random.Random(0)
    groups = [make_group(rng, 0) for _ in range(4)]
    bodies = [json.dumps(g).encode() for g in groups]  # json.dumps defaults, as Atropos clients send
    headers = {"Content-Type": "application/json"}
    if args.gzip:
        bodies = [gzip.compress(b) for b in bodies]
        headers["Content-Encoding"] = "gzip"

    process, port = start_server()
    try:
        memory = measure_memory(process.pid, port, args.batch_size, bodies[0], headers)
        result = run_throughput(port, process.pid, bodies, headers, args)
    finally:
        process.terminate()
        code = process.wait(timeout=15)

    raw_kib = len(json.dumps(groups[0]).encode()) / GROUP_SIZE / 1024
    print(f"trajectory API benchmark: {args.posters} posting clients + 1 /batch reader, {args.seconds:g} s, "
          f"groups of {GROUP_SIZE} x {SEQUENCE_LENGTH} tokens, batch_size {args.batch_size}, "
          f"{'gzip' if args.gzip else 'plain JSON'} bodies ({raw_kib:.1f} KiB JSON per sequence), "
          f"reader {'parses every batch' if args.parse_batches else 'counts groups'}")
    counters = result.counters
    server_cpu = result.server_user_per_10k + result.server_system_per_10k
    print(f"  sequences/s in (accepted by /scored_data): {result.rate_in:,.0f}")
    print(f"  sequences/s end to end (delivered by /batch): {result.rate_out:,.0f}  ({counters.batches} batches)")
    print(f"  server CPU per 10,000 sequences: {server_cpu:.2f} s "
          f"(user {result.server_user_per_10k:.2f}, system {result.server_system_per_10k:.2f})")
    print(f"  server RSS per 10,000 queued sequences: {memory / 2**20:,.1f} MiB")
    print(f"  benchmark clients' CPU per 10,000 sequences: {result.client_per_10k:.2f} s")
    print(f"  load average (1 min) at the end, on {os.cpu_count()} CPUs: {os.getloadavg()[0]:.2f}")
    print(f"  server exit code after SIGTERM: {code}")
    if counters.errors:
        print(f"  client errors: {counters.errors[:3]}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
