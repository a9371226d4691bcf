"""`bisector cleanup` still cleans up a procs run directory recorded before issue 27 moved
the procs backend into bisector/backends/procs/ (its teardown step names the old module,
`python -m bisector.backends.procs_stop`, as procs_cluster.py's `stop_step` wrote it
before the move: see `git show f916d41~1:bisector/backends/procs_cluster.py`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bisector.backends.procs.stop import TAG_ENV
from tests.helpers.nightly import cli_env
from tests.helpers.processes import gone

TAG = "bisector-old-0-4f2a"


def _old_record(run_dir: Path, root: Path) -> None:
    """resources.json as a run before the move left it after a crash (the format of
    bisector/backends/resources.py `Resource.to_json`, the step of the old `stop_step`)."""
    record = {
        "version": 1,
        "resources": [{
            "id": "procs/cluster/0",
            "backend": "procs",
            "what": f"local cluster {TAG} (etcd, kube-apiserver, hollow nodes)",
            "recorded_at": "2026-11-30T09:12:44+00:00",
            "teardown": [
                {
                    "cmd": [
                        sys.executable, "-m", "bisector.backends.procs_stop",
                        "--tag", TAG, "--remove", str(root), "--grace", "5",
                    ],
                    "cwd": None,
                    "env": {},
                    "timeout": 125.0,
                }
            ],
            "fallback": [],
        }],
    }  # fmt: skip
    run_dir.mkdir(parents=True)
    (run_dir / "resources.json").write_text(json.dumps(record, indent=2), encoding="utf-8")


def test_cleanup_replays_an_old_procs_teardown_step(tmp_path: Path) -> None:
    run_dir, root = tmp_path / "run", tmp_path / "cluster-root"
    (root / "etcd").mkdir(parents=True)
    (root / "etcd" / "member").write_text("data")
    _old_record(run_dir, root)
    # A daemon of that cluster, left running by the crash: tagged as the backend tags them.
    daemon = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"],
        env={**cli_env(), TAG_ENV: TAG},
        start_new_session=True,
    )
    try:
        result = subprocess.run(
            [sys.executable, "-m", "bisector", "cleanup", "--run-dir", str(run_dir)],
            capture_output=True, text=True, check=False, env=cli_env(), timeout=120,
        )  # fmt: skip
        assert result.returncode == 0, result.stdout + result.stderr
        daemon.wait(timeout=10)  # reaped here: it was this test's child
        assert gone(daemon.pid)
        assert not root.exists()
        assert not (run_dir / "resources.json").exists()
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
