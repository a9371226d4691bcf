"""`bisector score`: exit codes (git bisect run's), JSON and table output, flags, config.

The exit-code contract (bisector.exitcodes.ScoreExit) is driven through the real entry
point, and through a real `git bisect run`: git reads 0 good, 125 skip, 1-127 bad and
128+ as "stop" (git's own documentation of `git bisect run`).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bisector.entry import main
from tests.helpers.log_lines import header, mix_log, request, text

LINE = (
    "I0602 05:51:10.000001       7 wrap.go:42] PATCH /api/v1/nodes/hollow-node-1/status: "
    "(3.1ms) 409 [[kubelet/v1.7.0 (linux/amd64) kubernetes/7043372] 10.240.0.5:34862]\n"
)


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(["score", *args])
    out, err = capsys.readouterr()
    code = info.value.code
    return (code if isinstance(code, int) else 0), out, err


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "kube-apiserver.log"
    path.write_text(LINE * 3)
    return path


def test_verdict_exit_codes(capsys: pytest.CaptureFixture[str], log: Path) -> None:
    assert _run(capsys, str(log), "--metric", "conflicts", "--threshold", "3")[0] == 1
    code, out, _ = _run(capsys, str(log), "--metric", "conflicts", "--threshold", "4")
    assert code == 0
    assert "verdict: good (conflicts = 3 < 4)" in out


def test_no_data_is_skip_never_good(
    capsys: pytest.CaptureFixture[str], log: Path, tmp_path: Path
) -> None:
    code, out, _ = _run(capsys, str(log), "--metric", "dispatch_lag_s", "--threshold", "1e9")
    assert code == 125
    assert "skip" in out
    v2 = tmp_path / "v2.log"
    v2.write_text(header(0) + "Starting watch for /api/v1/nodes\n")
    assert _run(capsys, str(v2), "--metric", "conflicts", "--threshold", "1")[0] == 125
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    assert _run(capsys, str(empty), "--metric", "conflicts", "--threshold", "1")[0] == 125


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--metric", "conflictz", "--threshold", "1"], "unknown metric"),
        (["--metric", "conflicts", "--threshold", "nan"], "must be a finite number"),
        (["--since", "five minutes"], "--since: cannot read"),
        (["--since", "10m", "--until", "5m"], "must be later"),
        (["--config", "/nonexistent/bisector.toml"], "does not exist"),
    ],
)
def test_bad_arguments_exit_128_with_one_line(
    capsys: pytest.CaptureFixture[str], log: Path, args: list[str], message: str
) -> None:
    code, _, err = _run(capsys, str(log), *args)
    assert code == 128  # git bisect run stops: a typo never marks a commit bad
    assert message in err
    assert err.count("\n") == 1
    assert err.startswith("bisector: error: ")


def test_threshold_alone_is_about_conflicts_as_for_run_and_history(
    capsys: pytest.CaptureFixture[str], log: Path
) -> None:
    """Issue 22, point 2: `score --threshold 5` alone was exit 128 "needs --metric"."""
    code, out, err = _run(capsys, str(log), "--threshold", "3")
    assert (code, err) == (1, "")
    assert "verdict: bad (conflicts = 3 >= 3)" in out
    code, out, _ = _run(capsys, str(log), "--threshold", "4", "--json")
    assert code == 0
    assert json.loads(out)["metric"] == "conflicts" and json.loads(out)["verdict"] == "good"
    code, out, _ = _run(capsys, str(log), "--json")  # no threshold: every metric, no verdict
    assert code == 0 and json.loads(out)["metric"] is None


def test_missing_log_is_no_verdict_in_a_real_process(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bisector", "score", str(tmp_path / "missing.log")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 125
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("bisector: no verdict: cannot read log")


@pytest.mark.parametrize("args", [["--no-such-flag", "x"], [], ["x", "--threshold", "many"]])
def test_usage_errors_are_exit_128(capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    code, _, err = _run(capsys, *args)
    assert code == 128
    assert "Traceback" not in err


def test_other_commands_keep_exit_2_for_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["status", "--no-such-flag"])
    assert info.value.code == 2


def test_an_unexpected_exception_is_129_never_bad(
    capsys: pytest.CaptureFixture[str], log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import bisector.commands.score as score_mod

    def broken(*_args: object, **_kwargs: object) -> None:
        raise TypeError("a bug")

    monkeypatch.setattr(score_mod, "metric_value", broken)
    code, _, err = _run(capsys, str(log), "--metric", "conflicts", "--threshold", "1")
    assert code == 129
    assert err.count("\n") == 1
    assert "internal error" in err and "TypeError: a bug" in err


@pytest.mark.parametrize("damage", ["truncated", "corrupt", "empty", "not a log"])
def test_a_log_that_cannot_give_a_verdict_is_125(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, damage: str
) -> None:
    packed = gzip.compress(LINE.encode() * 5000)
    data = {
        "truncated": packed[: len(packed) // 2],
        "corrupt": packed[:40] + b"\x00" * 64 + packed[104:],
        "empty": b"",
        "not a log": b"hello\nworld\n",
    }[damage]
    path = tmp_path / "kube-apiserver.log.gz"
    path.write_bytes(data)
    for extra in ([], ["--json"], ["--metric", "conflicts"]):
        code, _, err = _run(capsys, str(path), "--metric", "conflicts", "--threshold", "1", *extra)
        assert code == 125, (damage, extra, err)
        assert "Traceback" not in err


def test_json_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "kube-apiserver.log"
    path.write_bytes(text(mix_log("v119")))
    code, out, _ = _run(capsys, str(path), "--json", "--metric", "conflicts", "--threshold", "3")
    doc = json.loads(out)
    assert code == 1
    assert doc["verdict"] == "bad"
    assert doc["value"] == 3.0
    assert doc["metrics"]["conflicts"] == 3
    assert doc["metrics"]["node_writes"] == 4
    assert set(doc["metrics"]) >= {"cacher_hwm", "dispatch_lag_s", "lines", "window"}


def test_since_until_flags(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "kube-apiserver.log"
    lines = [request("wrap42", i, "PATCH", "/api/v1/nodes/n/status", 409) for i in range(600)]
    path.write_bytes(text(lines))
    code, out, _ = _run(capsys, str(path), "--since", "1m", "--until", "5m", "--json")
    assert code == 0
    assert json.loads(out)["metrics"]["conflicts"] == 240


def test_config_adds_request_metrics(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "kube-apiserver.log"
    path.write_bytes(text(mix_log("wrap47")))
    config = tmp_path / "bisector.toml"
    config.write_text(
        '[metrics.pod_conflicts]\nverb = "PATCH"\npath = "/pods/"\nstatuses = [409]\n'
    )
    args = ["--config", str(config), "--metric", "pod_conflicts", "--threshold", "1"]
    code, out, _ = _run(capsys, str(path), *args)
    assert code == 1
    assert "pod_conflicts" in out
    config.write_text(
        '[metrics.pod_conflicts]\nverb = "PATCH"\npath = "/pods/"\nstatuses = "409"\n'
    )
    code, _, err = _run(capsys, str(path), *args)
    assert code == 128
    assert "bisector.toml" in err and "statuses" in err


def test_sample_log_shipped_with_the_package(capsys: pytest.CaptureFixture[str]) -> None:
    sample = Path(__file__).resolve().parents[2] / "bisector" / "data" / "sample-kube-apiserver.log"
    code, out, _ = _run(
        capsys, str(sample), "--json", "--metric", "conflicts", "--threshold", "500"
    )
    metrics = json.loads(out)["metrics"]
    assert code == 0
    assert metrics["conflicts"] == 175  # the 504's quoted "PATCH ... 409" is not one
    assert metrics["node_writes"] == 1625
    assert metrics["cacher_hwm"] == {"*api.Node": 100}


def test_window_on_stdin_starts_at_the_first_line_read() -> None:
    lines = [request("wrap42", i, "PATCH", "/api/v1/nodes/n/status", 409) for i in range(120)]
    result = subprocess.run(
        [sys.executable, "-m", "bisector", "score", "-", "--since", "30s", "--json"],
        input=text(lines),
        capture_output=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["metrics"]["conflicts"] == 90


def _seconds_log(path: Path, seconds: int) -> Path:
    lines = [request("wrap42", i, "PATCH", "/api/v1/nodes/n/status", 409) for i in range(seconds)]
    path.write_bytes(text(lines))
    return path


def test_window_is_reported_as_typed_fields_and_in_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = _seconds_log(tmp_path / "kube-apiserver.log", 66)  # 65 s between first and last
    code, out, _ = _run(capsys, str(log), "--json")
    doc = json.loads(out)["metrics"]
    assert code == 0
    assert doc["seen"]["first"].endswith("-06-02T05:51:10.000000")  # year: the file's mtime
    assert doc["seen"]["last"].endswith("-06-02T05:52:15.000000")
    assert doc["seen"]["seconds"] == 65.0
    assert doc["window"] == doc["seen"]


@pytest.mark.parametrize(
    "args",
    [
        ["--since", "10m"],
        ["--since", "10m", "--metric", "conflicts"],
        ["--since", "10m", "--metric", "conflicts", "--threshold", "1"],
        ["--until", "0s", "--metric", "conflicts", "--threshold", "1"],
        ["--since", "65s", "--metric", "conflicts", "--threshold", "1"],
    ],
)
def test_since_past_the_end_is_no_data_never_a_verdict(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str]
) -> None:
    log = _seconds_log(tmp_path / "kube-apiserver.log", 66)
    code, out, _ = _run(capsys, str(log), *args)
    assert code == 125
    assert "no data in the window" in out
    code, out, _ = _run(capsys, str(log), *args, "--json")
    assert code == 125
    doc = json.loads(out)
    assert doc["verdict"] == "skip"
    assert doc["metrics"]["window"] is None
    assert doc["metrics"]["conflicts"] is None


def test_min_window(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    log = _seconds_log(tmp_path / "kube-apiserver.log", 60)  # 59 s
    args = ["--metric", "conflicts", "--threshold", "1e9"]
    code, out, _ = _run(capsys, str(log), *args, "--min-window", "30m")
    assert code == 125
    assert "log covers 59s of the 30m00s asked: apiserver restarted or log cut short" in out
    assert _run(capsys, str(log), *args, "--min-window", "59s")[0] == 0
    assert _run(capsys, str(log), "--min-window", "1m")[0] == 125  # no metric: still no data
    code, _, err = _run(capsys, str(log), *args, "--min-window", "soon")
    assert code == 128
    assert "--min-window" in err


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=False
    )


def test_no_threshold_during_a_git_bisect_stops_it(
    capsys: pytest.CaptureFixture[str], log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    assert _git(repo, "init", "-q").returncode == 0
    monkeypatch.chdir(repo)
    assert _run(capsys, str(log), "--metric", "conflicts")[0] == 0  # no bisect: scores only
    (repo / ".git" / "BISECT_START").write_text("main\n")
    code, out, err = _run(capsys, str(log), "--metric", "conflicts")
    assert code == 128
    assert "conflicts" in out  # the scores are still printed
    assert "pass --metric NAME --threshold VALUE" in err
    assert err.count("\n") == 1
    assert _run(capsys, str(log), "--metric", "conflicts", "--threshold", "9")[0] == 0


# Commit i's log: bad (>= 10 conflicts) from FIRST_BAD on; TRUNCATED ones a cut gzip.
FIRST_BAD = 5
TRUNCATED = {6}
COMMITS = 9


def _bisect_repo(tmp_path: Path) -> tuple[Path, list[str]]:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    hashes = []
    for i in range(COMMITS):
        conflicts = 50 if i >= FIRST_BAD else 2
        packed = gzip.compress(
            LINE.encode() * conflicts
            + b"".join(
                request("wrap42", t, "GET", "/healthz", 200).encode() + b"\n" for t in range(600)
            )
        )
        if i in TRUNCATED:
            packed = packed[: len(packed) // 2]
        (repo / "kube-apiserver.log.gz").write_bytes(packed)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "--allow-empty", "-m", f"c{i}")
        hashes.append(_git(repo, "rev-parse", "HEAD").stdout.strip())
    return repo, hashes


@pytest.mark.slow
def test_git_bisect_run_skips_a_truncated_log_and_names_the_first_bad_commit(
    tmp_path: Path,
) -> None:
    repo, hashes = _bisect_repo(tmp_path)
    assert _git(repo, "bisect", "start", hashes[-1], hashes[0]).returncode == 0
    result = _git(
        repo,
        "bisect",
        "run",
        sys.executable,
        "-m",
        "bisector",
        "score",
        "kube-apiserver.log.gz",
        "--metric",
        "conflicts",
        "--threshold",
        "10",
    )
    log = _git(repo, "bisect", "log").stdout
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{hashes[FIRST_BAD]} is the first bad commit" in result.stdout
    assert f"git bisect skip {hashes[6]}" in log  # the truncated gzip was met and skipped
    assert "corrupt or truncated gzip" in result.stderr


def test_git_bisect_run_stops_on_a_config_mistake_and_marks_nothing_bad(tmp_path: Path) -> None:
    repo, hashes = _bisect_repo(tmp_path)
    assert _git(repo, "bisect", "start", hashes[-1], hashes[0]).returncode == 0
    result = _git(
        repo,
        "bisect",
        "run",
        sys.executable,
        "-m",
        "bisector",
        "score",
        "kube-apiserver.log.gz",
        "--metric",
        "conflicts",
        "--threshold",
        "10",
        "--config",
        str(tmp_path / "missing.toml"),
    )
    log = _git(repo, "bisect", "log").stdout
    assert result.returncode != 0
    assert "does not exist" in result.stderr
    assert "git bisect bad" not in log  # no commit was judged (the start is `# bad:`)
    assert "git bisect good" not in log
    assert "first bad commit" not in result.stdout


def test_an_error_with_a_code_outside_the_table_never_reads_as_bad(
    capsys: pytest.CaptureFixture[str], log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import bisector.commands.score as score_mod
    from bisector.errors import BisectorError

    def failing(*_args: object, **_kwargs: object) -> None:
        raise BisectorError("some helper chose exit 1", exit_code=1)

    monkeypatch.setattr(score_mod, "read_config", failing)
    code, _, err = _run(capsys, str(log), "--config", str(log))
    assert code == 128
    assert "some helper chose exit 1" in err


@pytest.mark.parametrize(
    "leftover", ["kube-apiserver.log.gz", "kube-apiserver.log.gz.partial"], ids=["gz", "partial"]
)
def test_a_log_dir_left_mid_gzip_scores_its_log_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, leftover: str
) -> None:
    # bisector.runfiles.gzip_log writes LOG.gz.partial, renames it LOG.gz, then unlinks LOG:
    # a run killed in between leaves the log twice in its evaluation's logs/. `score DIR`
    # read both as rotated pieces of one log: 3 conflicts counted 6, bad under 5.
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "kube-apiserver.log").write_text(LINE * 3)
    (logs / leftover).write_bytes(gzip.compress((LINE * 3).encode()))
    code, out, _ = _run(capsys, str(logs), "--metric", "conflicts", "--threshold", "5")
    assert code == 0 and "verdict: good (conflicts = 3 < 5)" in out, out
