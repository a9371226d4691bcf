from __future__ import annotations

import pytest

import bisector.commands.status as status_command
from bisector.cli import main
from bisector.exitcodes import TABLES


def test_an_os_error_nothing_checked_first_is_still_one_line_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def unreadable(*_args: object) -> int:
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
