#!/usr/bin/env python3
"""Set up a self-hosted SkyRL tx engine (a Tinker-API server) for tests, CPU only.

Stdlib only; run with any CPython >= 3.11:

    python3 tests/engine/setup_engine.py            # install if needed, print JSON paths
    python3 tests/engine/setup_engine.py --check    # only report; exit 1 if not set up

What it does, idempotently:

1. Creates a virtual environment outside the repository, in
   ``$HERMES_RL_ENGINE_CACHE/skyrl-tx-0.3.0/venv`` (``HERMES_RL_ENGINE_CACHE`` defaults to
   ``~/.cache/hermes-rl-mcp/engine``), and installs into it:
   ``torch==2.13.0`` first (on these machines pip takes the CPU wheel that lies on disk; a
   plain ``torch``, pulled in by ``peft``, would resolve to a multi-GB CUDA build), then
   ``skyrl-tx==0.3.0`` without its declared dependencies, then only what the Tinker API
   server and the jax engine import (jax/flax/optax without CUDA extras, ``transformers<5``,
   ``peft``, FastAPI, SQLModel, ...) and the ``tinker==0.16.1`` SDK, every version pinned by
   ``engine-constraints.txt`` beside this file. If the lean set fails its import check, the
   full declared dependency set of ``skyrl-tx[tinker]`` is installed as a fallback.
2. Builds the tiny Qwen3 model (``build_tiny_model.py``, run with the venv's python) into
   ``.../skyrl-tx-0.3.0/models/tiny-qwen3-<hash>``.

A marker file records each finished step together with a hash of its inputs, so a second
call returns at once. Concurrent calls serialise on a lock file. The JSON printed on stdout
names ``engine_python``, ``model_dir`` and more; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

SKYRL_TX_VERSION = "0.3.0"
TINKER_VERSION = "0.16.1"
TORCH_REQUIREMENT = "torch==2.13.0"

HERE = Path(__file__).resolve().parent
CONSTRAINTS = HERE / "engine-constraints.txt"
BUILD_SCRIPT = HERE / "build_tiny_model.py"
CACHE_ENV = "HERMES_RL_ENGINE_CACHE"
DEFAULT_CACHE = Path("~/.cache/hermes-rl-mcp/engine")

# What `tx.tinker.api`, `tx.tinker.engine` and the jax backend import, plus the SDK. The
# extras that skyrl-tx declares but this path never imports (datasets/pyarrow/pandas,
# hf_transfer, pillow, typer, asyncpg, psycopg2, fastapi's "standard" CLI bundle) are left out.
LEAN_REQUIREMENTS = [
    f"tinker=={TINKER_VERSION}",
    "jax",
    "jaxlib",
    "flax",
    "optax",
    "transformers<5",
    "tokenizers",
    "safetensors",
    "peft",
    "cloudpathlib",
    "rich",
    "pydantic",
    "fastapi",
    "uvicorn",
    "sqlmodel",
    "sqlalchemy[asyncio]",
    "aiosqlite",
    "httpx",
    "numpy",
]
FULL_REQUIREMENTS = [f"skyrl-tx[tinker]=={SKYRL_TX_VERSION}", f"tinker=={TINKER_VERSION}", "jax", "flax", "optax", "transformers<5", "tokenizers"]
IMPORT_CHECK = "import tx.tinker.api, tx.tinker.engine, tx.tinker.backends.jax, tinker, peft, transformers, torch; print(tinker.__version__ if hasattr(tinker, '__version__') else '')"

MODEL_SEED = 0


def log(msg: str) -> None:
    print(f"[setup_engine] {msg}", file=sys.stderr, flush=True)


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE).expanduser().resolve()


def engine_dir() -> Path:
    return cache_root() / f"skyrl-tx-{SKYRL_TX_VERSION}"


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _sha(*parts: bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p)
        h.update(b"\0")
    return h.hexdigest()[:16]


def venv_key() -> str:
    spec = json.dumps(
        {
            "skyrl_tx": SKYRL_TX_VERSION,
            "torch": TORCH_REQUIREMENT,
            "lean": LEAN_REQUIREMENTS,
            "full": FULL_REQUIREMENTS,
            "python": list(sys.version_info[:2]),
        },
        sort_keys=True,
    ).encode()
    return _sha(spec, CONSTRAINTS.read_bytes())


def model_key() -> str:
    return _sha(BUILD_SCRIPT.read_bytes(), str(MODEL_SEED).encode())


def read_marker(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def write_marker(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    os.replace(tmp, path)


def dir_bytes(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, f)).st_size
    return total


@contextlib.contextmanager
def locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def run(cmd: list[str], logfile: Path, env: dict | None = None) -> None:
    log("$ " + " ".join(cmd))
    with open(logfile, "a") as out:
        out.write("$ " + " ".join(cmd) + "\n")
        out.flush()
        proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        tail = logfile.read_text(errors="replace").splitlines()[-30:]
        raise RuntimeError(f"command failed ({proc.returncode}): {' '.join(cmd)}\n" + "\n".join(tail))


def pip_env() -> dict:
    env = dict(os.environ)
    env.setdefault("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    env["PIP_NO_INPUT"] = "1"
    env["PIP_PROGRESS_BAR"] = "off"
    return env


def import_check(py: Path) -> bool:
    env = dict(os.environ, JAX_PLATFORMS="cpu", HF_HUB_OFFLINE="1", TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run([str(py), "-c", IMPORT_CHECK], capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        log("import check failed:\n" + proc.stderr[-3000:])
    return proc.returncode == 0


def ensure_venv(force: bool = False) -> dict:
    edir = engine_dir()
    venv = edir / "venv"
    marker = edir / "venv.ok"
    key = venv_key()
    info = read_marker(marker)
    if not force and info and info.get("key") == key and venv_python(venv).exists():
        return dict(info, installed_now=False)

    logfile = edir / "install.log"
    if venv.exists():
        log(f"removing stale venv {venv}")
        shutil.rmtree(venv)
    marker.unlink(missing_ok=True)
    edir.mkdir(parents=True, exist_ok=True)
    logfile.write_text("")
    started = time.monotonic()
    log(f"creating venv {venv} (log: {logfile})")
    run([sys.executable, "-m", "venv", str(venv)], logfile)
    py = str(venv_python(venv))
    pip = [py, "-m", "pip", "install", "--quiet", "-c", str(CONSTRAINTS)]
    env = pip_env()

    # torch first and alone, so peft's bare "torch" requirement is already satisfied by it.
    t0 = time.monotonic()
    run(pip + [TORCH_REQUIREMENT], logfile, env)
    torch_seconds = time.monotonic() - t0
    torch_version = subprocess.run(
        [py, "-c", "import importlib.metadata as m; print(m.version('torch'))"], capture_output=True, text=True
    ).stdout.strip()
    if "+cpu" not in torch_version:
        log(f"warning: torch {torch_version} is not a +cpu build; the venv may be several GB larger")

    run(pip + ["--no-deps", f"skyrl-tx=={SKYRL_TX_VERSION}"], logfile, env)
    run(pip + LEAN_REQUIREMENTS, logfile, env)
    mode = "lean"
    if not import_check(venv_python(venv)):
        log("lean install is missing something; installing the full declared dependency set")
        # Without the constraints file: it pins only the lean set, which the full set may not fit.
        run([py, "-m", "pip", "install", "--quiet", TORCH_REQUIREMENT, *FULL_REQUIREMENTS], logfile, env)
        mode = "full"
        if not import_check(venv_python(venv)):
            raise RuntimeError(f"engine venv {venv} does not import tx.tinker; see {logfile}")

    seconds = time.monotonic() - started
    versions = subprocess.run(
        [py, "-c", "import importlib.metadata as m, json; print(json.dumps({d: m.version(d) for d in "
         "['skyrl-tx', 'tinker', 'jax', 'jaxlib', 'flax', 'optax', 'torch', 'transformers', 'tokenizers', 'peft']}))"],
        capture_output=True, text=True,
    ).stdout.strip()
    info = {
        "key": key,
        "venv": str(venv),
        "engine_python": py,
        "mode": mode,
        "install_seconds": round(seconds, 1),
        "torch_install_seconds": round(torch_seconds, 1),
        "venv_bytes": dir_bytes(venv),
        "versions": json.loads(versions or "{}"),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    write_marker(marker, info)
    log(f"venv ready in {seconds:.0f} s, {info['venv_bytes'] / 2**30:.2f} GiB ({mode})")
    return dict(info, installed_now=True)


def ensure_model(py: str, force: bool = False) -> dict:
    key = model_key()
    models = engine_dir() / "models"
    model_dir = models / f"tiny-qwen3-{key}"
    marker = models / f"tiny-qwen3-{key}.ok"
    info = read_marker(marker)
    if not force and info and (model_dir / "config.json").exists():
        return dict(info, built_now=False)
    models.mkdir(parents=True, exist_ok=True)
    tmp = models / f".tiny-qwen3-{key}.building"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(model_dir, ignore_errors=True)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    started = time.monotonic()
    log(f"building tiny model into {model_dir}")
    proc = subprocess.run(
        [py, str(BUILD_SCRIPT), str(tmp), "--seed", str(MODEL_SEED)],
        capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"build_tiny_model.py failed:\n{proc.stderr[-3000:]}")
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    os.replace(tmp, model_dir)
    summary["output_dir"] = str(model_dir)
    info = {"key": key, "model_dir": str(model_dir), "build_seconds": round(time.monotonic() - started, 1), **summary}
    write_marker(marker, info)
    # Builds from older versions of build_tiny_model.py are of no further use.
    for old in models.glob("tiny-qwen3-*"):
        if old.name not in (model_dir.name, marker.name):
            shutil.rmtree(old, ignore_errors=True) if old.is_dir() else old.unlink(missing_ok=True)
    return dict(info, built_now=True)


def ensure(force: bool = False) -> dict:
    """Install what is missing and return the paths (the same dict the CLI prints)."""
    edir = engine_dir()
    # Fast path without the lock: both markers present and current.
    venv_info = read_marker(edir / "venv.ok")
    model_info = read_marker(edir / "models" / f"tiny-qwen3-{model_key()}.ok")
    if not (
        not force
        and venv_info
        and venv_info.get("key") == venv_key()
        and Path(venv_info.get("engine_python", "")).exists()
        and model_info
        and Path(model_info.get("model_dir", ""), "config.json").exists()
    ):
        with locked(edir.parent / f".skyrl-tx-{SKYRL_TX_VERSION}.lock"):
            venv_info = ensure_venv(force)
            model_info = ensure_model(venv_info["engine_python"], force)
    else:
        venv_info = dict(venv_info, installed_now=False)
        model_info = dict(model_info, built_now=False)
    return {
        "engine_python": venv_info["engine_python"],
        "venv": venv_info["venv"],
        "model_dir": model_info["model_dir"],
        "cache_dir": str(edir),
        "skyrl_tx_version": SKYRL_TX_VERSION,
        "tinker_version": TINKER_VERSION,
        "tinker_python": venv_info["engine_python"],
        "install_mode": venv_info.get("mode"),
        "install_seconds": venv_info.get("install_seconds"),
        "venv_bytes": venv_info.get("venv_bytes"),
        "versions": venv_info.get("versions"),
        "installed_now": venv_info["installed_now"],
        "model_built_now": model_info["built_now"],
        "model_vocab_size": model_info.get("vocab_size"),
        "model_eos_token_id": model_info.get("eos_token_id"),
        "model_parameters": model_info.get("parameters"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Set up the SkyRL tx engine venv and tiny model (cached).")
    parser.add_argument("--check", action="store_true", help="only report; exit 1 when not set up")
    parser.add_argument("--force", action="store_true", help="rebuild the venv and the model")
    args = parser.parse_args(argv)
    if sys.version_info < (3, 11):
        log("needs Python >= 3.11 (skyrl-tx requires it)")
        return 2
    if args.check:
        edir = engine_dir()
        venv_info = read_marker(edir / "venv.ok")
        model_info = read_marker(edir / "models" / f"tiny-qwen3-{model_key()}.ok")
        ok = bool(venv_info and venv_info.get("key") == venv_key() and model_info)
        print(json.dumps({"ready": ok, "cache_dir": str(edir),
                          "engine_python": (venv_info or {}).get("engine_python"),
                          "model_dir": (model_info or {}).get("model_dir")}))
        return 0 if ok else 1
    try:
        result = ensure(force=args.force)
    except RuntimeError as exc:
        log(str(exc))
        return 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
