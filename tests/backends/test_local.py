from __future__ import annotations

import time
from pathlib import Path

import pytest

from bisector.backends import local
from bisector.backends.base import Backend, BackendContext, Candidate
from bisector.backends.registry import create_backend
from bisector.config import Section
from bisector.errors import BuildError, CollectError, ConfigError, LaunchError


def _backend(tmp_path: Path, **commands: str) -> tuple[Backend, Candidate]:
    section = Section({"launch": "true", "collect": "true", **commands}, "c.toml", "backends.local")
    backend = create_backend("local", BackendContext(section, tmp_path / "run"))
    worktree = tmp_path / "wt"
    worktree.mkdir(exist_ok=True)
    return backend, Candidate("c" * 40, worktree, tmp_path / "run" / "evals" / "001", slot=2)


def test_commands_run_in_the_worktree_with_the_environment(tmp_path: Path) -> None:
    collect = (
        'printf "%s %s %s %s %s" "$PWD" "$BISECTOR_COMMIT" "$BISECTOR_WORKTREE" '
        '"$BISECTOR_RUN_DIR" "$BISECTOR_SLOT" > "$BISECTOR_LOG"'
    )
    backend, candidate = _backend(tmp_path, collect=collect)
    logs = backend.collect(candidate)
    assert logs == [candidate.log_dir / "kube-apiserver.log"]
    pwd, commit, worktree, run_dir, slot = logs[0].read_text().split()
    assert Path(pwd).resolve() == candidate.worktree.resolve()
    assert (commit, worktree, run_dir, slot) == (
        candidate.commit,
        str(candidate.worktree),
        str(tmp_path / "run"),
        "2",
    )


@pytest.mark.parametrize(
    ("step", "error"), [("build", BuildError), ("launch", LaunchError), ("collect", CollectError)]
)
def test_failing_commands_raise_the_step_error(
    tmp_path: Path, step: str, error: type[Exception]
) -> None:
    backend, candidate = _backend(tmp_path, **{step: "echo broken >&2; exit 3"})
    with pytest.raises(error, match="broken"):
        getattr(backend, step)(candidate)


def test_collect_that_writes_no_log_is_a_collect_error(tmp_path: Path) -> None:
    backend, candidate = _backend(tmp_path)
    with pytest.raises(CollectError, match="BISECTOR_LOG"):
        backend.collect(candidate)


def test_optional_steps_and_plan(tmp_path: Path) -> None:
    backend, candidate = _backend(tmp_path)
    backend.build(candidate)
    backend.teardown(candidate)
    assert backend.plan(candidate) == ["true", "sleep 0", "true"]


def test_config_errors_name_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"backends\.local\.launch` is missing"):
        create_backend("local", BackendContext(Section({}, "c.toml", "backends.local"), tmp_path))
    section = Section({"launch": "x", "collect": "y", "lanch": "z"}, "c.toml", "backends.local")
    with pytest.raises(ConfigError, match="lanch"):
        create_backend("local", BackendContext(section, tmp_path))


def test_each_step_keeps_its_commands_output(tmp_path: Path) -> None:
    backend, candidate = _backend(
        tmp_path,
        build="echo compiled",
        launch="echo starting; echo 'apiserver: bind: address in use' >&2; exit 7",
        collect='echo collected; echo x > "$BISECTOR_LOG"',
        teardown="echo gone",
    )
    backend.build(candidate)
    with pytest.raises(LaunchError):
        backend.launch(candidate)
    backend.collect(candidate)
    backend.teardown(candidate)
    for step, printed, outcome in [
        ("build", "compiled", "exited with code 0"),
        ("launch", "apiserver: bind: address in use", "exited with code 7"),
        ("collect", "collected", "exited with code 0"),
        ("teardown", "gone", "exited with code 0"),
    ]:
        text = (candidate.eval_dir / f"{step}.log").read_text()
        assert f"{printed}\n" in text
        assert f"===== {outcome} after" in text
        assert "$ cd " in text.splitlines()[0]


def test_a_skip_reason_starts_with_the_error_not_the_script(tmp_path: Path) -> None:
    script = "echo preparing; " + "true; " * 40 + "echo 'kubelet: node not ready' >&2; exit 3"
    backend, candidate = _backend(tmp_path, launch=script)
    with pytest.raises(LaunchError) as info:
        backend.launch(candidate)
    # The report shows the first 120 characters of a reason (search/render.py).
    assert info.value.reason == "launch failed (exited with code 3): kubelet: node not ready"


def test_peek_runs_the_optional_command_into_its_own_log(tmp_path: Path) -> None:
    # Early verdicts (issue 15): `peek` writes the log so far to $BISECTOR_LOG, which for
    # a peek is <eval>/peek/kube-apiserver.log, never the final log's place.
    backend, candidate = _backend(tmp_path, peek='echo "so far $BISECTOR_COMMIT" > "$BISECTOR_LOG"')
    logs = backend.peek(candidate)  # type: ignore[attr-defined]
    assert logs == [candidate.eval_dir / "peek" / "kube-apiserver.log"]
    assert logs[0].read_text() == f"so far {'c' * 40}\n"
    assert not candidate.log_dir.exists()
    assert "so far" in (candidate.eval_dir / "peek.log").read_text()


def test_without_a_peek_command_the_warmup_runs_in_full(tmp_path: Path) -> None:
    backend, candidate = _backend(tmp_path)
    with pytest.raises(CollectError, match="no `peek` command"):
        backend.peek(candidate)  # type: ignore[attr-defined]
    failing, candidate = _backend(tmp_path, peek="echo nope >&2; exit 4")
    with pytest.raises(CollectError, match=r"peek failed.*nope"):
        failing.peek(candidate)  # type: ignore[attr-defined]


def test_a_hanging_peek_is_cut_at_the_look_interval_not_the_whole_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local, "MIN_PEEK_TIMEOUT_S", 0.5)
    backend, candidate = _backend(tmp_path, peek="sleep 600")
    backend.warmup_steps(candidate, 0.5)  # type: ignore[attr-defined]
    started = time.monotonic()
    with pytest.raises(CollectError, match="peek failed"):
        backend.peek(candidate)  # type: ignore[attr-defined]
    assert time.monotonic() - started < 60  # the look interval, not the 1h timeout
