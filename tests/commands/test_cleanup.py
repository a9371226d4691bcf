"""`bisector cleanup`: a crashed run's recorded clusters are torn down."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bisector.backends.base import BackendContext, Candidate
from bisector.backends.gce.backend import SERVER_TARBALL, GceBackend
from bisector.backends.kind.backend import KindBackend
from bisector.backends.resources import Resource, ResourceRecord
from bisector.backends.steps import step
from bisector.commands.cleanup import cleanup
from bisector.config import Section
from tests.helpers.fake_proc import FakeProc

COMMIT = "f93a270edcefc3780247ae89eea02cd13b81237b"


def _crashed_gce_run(tmp_path: Path, fake: FakeProc) -> tuple[Path, Candidate, Path]:
    """setup + build + launch, then the process dies: no teardown, no close."""
    base = tmp_path / "base"
    (base / SERVER_TARBALL).parent.mkdir(parents=True)
    (base / SERVER_TARBALL).write_text("x")
    run_dir = tmp_path / "run"
    section = Section(
        {"project": "p", "base_checkout": str(base), "build_cache_dir": str(tmp_path / "c")},
        "gce.toml",
    )
    backend = GceBackend(BackendContext(section, run_dir, 60), sleep=lambda s: None)
    wt = tmp_path / "wt"
    wt.mkdir()
    cand = Candidate(COMMIT, wt, run_dir / "e1")
    backend.setup()
    backend.launch(cand)
    (run_dir / "journal.jsonl").touch()  # as a run's: what marks the directory as a run
    fake.calls.clear()
    return run_dir, cand, base


def test_cleanup_after_a_crash_tears_down_kubemark_then_base(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = FakeProc.install(monkeypatch)
    run_dir, cand, base = _crashed_gce_run(tmp_path, fake)
    assert ResourceRecord(run_dir).ids() == ["gce/base/kubemark", "gce/kubemark/kubemark"]

    assert cleanup(run_dir) == 0
    assert fake.lines == ["./test/kubemark/stop-kubemark.sh", "./cluster/kube-down.sh"]
    stop, down = fake.calls
    assert stop.cwd == str(cand.worktree) and stop.env["INSTANCE_PREFIX"] == "kubemark"
    assert down.cwd == str(base) and down.env["KUBE_GCE_INSTANCE_PREFIX"] == "kubemark"
    assert not (run_dir / "resources.json").exists()
    out = capsys.readouterr().out
    assert "tearing down kubemark master kubemark-kubemark-master" in out
    assert "removed base cluster kubemark" in out
    assert cleanup(run_dir) == 0  # idempotent: nothing left
    assert len(fake.calls) == 2


def test_cleanup_uses_gcloud_fallback_when_the_worktree_is_gone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = FakeProc.install(monkeypatch)
    run_dir, cand, _ = _crashed_gce_run(tmp_path, fake)
    shutil.rmtree(cand.worktree)
    fake.on("addresses delete", code=1, stderr="ERROR: The resource 'x-ip' was not found")
    assert cleanup(run_dir) == 0
    assert [c.argv[:4] for c in fake.calls] == [
        ["kubectl", "--kubeconfig", str(run_dir / "gce" / "base-0.kubeconfig"), "delete"],
        ["gcloud", "compute", "instances", "delete"],
        ["gcloud", "compute", "disks", "delete"],
        ["gcloud", "compute", "disks", "delete"],  # ${MASTER_NAME}-event-pd (EVENT_PD=true)
        ["gcloud", "compute", "addresses", "delete"],
        ["gcloud", "compute", "firewall-rules", "delete"],
        ["./cluster/kube-down.sh"],
    ]
    assert fake.calls[1].argv[4:] == [
        "kubemark-kubemark-master", "--project", "p", "--zone", "us-central1-b", "--quiet",
    ]  # fmt: skip
    assert fake.calls[3].argv[4] == "kubemark-kubemark-master-event-pd"
    assert fake.calls[4].argv[-3:] == ["--region", "us-central1", "--quiet"]


def test_failed_teardown_stays_recorded_and_exits_1(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = FakeProc.install(monkeypatch)
    run_dir, _, _ = _crashed_gce_run(tmp_path, fake)
    fake.on("kube-down.sh", code=1, stderr="ERROR: (gcloud) permission denied")
    assert cleanup(run_dir) == 1
    assert ResourceRecord(run_dir).ids() == ["gce/base/kubemark"]


def test_kind_crash_then_cleanup_deletes_the_cluster(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = FakeProc.install(monkeypatch)
    fake.on("git describe", stdout="v1.30.0\n").on("rev-parse", stdout="c" * 40)
    fake.on("kind create cluster", raises=KeyboardInterrupt())  # the run dies here
    run_dir = tmp_path / "run"
    backend = KindBackend(BackendContext(Section({}, "kind.toml"), run_dir), sleep=lambda s: None)
    cand = Candidate(COMMIT, tmp_path, run_dir / "e1", slot=2)
    backend.build(cand)
    with pytest.raises(KeyboardInterrupt):
        backend.launch(cand)
    fake.calls.clear()
    assert cleanup(run_dir) == 0
    assert fake.lines == [
        f"kind delete cluster --name bisector-2 --kubeconfig {run_dir}/e1/kind/kubeconfig"
    ]


def test_missing_run_dir_is_one_line_exit_2(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bisector", "cleanup", "--run-dir", str(tmp_path / "nope")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.startswith("bisector: error: run directory")
    assert result.stderr.count("\n") == 1


def test_cli_replays_recorded_steps_for_real(tmp_path: Path) -> None:
    """End to end without the fake: the recorded step is a real command."""
    run_dir = tmp_path / "run"
    marker = tmp_path / "deleted"
    ResourceRecord(run_dir).add(
        Resource(
            "test/one", "test", "a test cluster",
            (step("bash", "-c", f"echo gone > {marker}", cwd=tmp_path, env={"X": "1"}),),
        )
    )  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-m", "bisector", "cleanup", "--run-dir", str(run_dir)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert marker.read_text() == "gone\n"
    assert "removed a test cluster" in result.stdout
    assert not (run_dir / "resources.json").exists()


def test_record_is_rewritten_atomically(tmp_path: Path) -> None:
    record = ResourceRecord(tmp_path)
    for i in range(3):
        record.add(Resource(f"r{i}", "test", f"thing {i}", (step("true"),)))
    record.remove("r1")
    data = json.loads((tmp_path / "resources.json").read_text())
    assert [r["id"] for r in data["resources"]] == ["r0", "r2"]
    assert [p.name for p in tmp_path.iterdir()] == ["resources.json"]  # no temp files left


def test_a_procs_cluster_whose_processes_outlive_the_stop_stays_recorded(
    tmp_path: Path,
) -> None:
    """Issue 30 (mutation audit): `procs.stop` exited 0 with processes left, and cleanup
    dropped the record of a cluster still running. The recorded step here is the real
    stop command, with its signals made to miss (as for a process in uninterruptible
    sleep), against a real tagged process."""
    import os
    import time

    from bisector.backends.procs.stop import TAG_ENV

    tag = f"cleanup-test-{os.getpid()}-{time.monotonic_ns()}"
    sleeper = subprocess.Popen(["sleep", "60"], env={**os.environ, TAG_ENV: tag})
    missing_signals = (
        "import sys; from bisector.backends.procs import stop; "
        "stop._signal = lambda found, signum: None; "
        "stop._wait_gone = lambda tag, seconds: stop.tagged(tag); "
        f"sys.exit(stop.main(['--tag', {tag!r}, '--grace', '0']))"
    )
    run_dir = tmp_path / "run"
    ResourceRecord(run_dir).add(
        Resource("procs/slot-0/x", "procs", "local cluster x",
                 (step(sys.executable, "-c", missing_signals),))
    )  # fmt: skip
    try:
        result = subprocess.run(
            [sys.executable, "-m", "bisector", "cleanup", "--run-dir", str(run_dir)],
            capture_output=True, text=True, check=False, timeout=120,
        )  # fmt: skip
        assert result.returncode == 1, result.stdout + result.stderr
        assert f"process {sleeper.pid} (sleep) still running" in result.stdout
        assert ResourceRecord(run_dir).ids() == ["procs/slot-0/x"]
    finally:
        sleeper.kill()
        sleeper.wait()


# A bisector-like run killed with kill -9 mid-warmup: its launch left a daemon that left
# the process group (setsid); the run tracked its command's group in processes.jsonl.
_KILLED_RUN = """
import sys, time
from pathlib import Path
from bisector import proc
record, pidfile = Path(sys.argv[1]), Path(sys.argv[2])
script = f"setsid bash -c 'echo $$ > {pidfile}; exec sleep 300' >/dev/null 2>&1 &"
with proc.track_groups(record):
    proc.run(["bash", "-c", script], timeout=60)
    time.sleep(300)  # the warmup, during which it is killed
"""


def test_cleanup_after_kill_9_stops_the_daemon_a_launch_left(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """kill -9 of bisector mid-warmup, then `bisector cleanup`: the teardowns ran, but the
    daemon the launch had started (setsid) kept running until a rerun stopped it."""
    from bisector.bisection.layout import RunLayout
    from tests.helpers.processes import gone

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    pidfile = tmp_path / "daemon.pid"
    root = Path(__file__).resolve().parents[2]
    record = RunLayout(run_dir).processes
    parent = subprocess.Popen(
        [sys.executable, "-c", _KILLED_RUN, str(record), str(pidfile)], cwd=root
    )
    try:
        deadline = time.monotonic() + 30
        while not (pidfile.exists() and pidfile.read_text().strip()):
            assert time.monotonic() < deadline, "the daemon never started"
            time.sleep(0.05)
        daemon = int(pidfile.read_text())
    finally:
        parent.kill()  # kill -9: no teardown
        parent.wait()
    try:
        assert cleanup(run_dir) == 0
        assert gone(daemon)
        assert f"process {daemon} (sleep)" in capsys.readouterr().out
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(daemon, signal.SIGKILL)
