from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import bisector.commands.status as status_command
from bisector.entry import main
from bisector.exitcodes import TABLES


def test_an_os_error_nothing_checked_first_is_still_one_line_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def unreadable(*_args: object, **_kwargs: object) -> int:
        raise PermissionError(13, "Permission denied", "/srv/runs/journal.jsonl")

    monkeypatch.setattr(status_command, "status", unreadable)
    with pytest.raises(SystemExit) as info:
        main(["status"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err == (
        "bisector: error: Permission denied: /srv/runs/journal.jsonl; "
        "check the path and its permissions\n"
    )


def _help(command: str, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    return capsys.readouterr().out


@pytest.mark.parametrize("command", sorted(TABLES))
def test_every_command_lists_every_exit_code_it_can_end_with(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    text = " ".join(_help(command, capsys).split())
    for code in TABLES[command]:
        assert f" {code.value} " in f" {text} ", (command, code)
    assert "<bool>" not in text and "<str>" not in text.split("Options:")[-1]


def test_help_keeps_bracketed_text_and_flags_read_as_flags(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = _help("run", capsys)
    assert "[metrics.NAME]" in text and "--first-parent " in text
    assert "--warmup DURATION" in text and "--good COMMIT" in text
    assert "sim backend" in text  # the default backend said plainly


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.startswith("bisector ")


# Issue 22, point 4: help and conventions, through the CLI as a person runs it.
def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bisector", *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.parametrize("command", ["", *sorted(TABLES)])
def test_dash_h_is_help_on_every_command(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [command, "-h"] if command else ["-h"]
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Usage: bisector {command}".rstrip() + " ")
    assert "-h, --help" in out


@pytest.mark.parametrize("command", sorted(TABLES))
def test_help_writes_real_metavars(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(command, capsys)
    assert "{" not in text.splitlines()[0]  # typer's `{logs}...` for a required argument
    assert "<list[str]>" not in text and "[[" not in text and "]]..." not in text


def test_usage_lines_read_like_man_pages(capsys: pytest.CaptureFixture[str]) -> None:
    # LOG is optional since `score` also reads a CL2 directory or metrics snapshots.
    assert _help("score", capsys).splitlines()[0] == "Usage: bisector score [OPTIONS] [LOG...]"
    run = _help("run", capsys)
    assert run.splitlines()[0] == "Usage: bisector run [OPTIONS] [-- PATH...]"
    assert "  [-- PATH...]  Only commits touching these paths." in run
    assert _help("mark", capsys).splitlines()[0] == (
        "Usage: bisector mark [OPTIONS] COMMIT VERDICT"
    )


SAMPLE = str(
    Path(__file__).resolve().parents[1] / "bisector" / "data" / "sample-kube-apiserver.log"
)


def test_no_color_means_no_escape_sequences_not_even_bold() -> None:
    # FORCE_COLOR makes rich draw as on a terminal; rich's own NO_COLOR kept bold.
    styled = _run("score", SAMPLE, "--metric", "conflicts", env={"FORCE_COLOR": "1"})
    assert "\x1b[" in styled.stdout  # the check can fail: styles are there without NO_COLOR
    plain = _run(
        "score", SAMPLE, "--metric", "conflicts", env={"FORCE_COLOR": "1", "NO_COLOR": "1"}
    )
    assert plain.returncode == 0 and "\x1b" not in plain.stdout + plain.stderr
    assert "conflicts" in plain.stdout


def test_a_narrow_terminal_keeps_metric_names_whole() -> None:
    narrow = _run("score", SAMPLE, env={"COLUMNS": "40"})
    assert narrow.returncode == 0
    lines = narrow.stdout.splitlines()
    assert "cacher_saturated_after_s" in lines and "forced_watcher_closes" in lines
    assert "…" not in narrow.stdout and max(len(line) for line in lines) <= 40
    assert "  from 2026-06-02T05:51:10.000970" in lines  # a value's parts on their own lines
    wide = _run("score", SAMPLE, env={"COLUMNS": "100"})
    assert any(
        line.split()[:2] == ["conflicts_per_min", "35.0/min"] for line in wide.stdout.splitlines()
    )


def test_one_word_for_no_value_in_the_score_table() -> None:
    out = _run("score", SAMPLE).stdout
    rows = {
        line.split()[0]: line.split(maxsplit=1)[1].strip()
        for line in out.splitlines()[1:]
        if line[:2].strip()  # a metric's first line, not a continuation of a value
    }
    assert rows["dispatch_lag_s"] == "no data" and rows["forced_watcher_closes"] == "no data"
    assert " - " not in f" {out} " and "none" not in out


def test_shell_completion_is_installable() -> None:
    # The shell named: typer detects it from the process tree (shellingham), which a suite
    # run under nohup does not give ("Shell  not supported"); typer's own switch for its
    # tests makes the options take the shell's name instead.
    command = f"{sys.executable} -m bisector --show-completion bash"
    env = {**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    shown = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, check=False, env=env
    )
    assert shown.returncode == 0, shown.stderr
    assert "complete -o default -F _bisector_completion bisector" in shown.stdout
    words = _run(
        env={"COMP_WORDS": "bisector ru", "COMP_CWORD": "1", "_BISECTOR_COMPLETE": "complete_bash"}
    )
    assert words.stdout.split() == ["run", "runs"]
