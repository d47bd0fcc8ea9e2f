"""The run dashboard in a real browser: headless Chromium (Debian's package) shows it in a host page
that uses the MCP Apps extension's own host bridge, connected over stdio to the real server.

The dashboard follows a short local run to completion with its curves drawn, and its stop button
stops a second run through the host, which asks the user first. The harness (a Node script, see
apps_host/) reports what the page showed; this test judges that and checks that every process
the run, the server and the browser started is gone. The screenshot goes into docs/ for the README.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import uuid
from pathlib import Path

from PIL import Image

from hermes_rl_mcp import runs
from hermes_rl_mcp.runs.models import ACTIVE_STATES

from installs import REPO, apps_host, chromium
from mcp_helpers import console_script
from test_mcp_runs import alive

HARNESS = Path(__file__).parent / "apps_host" / "harness.mjs"
SCREENSHOT = REPO / "docs" / "dashboard.png"
ENVIRONMENT = "arithmetic"  # learns visibly within a few steps, which makes a clear screenshot
FIRST_RUN_STEPS = 24
HARNESS_TIMEOUT_S = 480
MAX_SCREENSHOT_BYTES = 60_000


def processes_holding(needle: bytes, where: str) -> list[int]:
    """Pids whose /proc/<pid>/<where> (environ or cmdline) contains ``needle``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if needle in (entry / where).read_bytes() and alive(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_the_dashboard_follows_a_run_and_stops_another_in_headless_chromium(tmp_path: Path, isolated_state: Path) -> None:
    try:
        follow_and_stop_in_the_browser(tmp_path, isolated_state)
    finally:
        # Runs outlive the server by design; a harness that failed half-way may leave one going.
        for run in runs.list_runs(state=isolated_state).runs:
            if run.status in ACTIVE_STATES:
                runs.stop_run(run.run_id, state=isolated_state)


def follow_and_stop_in_the_browser(tmp_path: Path, isolated_state: Path) -> None:
    browser = chromium()
    node, modules = apps_host()
    marker = f"apps-{uuid.uuid4().hex}"
    profile = tmp_path / "chromium-profile"
    profile.mkdir()
    shot = tmp_path / "dashboard.png"
    env = {
        "PATH": f"{node.parent}{os.pathsep}{os.environ['PATH']}",
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "APPS_HOST_MODULES": str(modules),
        "HERMES_RL_SERVER": console_script(),
        "HERMES_RL_HOME": str(isolated_state),
        "HERMES_RL_TEST_MARKER": marker,
        "CHROMIUM": str(browser),
        "BROWSER_PROFILE": str(profile),
        "SCREENSHOT": str(shot),
        "ENVIRONMENT": ENVIRONMENT,
        "FIRST_RUN_STEPS": str(FIRST_RUN_STEPS),
    }
    harness = subprocess.Popen([str(node), str(HARNESS)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=env, start_new_session=True)
    try:
        out, err = harness.communicate(timeout=HARNESS_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(harness.pid, signal.SIGKILL)
        out, err = harness.communicate()
        raise AssertionError(f"the harness did not finish in {HARNESS_TIMEOUT_S} s:\n{out[-2000:]}\n{err[-3000:]}") from None
    lines = out.strip().splitlines()
    assert lines, f"the harness printed no report (exit {harness.returncode}):\n{err[-3000:]}"
    report = json.loads(lines[-1])
    assert harness.returncode == 0 and "error" not in report, f"{report.get('error')}\n{err[-3000:]}"

    # The host spoke the protocol today's hosts speak, and the page stayed inside its sandbox.
    assert report["protocol_version"] == "2025-11-25"
    assert report["server_extensions"] == {"io.modelcontextprotocol/ui": {}}
    assert report["blocked"] == [], "the dashboard asked for something outside the page"
    assert report["console_errors"] == []

    # First run: the status followed the run to completed, and the curves have their points.
    first = report["first"]
    assert report["statuses_seen"][:report["statuses_seen"].index("completed") + 1][-1] == "completed"
    assert {"starting", "running"} & set(report["statuses_seen"]), report["statuses_seen"]
    assert first["environment"] == f"{ENVIRONMENT} · local"
    assert first["progress"].startswith(f"step {FIRST_RUN_STEPS}/{FIRST_RUN_STEPS}")
    assert first["curves"]["train/percent_correct"] >= FIRST_RUN_STEPS // 2, first["curves"]
    assert first["curves"]["eval/percent_correct"] >= 2 and first["curves"]["train/loss"] >= 2
    assert first["best_marked"] == 1 and first["checkpoints"] >= 1 and first["stop_disabled"]
    assert first["log"].strip()
    assert runs.check_status(report["first_run"], state=isolated_state).status == "completed"

    # Second run: the dashboard's stop button went through the host, which asked the user; the
    # first time the user said no, the run went on and the dashboard said why.
    second = report["second_run"]
    assert report["dialogs"] == [f"The dashboard asks to stop run {second}. Allow?"] * 2
    assert report["after_decline"] == "running"
    assert "the user did not allow the stop" in report["declined_notice"], report["declined_notice"]
    assert report["declined_notice_later"] == report["declined_notice"]
    assert report["second_status_shown"] == "stopped"
    stopped = runs.check_status(second, state=isolated_state)
    assert stopped.status == "stopped" and report["second_after_stop"]["status"] == "stopped"
    running = report["second_running"]
    pids = [c["pid"] for c in running["components"].values() if c["pid"]] + [running["supervisor_pid"]]
    assert len(pids) >= 4, running["components"]
    assert [pid for pid in pids if alive(pid)] == [], "processes of the stopped run are still alive"

    # Nothing the test started is left: not the server, not the browser.
    assert processes_holding(f"HERMES_RL_TEST_MARKER={marker}".encode(), "environ") == []
    assert processes_holding(str(profile).encode(), "cmdline") == []

    # The README's picture, in a 128-colour palette: a third of the size, and as clear. The
    # checkout's copy is replaced only when asked (HERMES_RL_UPDATE_SCREENSHOT=1), so a test run
    # leaves the tracked files as they were.
    small = tmp_path / "dashboard-small.png"
    with Image.open(shot) as image:
        assert image.size[0] >= 800 and image.size[1] >= 500, image.size
        image.convert("RGB").quantize(colors=128).save(small, format="PNG", optimize=True)
    assert small.stat().st_size <= MAX_SCREENSHOT_BYTES, small.stat().st_size
    if os.environ.get("HERMES_RL_UPDATE_SCREENSHOT") == "1":
        shutil.copyfile(small, SCREENSHOT)
