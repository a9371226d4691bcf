"""`bisector doctor --rehearse`: one whole gce evaluation on the GCE twin, before money is spent.

Runs `bisector.twin.rehearse.rehearse` (the checkout's real kube-up.sh,
start-kubemark.sh, stop-kubemark.sh, kube-down.sh against the twin's fake
gcloud/gsutil/docker/kubectl/curl) and says, in a few lines, which stages got
through, the first one that failed with the last lines it printed, every call
the twin does not model, and what the twin's project still holds afterwards.

What the rehearsal touches, and why each is fenced off:

* The checkout: the build writes `_output/` and the instrumentation patch is
  applied to it, so a user's checkout would later hand the twin's fake release
  to a real run. The rehearsal runs in a scratch clone of its HEAD (sharing its
  objects, with its `refs/replace`), as `bisector run` evaluates commits.
* `base_checkout` (same reason) is cloned the same way when the config sets it.
* `build_cache_dir`: a shared cache would receive the twin's fake outputs under
  the tree's key, and a real run would then restore them; the rehearsal gets
  its own cache in the scratch directory.
* The real tools: `rehearse()` puts the twin first on PATH; a `PATH` in
  `[backends.gce.env]` would be put in front of it for every script, so the
  twin's bin is put first in that value too. `KUBECTL_PATH` makes
  cluster/kubectl.sh run that kubectl (kubernetes 7043372, cluster/kubectl.sh;
  start-kubemark.sh runs kubectl through it), so it is unset. And should a
  script reach a real tool by a path of its own, it finds no credentials: HOME
  and CLOUDSDK_CONFIG are empty directories, every other CLOUDSDK_* property,
  GOOGLE_APPLICATION_CREDENTIALS, the boto, docker and kube config variables
  are unset, and google-auth's metadata lookups point at a closed local port.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import site
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer

from bisector import proc
from bisector.backends.gce import steps as gce_steps
from bisector.backends.resources import ResourceRecord
from bisector.config import Section
from bisector.durations import format_duration
from bisector.errors import BisectorError
from bisector.twin.rehearse import Rehearsal, rehearse
from bisector.twin.state import Home

STAGES = (
    ("setup", "base cluster up (make quick-release, cluster/kube-up.sh)"),
    ("build", "make quick-release"),
    ("launch", "kubemark up (test/kubemark/start-kubemark.sh)"),
    ("collect", "gcloud compute scp of the apiserver log"),
    ("teardown", "test/kubemark/stop-kubemark.sh"),
    ("close", "cluster/kube-down.sh"),
)
SCRIPTS_BEFORE_COLLECT = ("setup", "build", "launch", "collect")
# Variables that lead a real gcloud, gsutil, docker or kubectl to real credentials or to
# a real binary; unset while the rehearsal runs (every CLOUDSDK_* too: gcloud properties).
UNSET = (
    "GOOGLE_APPLICATION_CREDENTIALS",
    "BOTO_CONFIG",
    "BOTO_PATH",
    "DOCKER_CONFIG",
    "DOCKER_HOST",
    "KUBECONFIG",
    "KUBECTL_PATH",
)
_CLOSED_PORT = "127.0.0.1:1"
_UNMODELLED_SHOWN = 10
_GIT_TIMEOUT_S = 600.0


@dataclass
class Outcome:
    """What `doctor` prints about a rehearsal, and whether it passed."""

    passed: bool
    lines: list[str] = field(default_factory=list)


def guard_env(scratch: Path, environ: Mapping[str, str]) -> dict[str, str | None]:
    """The changes to the environment for the rehearsal (None: unset)."""
    home = scratch / "home"
    changes: dict[str, str | None] = {
        name: None for name in environ if name.startswith("CLOUDSDK_") or name in UNSET
    }
    changes.update(
        HOME=str(home),
        # The scripts' mktemp -d (KUBE_TEMP): an interrupted script leaves its directory
        # in the scratch, which goes with it.
        TMPDIR=str(scratch / "tmp"),
        CLOUDSDK_CONFIG=str(home / ".config" / "gcloud"),
        # google-auth (google/auth/environment_vars.py): where the GCE metadata server is.
        GCE_METADATA_HOST=_CLOSED_PORT,
        GCE_METADATA_IP=_CLOSED_PORT,
        NO_GCE_CHECK="True",
        # The twin's shims run `python -m bisector.twin`: a bisector installed with
        # `pip install --user` must still import under the new HOME.
        PYTHONUSERBASE=environ.get("PYTHONUSERBASE") or site.getuserbase(),
    )
    return changes


@contextlib.contextmanager
def patched_environ(changes: Mapping[str, str | None]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in changes}
    try:
        for name, value in changes.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def scratch_clone(repo: Path, into: Path, what: str) -> str:
    """A clone of `repo`'s HEAD in `into`, sharing its objects; returns the commit."""
    commit = _git(repo, what, "rev-parse", "--verify", "HEAD^{commit}")
    for script in ("cluster/kube-up.sh", "test/kubemark/start-kubemark.sh"):
        if proc.run(["git", "cat-file", "-e", f"{commit}:{script}"], cwd=repo,
                    check=False, timeout=_GIT_TIMEOUT_S).code != 0:  # fmt: skip
            raise BisectorError(
                f"{what} {repo} at {commit[:12]} has no {script}: it must be a kubernetes "
                "checkout (the gce backend runs its cluster and kubemark scripts)"
            )
    common = _git(repo, what, "rev-parse", "--path-format=absolute", "--git-common-dir")
    _git(into.parent, what, "clone", "-q", "--shared", "--no-checkout", common, str(into))
    # A partial copy of the history points its absent blobs at stand-ins (refs/replace).
    _git(into, what, "fetch", "-q", "origin", "refs/replace/*:refs/replace/*")
    _git(into, what, "-c", "advice.detachedHead=false", "checkout", "-q", "--detach", commit)
    return commit


def _uncommitted(repo: Path) -> bool:
    # --no-optional-locks: a plain `git status` refreshes the user's index and writes it.
    args = ("--no-optional-locks", "status", "--porcelain", "--untracked-files=no")
    return bool(_git(repo, "--repo", *args))


def _git(cwd: Path, what: str, *args: str) -> str:
    try:
        return proc.run(["git", *args], cwd=cwd, timeout=_GIT_TIMEOUT_S).stdout.strip()
    except proc.CommandError as exc:
        raise BisectorError(
            f"{what} {cwd}: {exc}; --rehearse needs a kubernetes git checkout"
        ) from None


def traces_in_home(home: Path) -> list[str]:
    """Files in the rehearsal's HOME, which starts as the one empty CLOUDSDK_CONFIG dir.

    Nothing the twin or the scripts do writes there; a real gcloud does (Google Cloud
    SDK 528, measured: `CLOUDSDK_CONFIG=X gcloud config list` leaves X/active_config,
    X/configurations/, X/logs/<date>/<time>.log), and so does a real kubectl that
    reached a server (~/.kube/cache)."""
    return sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file())


def rehearsal_section(
    section: Section, scratch: Path, twin_bin: Path, base: Path | None
) -> tuple[Section, list[str]]:
    """[backends.gce] with everything that could reach the user's real state fenced off,
    and the `[backends.gce.env]` names it does not pass on."""
    data: dict[str, Any] = dict(section.data)
    data["build_cache_dir"] = str(scratch / "cache")
    # The rehearsal takes the base cluster down too, so kube-down.sh is rehearsed.
    data["keep_base_cluster"] = False
    if base is not None:
        data["base_checkout"] = str(base)
    env = dict(section.table("env").data)
    dropped = sorted(n for n in env if n.startswith("CLOUDSDK_") or n in UNSET or n == "HOME")
    for name in dropped:
        del env[name]
    if isinstance(env.get("PATH"), str):
        env["PATH"] = f"{twin_bin}{os.pathsep}{env['PATH']}"
    data["env"] = env
    return Section(data, section.file, section.path), dropped


class _Captured(logging.Handler):
    """The gce backend's warnings (a failed stop-kubemark.sh or kube-down.sh), kept for
    the summary instead of printed with their `bisector cleanup` advice: nothing of the
    rehearsal is real, so there is nothing to clean up."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def _captured_warnings() -> Iterator[_Captured]:
    logger = logging.getLogger("bisector.gce")
    handler = _Captured()
    propagate = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


def run_rehearsal(section: Section, repo: Path, *, keep: bool) -> Outcome:
    """Rehearse `section` ([backends.gce]) with `repo`'s HEAD on a twin in a scratch dir."""
    repo = repo.expanduser().absolute()
    cfg = gce_steps.GceSettings.from_section(section, Path(".bisector-doctor"))
    scratch = Path(tempfile.mkdtemp(prefix="bisector-rehearsal-"))
    try:
        (scratch / "home" / ".config" / "gcloud").mkdir(parents=True)
        (scratch / "tmp").mkdir()
        checkout = scratch / "kubernetes"
        commit = scratch_clone(repo, checkout, "--repo")
        base = None
        if cfg.base_checkout is not None:
            base = scratch / "base"
            scratch_clone(cfg.base_checkout.absolute(), base, "base_checkout")
        twin_dir = scratch / "twin"
        rehearsed, dropped = rehearsal_section(section, scratch, twin_dir / "bin", base)
        typer.echo(
            f"rehearsal of {section.file} with {repo} at {commit[:12]} (a scratch clone of its "
            "HEAD) on the GCE twin: the real gcloud, gsutil, docker, kubectl are out of reach"
        )
        if _uncommitted(repo):
            typer.echo(
                f"note     {repo} has uncommitted changes: the rehearsal runs its HEAD "
                "commit, as `bisector run` runs commits; commit to rehearse them"
            )
        if dropped:
            typer.echo(
                f"note     [backends.gce.env] {', '.join(dropped)}: not passed to the scripts "
                "here (they configure a real gcloud, docker or kubectl)"
            )
        started = time.monotonic()
        with patched_environ(guard_env(scratch, os.environ)), _captured_warnings() as warned:
            try:
                result = rehearse(rehearsed, checkout, twin_dir)
            except BisectorError as exc:  # refused by the backend, e.g. a placeholder project
                outcome = _refused(exc, Home(twin_dir), traces_in_home(scratch / "home"))
            else:
                took = time.monotonic() - started
                traces = traces_in_home(scratch / "home")
                outcome = summarize(result, cfg, warned.records, took, traces)
        if keep:
            outcome.lines.append(
                f"kept     {scratch}: twin/calls.jsonl (every call), twin/state.json, "
                "kubernetes/ (the checkout as the scripts left it)"
            )
        elif not outcome.passed:
            outcome.lines.append("rerun with --keep to keep every call the scripts made")
        return outcome
    finally:
        if not keep:
            shutil.rmtree(scratch, ignore_errors=True)


def _refused(exc: BisectorError, home: Home, traces: list[str]) -> Outcome:
    lines = [f"FAILED   config: {exc}"]
    left = home.load().leftovers()
    if left:
        lines.append(_left_line(left))
    if traces:
        lines.append(_traces_line(traces))
    lines.append("rehearsal FAILED: the gce backend refused the config")
    return Outcome(False, lines)


def _left_line(leftovers: dict[str, list[str]]) -> str:
    held = "; ".join(f"{kind}: {', '.join(names)}" for kind, names in leftovers.items())
    return (
        f"LEFT UP  after teardown the twin's project still holds {held}; "
        "a real project would go on billing these"
    )


def _traces_line(traces: list[str]) -> str:
    return (
        f"REAL TOOL? the rehearsal's empty HOME now holds {', '.join(traces[:5])}: a real "
        "gcloud, gsutil or kubectl may have run (gcloud logs each call under "
        "CLOUDSDK_CONFIG/logs); look for a script that calls one by its own path"
    )


def summarize(
    result: Rehearsal,
    cfg: gce_steps.GceSettings,
    warnings: list[logging.LogRecord],
    elapsed_s: float,
    traces: list[str],
) -> Outcome:
    """The rehearsal's few lines: each stage, unmodelled calls, leftovers, a verdict."""
    lines: list[str] = []
    failed = result.status.removesuffix(" failed") if result.status != "measured" else None
    left = set(ResourceRecord(result.home.path / "run").ids())
    said = _warning_texts(warnings)
    first_failure: str | None = failed
    reached = True
    for stage, doing in STAGES:
        if stage in SCRIPTS_BEFORE_COLLECT:
            if not reached:
                lines.append(f"-        {stage}: not reached")
                continue
            if stage == failed:
                reason, *rest = result.reason.split(" | ")
                lines.append(f"FAILED   {stage}: {reason}")
                lines += [f"           {line}" for line in rest]
                reached = False
                continue
            detail = doing
            if stage == "collect":
                detail += ": " + ", ".join(f"{p.name} ({_size(p)})" for p in result.logs)
            lines.append(f"ok       {stage}: {detail}")
            continue
        ran, resource, script = _teardown_stage(stage, cfg, failed)
        if not ran and resource not in left:
            lines.append(f"-        {stage}: not run (nothing of it is recorded as up)")
        elif resource in left:
            first_failure = first_failure or stage
            why = said.get(script, "it is still recorded as up")
            lines.append(f"FAILED   {stage}: {script} failed: {why}")
        else:
            lines.append(f"ok       {stage}: {doing}")
    for adaptation in result.adaptations:
        if adaptation.commands or adaptation.name == "cfssl":
            lines.append(f"adapted  {adaptation.name}: {adaptation.why}")
    refused = [c for c in result.calls if c["tool"] == "gcloud" and c["code"] == 2]
    if refused:
        lines.append(
            f"REFUSED  {len(refused)} gcloud call(s) that gcloud 528 refuses as a command line "
            "(exit 2; a real run fails there, or goes on without what it asked for), e.g. "
            + " ".join(["gcloud", *refused[0]["argv"]])[:200]
        )
    unmodelled = Counter(f"{c['tool']} {' '.join(c['argv'])[:160]}" for c in result.unmodelled)
    if unmodelled:
        lines.append(
            f"UNMODELLED {sum(unmodelled.values())} call(s) the twin does not model (exit 97); "
            "the real cloud's answer is unknown:"
        )
        for line, count in list(unmodelled.items())[:_UNMODELLED_SHOWN]:
            lines.append(f"           {line}" + (f"  (x{count})" if count > 1 else ""))
        if len(unmodelled) > _UNMODELLED_SHOWN:
            lines.append(f"           ... and {len(unmodelled) - _UNMODELLED_SHOWN} more")
    accounted = {_teardown_stage(stage, cfg, failed)[1] for stage in ("teardown", "close")}
    recorded = sorted(left - accounted)
    if recorded:
        lines.append(f"LEFT UP  still recorded as up after the rehearsal: {', '.join(recorded)}")
    if result.leftovers:
        lines.append(_left_line(result.leftovers))
    else:
        lines.append("ok       nothing billable left in the twin's project after teardown")
    if traces:
        lines.append(_traces_line(traces))
    passed = result.ok and not left and first_failure is None and not traces and not refused
    took = f"in {format_duration(elapsed_s)}, {len(result.calls)} calls on the twin"
    if passed:
        lines.append(f"rehearsal passed ({took})")
    else:
        what = [f"failed at {first_failure}"] if first_failure else []
        what += ["unmodelled calls"] if unmodelled else []
        what += ["calls gcloud 528 refuses"] if refused else []
        what += ["left resources up"] if result.leftovers or recorded else []
        what += ["a real tool may have run"] if traces else []
        lines.append(f"rehearsal FAILED: {', '.join(what)} ({took})")
    return Outcome(passed, lines)


def _teardown_stage(
    stage: str, cfg: gce_steps.GceSettings, failed: str | None
) -> tuple[bool, str, str]:
    """(whether it ran, its resource id, its script) for teardown and close."""
    if stage == "teardown":
        ran = failed in (None, "launch", "collect")
        return ran, gce_steps.kubemark_id(cfg, 0), "stop-kubemark.sh"
    # kube-down.sh runs at close, or at once when kube-up.sh fails (a half-built base).
    return failed != "setup", gce_steps.base_id(cfg, 0), "kube-down.sh"


def _warning_texts(records: list[logging.LogRecord]) -> dict[str, str]:
    """{script: the last lines it printed} from the backend's teardown warnings."""
    texts: dict[str, str] = {}
    for record in records:
        message = record.getMessage()
        for script in ("stop-kubemark.sh", "kube-down.sh"):
            if message.startswith(f"{script} failed") and isinstance(record.args, tuple):
                texts[script] = str(record.args[0]) if record.args else message
    return texts


def _size(path: Path) -> str:
    size = path.stat().st_size
    return f"{size / 1e6:.1f} MB" if size >= 100_000 else f"{size} bytes"
