"""How long rl_check_environment's checks take: each bundled environment (compile, discovery,
config in the sandboxed child, a two-group dry run on the local initial policy), and a source
that hangs at import against a short bound (how far past its bound the check returns).

    python bench/bench_env_check.py [--repeats 3] [--bound 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from hermes_rl_mcp.core.env_check import check_file
from hermes_rl_mcp.settings import BUNDLED_ENV_DIR


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--bound", type=float, default=5.0, help="bound of the hanging check, seconds")
    args = parser.parse_args()
    for name in ("reverse_text", "arithmetic", "navigation"):
        seconds = []
        for _ in range(args.repeats):
            check = check_file(BUNDLED_ENV_DIR / f"{name}.py", [BUNDLED_ENV_DIR], bound=60)
            assert check.ok, check.problems
            seconds.append(check.seconds)
        print(f"{name:13s} check {statistics.median(seconds):5.2f} s median of {args.repeats} (min {min(seconds):.2f}, max {max(seconds):.2f})")
    source = (BUNDLED_ENV_DIR / "reverse_text.py").read_text().replace(
        'name = "reverse_text"', 'name = "sleepy"').replace("class ReverseTextConfig", "import time\ntime.sleep(600)\n\n\nclass ReverseTextConfig", 1)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "sleepy.py"
        path.write_text(source)
        started = time.monotonic()
        check = check_file(path, [Path(directory)], bound=args.bound)
        elapsed = time.monotonic() - started
    print(f"hanging import: bound {args.bound:g} s, answered after {elapsed:.2f} s ({check.problems[0].shown()[:60]}...)")


if __name__ == "__main__":
    main()
