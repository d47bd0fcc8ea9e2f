"""Every tinker SDK call the learner makes exists, with the parameters it passes, at both ends
of the supported range: 0.16.1 (installed with the tests; SkyRL tx serves it) and 0.38.0 (the
newest, which the hosted service needs). No network: signatures and types only."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from installs import newest_tinker_python

CHECK = Path(__file__).with_name("tinker_sdk_check.py")


@pytest.mark.parametrize("end", ["0.16.1", "0.38.0"])
def test_the_learners_calls_exist_in_the_sdk(end: str) -> None:
    python = sys.executable if end == "0.16.1" else str(newest_tinker_python())
    done = subprocess.run([python, str(CHECK)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["version"] == end
    assert report["problems"] == []
