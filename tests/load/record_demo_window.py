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

`start_demo`, `fetch_recording` and `write_recording` are shared with
`tests.load.record_change_windows`, which records a window before and after
a config change on the same run.
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

__all__ = [
    "FIXTURE",
    "fetch_recording",
    "main",
    "record",
    "start_demo",
    "stop_demo",
    "write_recording",
]

FIXTURE = BASE_DIR / "tests" / "scheduler_core" / "fixtures" / "demo_window.json"


def start_demo(server: DaphneProcess, *loadgen_args: str) -> subprocess.Popen[bytes]:
    """Seed the demo config on a started `server` and start the seeded demo load on it
    (`loadgen_args` added to `manage.py loadgen`'s, e.g. a `--rate`)."""
    server.manage("seed_demo_config")
    return subprocess.Popen(
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
            *loadgen_args,
        ],
        env=server.env,
        cwd=BASE_DIR,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def fetch_recording(
    server: DaphneProcess, token: str, window: int, loadgen: subprocess.Popen[bytes]
) -> dict[str, object]:
    """The last `window` seconds' recording, while `loadgen` (checked alive) still sends."""
    if loadgen.poll() is not None:
        raise RuntimeError(f"the load generator exited early ({loadgen.returncode})")
    request = urllib.request.Request(
        f"{server.base_url}/api/v1/recording/?window_seconds={window}",
        headers={"Authorization": f"Bearer {token}"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return dict(json.loads(response.read()))


def stop_demo(server: DaphneProcess, loadgen: subprocess.Popen[bytes] | None) -> None:
    if loadgen is not None and loadgen.poll() is None:
        loadgen.terminate()
        loadgen.wait(timeout=15)
    server.cleanup()


def record(seconds: float, window: int) -> dict[str, object]:
    """Run the demo for `seconds`, then fetch the last `window` seconds' recording."""
    server = DaphneProcess(grpc=True)
    loadgen = None
    try:
        server.start()
        token = server.issue_token("viewer", "recorder")
        loadgen = start_demo(server)
        time.sleep(seconds)
        return fetch_recording(server, token, window, loadgen)
    finally:
        stop_demo(server, loadgen)


def write_recording(recording: dict[str, object], out: Path) -> None:
    """Write `recording` as compact JSON to `out` and say what it holds."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(recording, separators=(",", ":"), sort_keys=True) + "\n")
    keys = recording["keys"]
    assert isinstance(keys, list)
    total = sum(n for key in keys for _, n in key["counts"])
    print(f"wrote {out}: {total} requests in {len(keys)} keys, {out.stat().st_size} bytes")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.load.record_demo_window")
    parser.add_argument("--seconds", type=float, default=400.0, help="how long the demo runs")
    parser.add_argument("--window", type=int, default=300, help="seconds of it to keep")
    parser.add_argument("--out", type=Path, default=FIXTURE)
    args = parser.parse_args(argv)
    write_recording(record(args.seconds, args.window), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
