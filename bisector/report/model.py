"""The bisection's report as typed data; report.json is its serialisation.

report.json, version 2 (version 1's keys kept, new keys added):
    status        "found" | "inconclusive" | "unsure"
                  (unsure: the evaluation budget ran out before the posterior was sure)
    culprit       {commit, subject, author, date, pr, merge, merges, confirmed, confirmation,
                  confidence, value, parent: {commit, value, verdict}} | null
                  (merge: the outermost first-parent merge the culprit was found in, or null;
                  merges: every merge descended into, outermost first;
                  confidence: posterior probability, null without a noise model)
    candidates    commits that could be the culprit when only skipped commits were left
    conclusive    what a run without a culprit established (null with one):
                  {last_good, first_bad: {commit, subject, verdict, value, runs, how},
                   between: [{commit, subject, runs, reason}], unmeasured: [commit],
                   probability}
                  the first bad commit is after last_good and at or before first_bad;
                  between: the commits in between, oldest first (runs [] and in
                  unmeasured: no run of it measured; reason: why it has no verdict);
                  verdict: good, bad, or "" (not decided: an unsure search's bound);
                  value: the median of its full-length runs (null: none measured);
                  how: "endpoint", "measured", "marked by hand[: note]", the same-tree
                  verdict's "same tree as ..., measured there: ...", or "";
                  probability: the posterior's for the culprit lying there, null with
                  plain git bisect verdicts (certain given them)
    search        {mode: "git-bisect"|"posterior", error_rate, likelihood, parallel,
                  rounds: {phase: n}, confidence, sure, likely_range: {commits, probability}
                  | null, best_guess}
    good, bad     {commit, subject, value, runs}
    threshold     {value, how, worse}     how: "given" or "calibrated: ..."; worse: higher|lower
    metric, repeats, first_parent, paths, backend, config_fingerprint, run_dir
    range_size    commits in good..bad (first-parent chain with --first-parent)
    range         every commit of good..bad (merged branches too), oldest first
    first_parent_range  the first-parent chain of good..bad, oldest first (the plot's x axis)
    evaluations   [{n, commit, subject, phase, verdict, value, metrics, duration_s, reason,
                    launch_attempts, logs, cached, started_at, slot, eval_dir, why,
                    window: {start, end, span_s} | null, stopped_early, teardown_error,
                    command_logs: [path], load, ran_on, infra_skip,
                    build_fixes: [{name, why, source: "tree"|"config", commands, range}]}]
                  in the order they were measured (infra_skip: a skip the machine
                  caused, which the same command again measures again)
    verdicts      {commit: good|bad|skip}   verdicts fed to git bisect
    verdict_reasons {commit: why}
    marks         [{commit, verdict, note}]  verdicts a person gave with `bisector mark`
    teardown_failures [{commit, eval_dir, error}]  what may still be running
    pruned        {at, freed_bytes, kept: [eval_dir]} | null  `bisector runs --prune`
                  dropped the evaluations' logs at `at` (epoch seconds), but those of `kept`
    adaptations   [{name, why, commands}]  what the backend did beyond the candidate's own
                  scripts so they run on today's infrastructure (gce on 2026 GCP), and
                  each build fix any candidate was built with ("build: NAME")
    remote        the repository's GitHub URL (https://github.com/OWNER/REPO) or null
    repo          the checkout bisected (absolute path), "" in a report from before it
    bisect_log    `git bisect log` of the last session
    cost          what the cost model (bisector.cost, as `--dry-run` prints it) expected
                  beside what the run used, or null (a report written before it existed):
                  {price_per_cluster_hour,
                   model: {evaluations, rounds, basis, phases: {build_s, launch_s,
                           warmup_s, collect_s, teardown_s, setup_s} | null,
                           wall_s, cluster_s, cluster_hours, money},
                   model_measured_phases: {as model} | null,
                   measured: {evaluations, reused, wall_s, cluster_s, cluster_hours,
                              counted_whole, money}}
                  model_measured_phases: the same model with this run's measured phase
                  times (mean of each), or null when none were measured;
                  model: from the run's settings and range before any measurement;
                  phases null (and wall_s, cluster_s, cluster_hours, money null): the model
                  has no phase durations for the backend, `basis` says why.
                  measured: evaluations this run made (skips too; `reused`: measurements
                  of earlier runs taken from the cache, which cost nothing here); wall_s:
                  time while at least one evaluation ran; cluster_s: each evaluation's time
                  from its first launch command to the end of its teardown (counted_whole:
                  evaluations without a launch log, counted from their start, build
                  included); money null without a price.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from bisector.report.adaptation import Adaptation, BuildFixApplied

REPORT_VERSION = 2

T = TypeVar("T")


def _build(cls: type[T], data: Any) -> T:
    """A dataclass from a dict, ignoring unknown keys (older/newer report.json)."""
    names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    return cls(**{k: v for k, v in dict(data).items() if k in names})


@dataclass(frozen=True)
class Endpoint:
    commit: str
    subject: str
    value: float | None
    runs: list[float] = field(default_factory=list)  # every run's value, in order


@dataclass(frozen=True)
class Threshold:
    value: float
    how: str  # "given" or "calibrated: ..."
    worse: str = "higher"  # "lower": the metric is worse when lower (a throughput)


@dataclass(frozen=True)
class MergeRef:
    commit: str
    subject: str
    pr: int | None


@dataclass(frozen=True)
class ParentResult:
    commit: str
    value: float | None
    verdict: str | None  # its confirmation verdict
    reverted: list[str] = field(default_factory=list)  # culprits reverted in its runs


@dataclass(frozen=True)
class InsideRange:
    """A culprit merge whose branch could not be narrowed to one commit: the first bad
    commit is after `good` and at or before `bad`; `unmeasured` between could not be
    measured (each a skip, with its reason in the timeline)."""

    good: str
    bad: str
    unmeasured: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Bound:
    """One side of what a run without a culprit established (`Conclusive`)."""

    commit: str
    subject: str
    verdict: str  # good, bad, or "" (not decided: an unsure search's bound)
    value: float | None  # the median of its full-length runs; None: no run measured it
    runs: list[float] = field(default_factory=list)  # every run's value, in order
    # How its verdict is known: "endpoint", "measured", "marked by hand[: note]", the
    # same-tree verdict ("same tree as ..., measured there: ..."), or "" (none).
    how: str = ""


@dataclass(frozen=True)
class Between:
    """A commit between a `Conclusive`'s bounds: it could be the first bad commit."""

    commit: str
    subject: str
    runs: list[float] = field(default_factory=list)  # its runs' values; []: none measured it
    reason: str = ""  # why it has no verdict: its skip's reason, a skip mark, "not measured"


@dataclass(frozen=True)
class Conclusive:
    """What a run that ended without a culprit established: the first bad commit is after
    `last_good` and at or before `first_bad`, one of them or of the `between`."""

    last_good: Bound
    first_bad: Bound
    between: list[Between] = field(default_factory=list)  # oldest first
    unmeasured: list[str] = field(default_factory=list)  # of `between`, no run measured
    # The posterior's probability that the culprit lies there; None with plain git
    # bisect verdicts, which make it certain (given them).
    probability: float | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Conclusive:
        """ValueError when `data` is not one (a field missing or of another type): every
        form of the report says its values, which must be what they claim to be."""
        try:
            return cls(
                last_good=_bound(data["last_good"]),
                first_bad=_bound(data["first_bad"]),
                between=[_between(b) for b in data.get("between") or []],
                unmeasured=[_text(c) for c in data.get("unmeasured") or []],
                probability=_number(data.get("probability")),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a conclusive: {exc!r}") from None


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a string")
    return value


def _number(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{value!r} is not a number")
    return float(value)


def _values(values: Any) -> list[float]:
    return [v for v in map(_number, values or []) if v is not None]


def _bound(data: dict[str, Any]) -> Bound:
    return Bound(
        _text(data["commit"]),
        _text(data.get("subject") or ""),
        _text(data.get("verdict") or ""),
        _number(data.get("value")),
        _values(data.get("runs")),
        _text(data.get("how") or ""),
    )


def _between(data: dict[str, Any]) -> Between:
    return Between(
        _text(data["commit"]),
        _text(data.get("subject") or ""),
        _values(data.get("runs")),
        _text(data.get("reason") or ""),
    )


def _conclusive(data: Any) -> Conclusive | None:
    """report.json's `conclusive`; None without one, or when it cannot be read: it says
    again what the rest of the report holds, and the rest must still read (`bisector
    status`, `runs --prune` keeping the logs the report draws, the nightly's evidence)."""
    if not data:
        return None
    try:
        return Conclusive.from_json(data)
    except ValueError:
        return None


@dataclass(frozen=True)
class RevertCheck:
    """The bad endpoint with the culprits found so far reverted, built and measured at
    full length like any candidate: does it measure good again?"""

    base: str  # the bad endpoint
    reverted: list[str]  # the culprits reverted, newest first
    built: str | None  # the tool's commit of it (refs/bisector/reverts/...); None: no revert
    # "restores" (good), "does not restore" (bad), "conflict" (the revert does not
    # apply), "not measured" (every run a skip: `reason`)
    outcome: str
    verdict: str | None  # good, bad or skip against the threshold; None on a conflict
    value: float | None  # the median of its runs
    runs: list[float] = field(default_factory=list)
    reason: str = ""  # a skip's reason, or the conflict
    conflict_files: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ProfileRow:
    """One function of a profile diff (`go tool pprof -top -diff_base`): how much its own
    time or memory (`flat`) and with its callees (`cum`) grew, as pprof prints it."""

    flat: str
    flat_value: float  # seconds or bytes
    cum: str
    cum_value: float
    function: str
    file: str  # its source file, as the profile names it
    in_culprit: bool  # the file is one the culprit changed


@dataclass(frozen=True)
class ProfileDiff:
    """The culprit's confirmation-run profile against its parent's (bisector.pprof)."""

    kind: str  # "cpu", "heap in use", "heap allocated"
    culprit: str  # the culprit run's profile file
    parent: str  # the parent run's
    command: str  # the go tool pprof command run
    go: str  # the Go whose pprof ran it
    rows: list[ProfileRow]  # what grew most, then the culprit's files' functions
    total: str  # pprof's "Showing nodes accounting for ..." line
    text: str = ""  # the whole -top output, kept in the run directory
    error: str = ""  # why there is no diff ("" when there is)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProfileDiff:
        values = dict(data)
        values["rows"] = [_build(ProfileRow, r) for r in data.get("rows", [])]
        return _build(cls, values)


@dataclass(frozen=True)
class Culprit:
    commit: str
    subject: str
    author: str
    date: str
    pr: int | None
    merge: MergeRef | None
    merges: list[MergeRef]
    confirmed: bool
    confirmation: dict[str, str]
    confidence: float | None
    value: float | None
    parent: ParentResult
    # Why it is not confirmed: a commit of the claim measured against it at full length.
    unconfirmed: list[str] = field(default_factory=list)
    hunt: int = 1  # which search found it: the first, or one with culprits reverted
    reverted: list[str] = field(default_factory=list)  # culprits reverted in its own runs
    # A merge whose branch could not be narrowed to one commit (inner commits unbuildable).
    inside: InsideRange | None = None
    # The bad endpoint with this culprit and the ones found before it reverted.
    revert: RevertCheck | None = None
    # Its share of the step from good to bad: from the revert checks (what reverting it
    # took off the bad endpoint) or, without them, from its own step over its parent.
    share: float | None = None
    share_basis: str = ""  # "revert" or "step"
    is_merge: bool = False  # reverted against its first parent (`git revert -m 1`)
    # The culprit's confirmation-run profiles against its parent's: what grew, where.
    profiles: list[ProfileDiff] = field(default_factory=list)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Culprit:
        merge = data.get("merge")
        inside = data.get("inside")
        revert = data.get("revert")
        return cls(
            commit=data["commit"],
            subject=data.get("subject", ""),
            author=data.get("author", ""),
            date=data.get("date", ""),
            pr=data.get("pr"),
            merge=_build(MergeRef, merge) if merge else None,
            merges=[_build(MergeRef, m) for m in data.get("merges", [])],
            confirmed=bool(data.get("confirmed")),
            confirmation=dict(data.get("confirmation", {})),
            confidence=data.get("confidence"),
            value=data.get("value"),
            parent=_build(ParentResult, data["parent"]),
            unconfirmed=list(data.get("unconfirmed", [])),
            hunt=int(data.get("hunt", 1)),
            reverted=list(data.get("reverted", [])),
            inside=_build(InsideRange, inside) if inside else None,
            revert=_build(RevertCheck, revert) if revert else None,
            share=data.get("share"),
            share_basis=data.get("share_basis", ""),
            is_merge=bool(data.get("is_merge", False)),
            profiles=[ProfileDiff.from_json(p) for p in data.get("profiles", [])],
        )


@dataclass(frozen=True)
class PrunedLogs:
    """`bisector runs --prune` dropped the evaluations' logs, but those the report draws."""

    at: float  # epoch seconds
    freed_bytes: int
    kept: list[str] = field(default_factory=list)  # evaluation directories kept whole


@dataclass(frozen=True)
class LogWindow:
    """The time span the evaluation's log covers (epoch seconds)."""

    start: float | None
    end: float | None
    span_s: float


@dataclass(frozen=True)
class Evaluation:
    n: int  # 1-based order of measurement
    commit: str
    subject: str
    phase: str  # endpoint, bisect, confirm
    verdict: str  # good, bad, skip (this run alone, against the threshold)
    value: float | None
    metrics: dict[str, Any]
    duration_s: float
    reason: str | None  # why no value (skip), with the failing command's last lines
    launch_attempts: int
    logs: list[str]
    cached: bool  # reused from an earlier run's measurement
    started_at: float = 0.0
    slot: int = 0
    eval_dir: str = ""
    why: str = ""  # why the search measured this commit there
    window: LogWindow | None = None
    stopped_early: str | None = None  # e.g. "conflicts 61234 >= 50000 after 3m10s of 30m"
    teardown_error: str | None = None
    command_logs: list[str] = field(default_factory=list)  # evals/NNN/build.log, ...
    load: str = ""  # the share of the offered load that ran, when the backend counts it
    # What its build applied beyond `go build` of the tree (<eval>/build-fixes.json): the
    # tree's own steps and the configured build fixes.
    build_fixes: list[BuildFixApplied] = field(default_factory=list)
    ran_on: str = ""  # where it ran when not in the driving process (a Job's pod, its node)
    reverted: list[str] = field(default_factory=list)  # culprits reverted in it before its build
    built: str = ""  # the tool's commit built in its place (reverts applied), "" for its own
    # A skip the machine caused (launch, collect, a full disk), not the tree: the same
    # command again measures the commit again (bisector.measure.measurement.infra_skip).
    infra_skip: bool = False

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Evaluation:
        window = data.get("window")
        values = dict(data)
        values["window"] = _build(LogWindow, window) if window else None
        values["build_fixes"] = [_build(BuildFixApplied, f) for f in data.get("build_fixes", [])]
        values.setdefault("n", 0)
        values.setdefault("subject", "")
        values.setdefault("metrics", {})
        values.setdefault("launch_attempts", 0)
        values.setdefault("logs", [])
        values.setdefault("cached", False)
        values.setdefault("duration_s", 0.0)
        values.setdefault("reason", None)
        values.setdefault("verdict", "skip" if values.get("value") is None else "")
        return _build(cls, values)


@dataclass(frozen=True)
class LikelyRange:
    commits: list[str]
    probability: float


@dataclass(frozen=True)
class SearchSummary:
    mode: str  # "git-bisect" or "posterior"
    error_rate: float = 0.0
    likelihood: str = "verdict"
    parallel: int = 1
    rounds: dict[str, int] = field(default_factory=dict)
    confidence: float | None = None
    sure: bool = True
    likely_range: LikelyRange | None = None
    best_guess: list[str] = field(default_factory=list)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SearchSummary:
        likely = data.get("likely_range")
        values = dict(data)
        values["likely_range"] = _build(LikelyRange, likely) if likely else None
        return _build(cls, values)


@dataclass(frozen=True)
class Mark:
    commit: str
    verdict: str
    note: str = ""


@dataclass(frozen=True)
class TeardownFailure:
    commit: str
    eval_dir: str
    error: str


@dataclass(frozen=True)
class ModelPhases:
    """One evaluation's phase durations in the cost model (seconds)."""

    build_s: float
    launch_s: float
    warmup_s: float
    collect_s: float
    teardown_s: float
    setup_s: float  # once per bisection (a base cluster)


@dataclass(frozen=True)
class ModelCost:
    """What the cost model expected from the run's settings, before any measurement."""

    evaluations: int
    rounds: int
    basis: str  # where the phase durations come from, or why there are none
    phases: ModelPhases | None  # None: no phase durations for the backend: no time figures
    wall_s: float | None
    cluster_s: float | None
    cluster_hours: float | None
    money: float | None  # None: no price, or no phases

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ModelCost:
        phases = data.get("phases")
        values = dict(data)
        values["phases"] = _build(ModelPhases, phases) if phases else None
        return _build(cls, values)


@dataclass(frozen=True)
class MeasuredCost:
    """What the run used, from its measurements (see the module docstring for each figure)."""

    evaluations: int  # made by this run, skips too
    reused: int  # measurements of earlier runs used from the cache: no cost in this run
    wall_s: float  # while at least one evaluation ran
    cluster_s: float  # launch to the end of teardown, summed over evaluations
    cluster_hours: float
    counted_whole: int  # evaluations without a launch log: counted whole, build included
    money: float | None  # None: no price given
    earlier: int = 0  # of `evaluations`, those an earlier session of the run directory made


@dataclass(frozen=True)
class CostSummary:
    price_per_cluster_hour: float | None
    model: ModelCost  # before the run, as --dry-run said it
    measured: MeasuredCost
    # The model's evaluations and rounds with this run's measured phase times; None when
    # none were measured (or a report written before the field).
    model_measured_phases: ModelCost | None = None

    @property
    def expected(self) -> ModelCost:
        """The model to show: with this run's phase times once it has them."""
        return self.model_measured_phases or self.model

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CostSummary:
        remodel = data.get("model_measured_phases")
        return cls(
            price_per_cluster_hour=data.get("price_per_cluster_hour"),
            model=ModelCost.from_json(data["model"]),
            measured=_build(MeasuredCost, data["measured"]),
            model_measured_phases=ModelCost.from_json(remodel) if remodel else None,
        )


@dataclass(frozen=True)
class EtaCheck:
    """The ETA said when the search began (after the endpoints) against the wall time
    the run took (this session of it), both in seconds from the session's start."""

    predicted_s: float | None  # wall time said then (time so far + the ETA); None: none said
    predicted_at_s: float | None  # when it was said
    actual_s: float  # the session's wall time, start to report


@dataclass
class Report:
    status: str  # found, inconclusive, unsure
    culprit: Culprit | None
    candidates: list[str]
    search: SearchSummary
    good: Endpoint
    bad: Endpoint
    threshold: Threshold
    metric: str
    repeats: int
    first_parent: bool
    paths: list[str]
    backend: str
    config_fingerprint: str
    run_dir: str
    range_size: int
    range: list[str]
    first_parent_range: list[str]
    evaluations: list[Evaluation]
    verdicts: dict[str, str]
    verdict_reasons: dict[str, str]
    bisect_log: str
    # commit -> its search verdict, where it came from a same-tree merge (runs of another
    # commit with its tree): "same tree as <commits>, measured there: <values>"
    same_tree_verdicts: dict[str, str] = field(default_factory=dict)
    marks: list[Mark] = field(default_factory=list)
    teardown_failures: list[TeardownFailure] = field(default_factory=list)
    remote: str | None = None
    repo: str = ""  # the checkout bisected: `runs --repo` finds the run from elsewhere
    cost: CostSummary | None = None  # None: a report written before the cost section
    adaptations: list[Adaptation] = field(default_factory=list)
    eta: EtaCheck | None = None  # None: a report written before the field
    # Every culprit found, the first search's first: `culprit` is culprits[0].
    culprits: list[Culprit] = field(default_factory=list)
    # Why the culprits found may not explain the whole regression ("": they do, or it
    # was not checked): the bad endpoint with all of them reverted still measures bad.
    unexplained: str = ""
    revert_check: bool = True  # whether `[run] revert_check` was on
    # What to do, in one block a person pastes into an issue (bisector.report.action).
    action: list[str] = field(default_factory=list)
    pruned: PrunedLogs | None = None  # the logs `bisector runs --prune` dropped, if it ran
    # Without a culprit: what the run established (bisector.report.conclusive).
    conclusive: Conclusive | None = None
    version: int = REPORT_VERSION

    @property
    def confirmed(self) -> bool:
        return self.culprit is not None and self.culprit.confirmed

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Report:
        culprit = data.get("culprit")
        return cls(
            status=data.get("status", "inconclusive"),
            culprit=Culprit.from_json(culprit) if culprit else None,
            candidates=list(data.get("candidates", [])),
            search=SearchSummary.from_json(data.get("search") or {"mode": "git-bisect"}),
            good=_build(Endpoint, data["good"]),
            bad=_build(Endpoint, data["bad"]),
            threshold=_build(Threshold, data["threshold"]),
            metric=data.get("metric", ""),
            repeats=data.get("repeats", 1),
            first_parent=bool(data.get("first_parent")),
            paths=list(data.get("paths", [])),
            backend=data.get("backend", ""),
            config_fingerprint=data.get("config_fingerprint", ""),
            run_dir=data.get("run_dir", ""),
            range_size=data.get("range_size", 0),
            range=list(data.get("range", [])),
            first_parent_range=list(data.get("first_parent_range", [])),
            evaluations=[Evaluation.from_json(e) for e in data.get("evaluations", [])],
            verdicts=dict(data.get("verdicts", {})),
            verdict_reasons=dict(data.get("verdict_reasons", {})),
            bisect_log=data.get("bisect_log", ""),
            same_tree_verdicts=_same_tree_verdicts(data),
            marks=[_build(Mark, m) for m in data.get("marks", [])],
            teardown_failures=[
                _build(TeardownFailure, t) for t in data.get("teardown_failures", [])
            ],
            remote=data.get("remote"),
            cost=CostSummary.from_json(data["cost"]) if data.get("cost") else None,
            adaptations=[_build(Adaptation, a) for a in data.get("adaptations", [])],
            eta=_build(EtaCheck, data["eta"]) if data.get("eta") else None,
            culprits=[Culprit.from_json(c) for c in data.get("culprits", [])]
            or ([Culprit.from_json(culprit)] if culprit else []),
            unexplained=data.get("unexplained", ""),
            revert_check=bool(data.get("revert_check", False)),
            action=list(data.get("action", [])),
            pruned=_build(PrunedLogs, data["pruned"]) if data.get("pruned") else None,
            conclusive=_conclusive(data.get("conclusive")),
            version=data.get("version", 1),
        )

    @classmethod
    def read(cls, path: Path) -> Report:
        return cls.from_json(json.loads(path.read_text(encoding="utf-8")))

    def write_json(self, run_dir: Path) -> Path:
        path = run_dir / "report.json"
        path.write_text(json.dumps(self.to_json(), indent=2, default=str) + "\n")
        return path


def _same_tree_verdicts(data: dict[str, Any]) -> dict[str, str]:
    """The report's same-tree verdicts; a report.json from before the field had them only
    as verdict reasons, which began with the words below (read back for those only)."""
    if "same_tree_verdicts" in data:
        return dict(data["same_tree_verdicts"])
    reasons: dict[str, str] = dict(data.get("verdict_reasons", {}))
    return {c: r for c, r in reasons.items() if r.startswith("same tree as ")}
