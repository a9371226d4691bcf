from __future__ import annotations

from pathlib import Path

import pytest

from bisector.commands.status import status
from bisector.config import load_config
from bisector.errors import BisectorError
from bisector.gitrepo import GitRepo
from bisector.settings import RunSettings
from tests.helpers.repo import build_repo

EXAMPLE = Path(__file__).resolve().parents[2] / "configs" / "local-example.toml"


def test_no_runs_yet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build_repo(tmp_path / "r", [1, 2])
    assert status(tmp_path / "r", None) == 0
    assert "no bisector runs" in capsys.readouterr().out


def test_example_config_is_valid() -> None:
    settings = RunSettings.from_config(load_config(EXAMPLE), good="a", bad="b")
    assert settings.backend == "local" and settings.warmup_s == 300
    assert settings.backend_section.get_str("launch") == "./hack/local-up.sh"


def test_interrupted_run_shows_progress_and_the_resume_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bisector.measure.journal import append_line

    built = build_repo(tmp_path / "r", [1, 2])
    run_dir = tmp_path / "r" / ".git" / "bisector" / "runs" / "x"
    start = {"type": "start", "good": "a" * 40, "bad": "b" * 40}
    append_line(run_dir / "journal.jsonl", {**start, "command": "bisector run --good a --bad b"})
    append_line(run_dir / "journal.jsonl", {"type": "verdict", "commit": "c", "verdict": "good"})
    append_line(run_dir / "journal.jsonl", {"type": "interrupted"})
    assert status(built.path, None) == 0
    out = capsys.readouterr().out
    assert "aaaaaaaaaaaa..bbbbbbbbbbbb: interrupted" in out
    assert "search verdicts (told git bisect): good 1 on 1 commit" in out
    assert "resume with: bisector run --good a --bad b" in out
    with GitRepo(built.path).lock():
        status(built.path, None)
    assert ": running" in capsys.readouterr().out


@pytest.mark.parametrize("kind", ["missing", "file", "empty dir"])
def test_a_run_dir_that_is_not_a_run_is_an_error(tmp_path: Path, kind: str) -> None:
    built = build_repo(tmp_path / "r", [1, 2])
    run_dir = tmp_path / "not-a-run"
    if kind == "file":
        run_dir.write_text("x\n")
    elif kind == "empty dir":
        run_dir.mkdir()
    with pytest.raises(BisectorError, match="not a bisector run directory"):
        status(built.path, run_dir)


def test_the_numbers_status_prints_add_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The demo's run said "measurements: 11; verdicts: bad 4, good 3": 7 verdicts of 11
    # measurements, no word for the other four (the endpoints' and the confirmation's
    # runs tell git bisect nothing, and one verdict had no run of its own: a same-tree
    # merge). Every part now has its word, and the parts add up.
    import re

    from bisector.measure.journal import Mark, Measured, Verdict, append_line
    from bisector.measure.measurement import Measurement

    built = build_repo(tmp_path / "r", [1, 2])
    journal = tmp_path / "r" / ".git" / "bisector" / "runs" / "x" / "journal.jsonl"
    append_line(journal, {"type": "start", "good": "a" * 40, "bad": "b" * 40})
    runs: list[tuple[str, str, float | None]] = [
        ("g", "endpoint", 30.0),
        ("b", "endpoint", 9e4),
        ("c1", "bisect", 10.0),
    ]
    runs += [("c2", "bisect", 9e4), ("c3", "bisect", None), ("c2", "confirm", 9e4)]
    runs += [("c1", "confirm", 12.0)]
    for commit, phase, value in runs:
        append_line(
            journal, Measured("f", Measurement(commit, "t-" + commit, phase, value)).to_json()
        )
    for commit, verdict in [("c1", "good"), ("c2", "bad"), ("c3", "skip"), ("m", "bad")]:
        append_line(journal, Verdict(commit, verdict).to_json())  # m: its merge's tree
    append_line(journal, Mark("k", "skip", "does not build").to_json())
    append_line(journal, Verdict("k", "skip").to_json())
    append_line(journal, {"type": "done", "culprit": "c2"})
    assert status(built.path, None) == 0
    out = capsys.readouterr().out
    measured = re.search(r"measurements: (\d+) \((.*)\)", out)
    assert measured is not None, out
    assert measured.group(2) == "endpoints 2, search 3, confirmation 2; 1 of them a skip"
    parts = [int(n) for n in re.findall(r"\w (\d+)", measured.group(2).split(";")[0])]
    assert sum(parts) == int(measured.group(1)) == 7
    verdicts = re.search(
        r"search verdicts \(told git bisect\): (.*) on (\d+) commits \((.*)\)", out
    )
    assert verdicts is not None, out
    assert verdicts.group(1) == "bad 2, good 1, skip 2"
    assert verdicts.group(3) == (
        "3 measured, 1 marked by hand, 1 from runs of the same source tree"
    )
    given = sum(int(n) for n in re.findall(r"\d+", verdicts.group(1)))
    sources = sum(int(n) for n in re.findall(r"(\d+) ", verdicts.group(3)))
    assert given == sources == int(verdicts.group(2)) == 5


def test_the_prune_command_it_prints_works_from_where_status_ran(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README reads the demo's run from bisector's checkout: status said `bisector runs
    --prune`, which from there prunes bisector's own repository, not the demo's."""
    from bisector.measure.journal import append_line

    built = build_repo(tmp_path / "r", [1, 2])
    run_dir = tmp_path / "r" / ".git" / "bisector" / "runs" / "x"
    start = {"type": "start", "good": "a" * 40, "bad": "b" * 40, "repo": str(built.path)}
    append_line(run_dir / "journal.jsonl", start)
    (run_dir / "evals" / "001" / "logs").mkdir(parents=True)
    (run_dir / "evals" / "001" / "logs" / "kube-apiserver.log.gz").write_bytes(b"x" * 4096)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert status(built.path, None) == 0
    assert f"(bisector runs --repo {built.path} --prune drops them)" in capsys.readouterr().out
    from bisector.commands.runs import runs

    assert runs(built.path, remove=None, remove_finished=False) == 0
    total = capsys.readouterr().out.splitlines()[-1]
    assert total.startswith("1 run(s), disk: ") and f"--repo {built.path} --prune" in total
    monkeypatch.chdir(built.path)
    assert status(None, None) == 0
    assert "(bisector runs --prune drops them)" in capsys.readouterr().out
