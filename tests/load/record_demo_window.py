"""Record a window of the demo's traffic from a real Daphne, for the simulator's faithfulness test.

`python -m tests.load.record_demo_window [--seconds 400] [--window 300] [--out PATH]`

Starts Daphne in a child process on its own database (loadgen.daphne_process)
with the demo config (`manage.py seed_demo_config`), runs the demo load
generator against it (`manage.py loadgen`: websocket and Cortex gRPC
frontends and queriers, the demo's mix and latencies), waits `--seconds`,
then downloads the last `--window` seconds from `GET /api/v1/recording/`
while the traffic still flows (so the fleet is the one that served it) and
writes it to `--out` (default: the fixture the test replays,
tests/scheduler_core/fixtures/demo_window.json). Stops everything it started.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from loadgen.daphne_process import BASE_DIR, DaphneProcess

__all__ = ["FIXTURE", "main", "record"]

FIXTURE = BASE_DIR / "tests" / "scheduler_core" / "fixtures" / "demo_window.json"


def record(seconds: float, window: int) -> dict[str, object]:
    """Run the demo for `seconds`, then fetch the last `window` seconds' recording."""
    server = DaphneProcess(grpc=True)
    loadgen = None
    try:
        server.start()
        server.manage("seed_demo_config")
        token = server.issue_token("viewer", "recorder")
        loadgen = subprocess.Popen(
            [
                sys.executable,
                str(BASE_DIR / "manage.py"),
                "loadgen",
                "--url",
                server.base_url,
                "--grpc",
                f"127.0.0.1:{server.grpc_port}",
                "--seed",
                "1",
            ],
            env=server.env,
            cwd=BASE_DIR,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(seconds)
        if loadgen.poll() is not None:
            raise RuntimeError(f"the load generator exited early ({loadgen.returncode})")
        request = urllib.request.Request(
            f"{server.base_url}/api/v1/recording/?window_seconds={window}",
            headers={"Authorization": f"Bearer {token}"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return dict(json.loads(response.read()))
    finally:
        if loadgen is not None and loadgen.poll() is None:
            loadgen.terminate()
            loadgen.wait(timeout=15)
        server.cleanup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.load.record_demo_window")
    parser.add_argument("--seconds", type=float, default=400.0, help="how long the demo runs")
    parser.add_argument("--window", type=int, default=300, help="seconds of it to keep")
    parser.add_argument("--out", type=Path, default=FIXTURE)
    args = parser.parse_args(argv)
    recording = record(args.seconds, args.window)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(recording, separators=(",", ":"), sort_keys=True) + "\n")
    keys = recording["keys"]
    assert isinstance(keys, list)
    total = sum(n for key in keys for _, n in key["counts"])
    print(
        f"wrote {args.out}: {total} requests in {len(keys)} keys, {args.out.stat().st_size} bytes"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
