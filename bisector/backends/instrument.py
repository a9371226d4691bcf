"""Instrumentation patches applied to a candidate before it is built.

The project ships one: `builtin:cacher-dispatch-progress-2017`, a patch to the
2017 watch cache (`staging/src/k8s.io/apiserver/pkg/storage/cacher.go`,
`dispatchEvents`) that logs every 100th dispatched node event as

    cacher (*api.Node): dispatched event nr 100

which, with the node writes in the request lines, gives the dispatch lag.
A candidate the patch does not apply to is a skip saying so, never a
measurement without the instrumentation.
"""

from __future__ import annotations

from pathlib import Path

from bisector import proc
from bisector.backends.steps import Step, run_step, step, tail
from bisector.errors import BuildError, ConfigError

BUILTIN_PREFIX = "builtin:"
PATCH_DIR = Path(__file__).resolve().parent.parent / "data" / "instrument"
DISPATCH_PROGRESS = "cacher-dispatch-progress-2017"


def resolve_patch(value: str, where: str, builtins: Path = PATCH_DIR) -> Path:
    """A config value -> the patch file: `builtin:<name>` (a patch in `builtins`) or a path."""
    if value.startswith(BUILTIN_PREFIX):
        name = value[len(BUILTIN_PREFIX) :]
        path = builtins / f"{name}.patch"
        if not path.is_file():
            known = ", ".join(BUILTIN_PREFIX + p.stem for p in sorted(builtins.glob("*.patch")))
            raise ConfigError(f"{where}: no built-in patch {name!r}; choose one of: {known}")
        return path
    path = Path(value).expanduser().absolute()  # git apply runs in the worktree
    if not path.is_file():
        raise ConfigError(f"{where}: patch file {path} does not exist; fix the path")
    return path


def apply_steps(worktree: Path, patch: Path, timeout: float) -> list[Step]:
    """`git apply --check` then `git apply`, in the candidate's worktree."""
    return [
        step("git", "apply", "--check", patch, cwd=worktree, timeout=timeout),
        step("git", "apply", patch, cwd=worktree, timeout=timeout),
    ]


def apply_patch(worktree: Path, patch: Path, commit: str, timeout: float) -> None:
    check, apply = apply_steps(worktree, patch, timeout)
    try:
        run_step(check)
    except proc.CommandError as exc:
        # A worktree re-used for a re-evaluation already carries the patch.
        reverse = step("git", "apply", "--check", "--reverse", patch, cwd=worktree, timeout=timeout)
        if run_step(reverse, check=False).code == 0:
            return
        raise BuildError(
            f"instrumentation patch {patch.name} does not apply to {commit[:12]}: {tail(exc)}"
        ) from None
    try:
        run_step(apply)
    except proc.CommandError as exc:
        raise BuildError(f"git apply {patch.name} failed on {commit[:12]}: {tail(exc)}") from None
