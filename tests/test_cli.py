from __future__ import annotations

import pytest

import bisector.commands.status as status_command
from bisector.cli import main


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
