"""``hermes-rl-mcp api``: run the trajectory API on its own (Uvicorn, one process)."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import signal
import importlib
import socket
import sys
import threading
from pathlib import Path
from urllib.parse import urlsplit

DEFAULT_PORT = 8000

DESCRIPTION = """Run the trajectory API: the Atropos-compatible queue between environments
(which POST scored groups) and the trainer (which GETs batches). Prints
'trajectory API listening on http://HOST:PORT' to stderr once it accepts connections
and stops cleanly on SIGTERM or Ctrl-C."""

EPILOG = """The server has no authentication: anyone who can reach it can read the queued
training data, register a trainer or reset it. It therefore binds only loopback addresses
(127.0.0.1, ::1, localhost) unless --allow-remote is given; use that only on a network you
trust, e.g. a private cluster interconnect."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hermes-rl-mcp api", description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--host", default=None, help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=int, default=None,
        help=f"port to bind; 0 picks a free one (default: the port of run.api_url from --config, else {DEFAULT_PORT})",
    )
    parser.add_argument(
        "--config", type=Path, default=None,
        help="run YAML; host and port default to those of its run.api_url",
    )
    parser.add_argument(
        "--allow-remote", action="store_true",
        help="allow binding a non-loopback address (the API is unauthenticated; see below)",
    )
    parser.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning", "error"],
        help="stderr log level; info logs registrations, each delivered batch and refused requests",
    )
    return parser


def _address_from_config(path: Path) -> tuple[str | None, int | None]:
    from hermes_rl_mcp import run_document

    api_url = run_document.load(path).run.api_url
    if not api_url:
        return None, None
    parts = urlsplit(str(api_url))
    return parts.hostname, parts.port


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _bind(host: str, port: int) -> socket.socket:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _keep_freed_memory() -> None:
    """Let glibc reuse freed request buffers instead of handing them back to the OS.

    Every scored group is a few hundred KiB of request body plus temporary arrays. With glibc's
    defaults such blocks are mmap'ed and unmapped per request, and the page faults of mapping
    them again cost more CPU than reading the group (measured ~440 faults per group). A fixed
    64 MiB mmap threshold and a 512 MiB trim threshold keep them in the heap; the price is that
    RSS stays at its high-water mark.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        m_trim_threshold, m_mmap_threshold = -1, -3
        libc.mallopt(m_mmap_threshold, 64 << 20)
        libc.mallopt(m_trim_threshold, 512 << 20)
    except (OSError, AttributeError):
        pass  # not glibc: defaults are fine, only slower


def main(argv: list[str] | None = None) -> int:
    from hermes_rl_mcp.runs.lifeline import watch_supervisor

    watch_supervisor()  # under a supervisor, end with it
    args = _parser().parse_args(argv)
    host, port = args.host, args.port
    if args.config is not None:
        try:
            config_host, config_port = _address_from_config(args.config)
        except (OSError, ValueError) as exc:
            print(f"hermes-rl-mcp api: cannot read --config {args.config}: {exc}", file=sys.stderr)
            return 2
        host = host or config_host
        port = config_port if port is None else port
    host = host or "127.0.0.1"
    port = DEFAULT_PORT if port is None else port
    if not 0 <= port <= 65535:
        print(f"hermes-rl-mcp api: --port must be 0..65535, got {port}", file=sys.stderr)
        return 2
    if not args.allow_remote and not _is_loopback(host):
        print(
            f"hermes-rl-mcp api: refusing to bind {host}: it is not a loopback address and the API "
            "has no authentication. Use 127.0.0.1, or pass --allow-remote on a trusted network.",
            file=sys.stderr,
        )
        return 2

    try:
        sock = _bind(host, port)
    except OSError as exc:
        print(f"hermes-rl-mcp api: cannot bind {host}:{port}: {exc}", file=sys.stderr)
        return 1

    _keep_freed_memory()
    import uvicorn

    from hermes_rl_mcp.api.app import create_app

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s api %(levelname)s %(message)s"))
    api_logger = logging.getLogger("hermes_rl_mcp.api")
    api_logger.addHandler(handler)
    api_logger.setLevel(args.log_level.upper())
    api_logger.propagate = False

    bound_host, bound_port = sock.getsockname()[:2]
    shown_host = f"[{bound_host}]" if ":" in bound_host else bound_host

    class _Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started:
                print(f"trajectory API listening on http://{shown_host}:{bound_port}", file=sys.stderr, flush=True)
                # Load the matrix lexer (NumPy) now that /health answers, so the first group does not wait for it.
                threading.Thread(target=importlib.import_module, args=("hermes_rl_mcp.api.lexer",), daemon=True).start()

    config = uvicorn.Config(
        create_app(),
        http="auto",  # httptools when installed (C parser), else h11
        loop="asyncio",
        ws="none",
        lifespan="off",
        access_log=False,  # the app logs what matters; a line per POST would flood the log
        log_level="warning",
        timeout_graceful_shutdown=5,
        backlog=256,
    )
    server = _Server(config)
    # Uvicorn shuts down gracefully on SIGINT/SIGTERM, then re-raises the signal with the
    # handlers that were in place before; these make that re-raise a no-op, so the process
    # exits 0 instead of dying by the signal or printing a KeyboardInterrupt traceback.
    stop_signals: list[int] = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda received, frame: stop_signals.append(received))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    print("trajectory API stopped", file=sys.stderr, flush=True)
    return 0
