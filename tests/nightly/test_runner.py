"""`bisector nightly` without a bisection: change points, idempotence, budget, lock, config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import git
import pytest

from bisector.errors import BisectorError, ConfigError
from bisector.exitcodes import NightlyExit
from bisector.nightly import run_nightly
from bisector.nightly.store import NightlyStore, nightly_lock
from bisector.sim.demo_repo import create_demo_repo
from tests.helpers.ci_history import CiRun, commit_of, write_job_history
from tests.helpers.nightly import demo_ci_runs, nightly_config, run_cli


def quiet(_line: str) -> None:
    """Drop the nightly's progress lines."""


def hunts(state: Path) -> list[tuple[str, int, int]]:
    store = NightlyStore(state / "nightly.db")
    try:
        return [(h.status, h.good_run, h.bad_run) for h in store.hunts()]
    finally:
        store.close()


@pytest.mark.slow
def test_a_lone_bad_run_triggers_nothing_and_a_later_step_is_reported_once(
    gcs_client: Any, tmp_path: Path
) -> None:
    bucket, job = "nightly-lone", "ci-kubernetes-e2e-gce-scale-performance"
    values = [45, 52, 48, 480, 50, 47, 55, 44]  # run 103 is noise
    runs = [CiRun(200 + k, commit_of(200 + k), conflicts=v) for k, v in enumerate(values)]
    runs.append(CiRun(208, commit_of(208), conflicts=500, result=None))  # still running
    write_job_history(gcs_client, bucket, job, runs, latest_build=207)
    state = tmp_path / "state"
    config = nightly_config(tmp_path / "n.toml", bucket=bucket, job=job, repo=None, state=state)

    assert run_nightly(config, log=quiet) == 0
    assert hunts(state) == []
    assert not (state / "reports").exists()

    # 208 finishes bad: a lone bad run at the end is not a step yet.
    write_job_history(gcs_client, bucket, job, [CiRun(208, commit_of(208), conflicts=500)])
    assert run_nightly(config, log=quiet) == 0
    assert hunts(state) == []

    # The next night a second bad run lands: a step, not noise.
    write_job_history(gcs_client, bucket, job, [CiRun(209, commit_of(209), conflicts=530)])

    assert run_nightly(config, log=quiet) == 4  # no backend: reported, not bisected
    assert hunts(state) == [("unbisected", 207, 208)]
    report = next((state / "reports").glob("*/*/nightly.json"))
    data = json.loads(report.read_text())
    assert data["status"] == "unbisected"
    assert "no backend" in data["reason"]
    assert data["range"]["good_commit"] == commit_of(207)
    assert data["range"]["bad_commit"] == commit_of(208)
    assert [r["run"] for r in data["runs"]] == list(range(200, 210))
    assert "<svg" in report.with_name("nightly.html").read_text()

    assert run_nightly(config, log=quiet) == 0  # already reported


@pytest.mark.slow
def test_budget_exceeded_stops_the_hunt_and_reports_it(gcs_client: Any, tmp_path: Path) -> None:
    demo = create_demo_repo(tmp_path / "kubernetes", seed=2, prs=12)
    runs, good, bad = demo_ci_runs(demo)
    bucket, job = "nightly-budget", "ci-kubernetes-kubemark-5000"
    write_job_history(gcs_client, bucket, job, runs)
    state = tmp_path / "state"
    config = nightly_config(
        tmp_path / "n.toml",
        bucket=bucket,
        job=job,
        repo=demo.path,
        state=state,
        budget="evaluations = 2, cluster_hours = 10",
    )

    assert run_nightly(config, log=quiet) == 4

    data = json.loads(next((state / "reports").glob("*/*/nightly.json")).read_text())
    assert data["status"] == "budget"
    assert "budget of 2 evaluations used up" in data["reason"]
    assert data["culprit"] is None
    measured = data["bisection"]["evaluations"]
    assert [(e["commit"], e["phase"]) for e in measured] == [
        (good, "endpoint"),
        (bad, "endpoint"),
    ]
    assert data["budget"]["used"]["evaluations"] == 2
    assert 0 < data["budget"]["used"]["cluster_hours"] < 10
    assert hunts(state)[0][0] == "budget"
    assert run_nightly(config, log=quiet) == 0  # reported once, not hunted again


def test_a_second_nightly_on_the_same_state_is_refused(gcs_client: Any, tmp_path: Path) -> None:
    state = tmp_path / "state"
    config = nightly_config(
        tmp_path / "n.toml", bucket="nightly-lock", job="j", repo=None, state=state
    )
    with nightly_lock(state), pytest.raises(BisectorError) as caught:
        run_nightly(config, log=quiet)
    assert caught.value.exit_code == NightlyExit.BUSY
    assert "another bisector nightly is running" in str(caught.value)


BAD_CONFIGS = [
    ("[nightly]\n", "nightly.jobs"),
    ('[nightly]\nwindow = 2\n[[nightly.jobs]]\njob = "j"\n', "nightly.window"),
    ('[nightly]\n[[nightly.jobs]]\njob = "j"\nmetric = "speed"\n', "nightly.jobs[0].metric"),
    ('[nightly]\n[[nightly.jobs]]\njob = "j"\ntreshold = 5\n', "nightly.jobs[0].treshold"),
    (
        '[nightly]\n[[nightly.jobs]]\njob = "j"\nbudget = { evaluations = 0 }\n',
        "nightly.jobs[0].budget.evaluations",
    ),
    (
        '[nightly]\n[[nightly.jobs]]\njob = "j"\n[nightly.jobs.run]\nbackend = "sim"\n',
        "nightly.jobs[0].repo",
    ),
    (
        '[nightly]\n[[nightly.jobs]]\njob = "j"\nrepo = "."\n[nightly.jobs.run]\nbackend = "x"\n',
        "nightly.jobs[0].run.backend",
    ),
    ('[nightly]\nupload = "s3://b"\n[[nightly.jobs]]\njob = "j"\n', "nightly.upload"),
    ('[nightly]\n[[nightly.jobs]]\njob = "j"\nthreshold = nan\n', "nightly.jobs[0].threshold"),
]


@pytest.mark.parametrize(("text", "key"), BAD_CONFIGS)
def test_bad_config_names_the_file_and_key(tmp_path: Path, text: str, key: str) -> None:
    config = tmp_path / "nightly.toml"
    config.write_text(text)
    with pytest.raises(ConfigError) as caught:
        run_nightly(config, log=quiet)
    assert str(config) in str(caught.value)
    assert f"`{key}`" in str(caught.value)
    assert not (tmp_path / "nightly-state").exists(), "nothing is created for a bad config"


def test_bad_config_exits_2_with_one_line(tmp_path: Path) -> None:
    config = tmp_path / "nightly.toml"
    config.write_text('[nightly]\n[[nightly.jobs]]\njob = "j"\nmetric = 3\n')
    done = run_cli(config)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert str(config) in done.stderr and "nightly.jobs[0].metric" in done.stderr


def test_the_example_config_is_valid() -> None:
    from bisector.nightly.config import load_nightly_config
    from bisector.nightly.runner import check_run_table

    root = Path(__file__).resolve().parents[2]
    cfg = load_nightly_config(root / "configs" / "nightly.toml")
    assert [j.name for j in cfg.jobs] == ["kubemark-5000", "gce-scale-performance"]
    assert cfg.jobs[0].budget.evaluations == 12
    assert cfg.jobs[1].bisect_config is None
    check_run_table(cfg.jobs[0])


@pytest.mark.slow
def test_a_narrower_range_inside_a_hunted_one_is_not_hunted_again(
    gcs_client: Any, tmp_path: Path
) -> None:
    bucket, job = "nightly-narrower", "ci-kubernetes-kubemark-500"
    runs = [CiRun(300 + k, commit_of(300 + k), conflicts=v) for k, v in enumerate((40, 50, 45))]
    runs.append(CiRun(303, commit_of(303), conflicts=500, result=None))  # still running
    runs += [CiRun(304, commit_of(304), conflicts=510), CiRun(305, commit_of(305), conflicts=490)]
    write_job_history(gcs_client, bucket, job, runs, latest_build=305)
    state = tmp_path / "state"
    config = nightly_config(tmp_path / "n.toml", bucket=bucket, job=job, repo=None, state=state)
    assert run_nightly(config, log=quiet) == 4
    assert hunts(state) == [("unbisected", 302, 304)]

    write_job_history(gcs_client, bucket, job, [CiRun(303, commit_of(303), conflicts=500)])
    lines: list[str] = []

    assert run_nightly(config, log=lines.append) == 0

    assert hunts(state) == [("unbisected", 302, 304)]
    assert any("inside runs 302..304" in line for line in lines)


@pytest.mark.slow
def test_a_hunt_that_cannot_start_is_reported_and_tried_again(
    gcs_client: Any, tmp_path: Path
) -> None:
    bucket, job = "nightly-stale-checkout", "ci-kubernetes-kubemark-100"
    values = (40, 50, 45, 500, 510)
    runs = [CiRun(400 + k, commit_of(400 + k), conflicts=v) for k, v in enumerate(values)]
    write_job_history(gcs_client, bucket, job, runs)
    checkout = tmp_path / "kubernetes"  # a checkout that has not fetched the CI commits yet
    repo = git.Repo.init(checkout)
    (checkout / "README.md").write_text("k\n")
    repo.index.add(["README.md"])
    repo.index.commit("initial")
    state = tmp_path / "state"
    config = nightly_config(tmp_path / "n.toml", bucket=bucket, job=job, repo=checkout, state=state)
    # A window of 5 runs: one that still held the regression and its revert would show
    # both change points (and hunt the regression); this one moves past it.
    config.write_text(config.read_text().replace("[nightly]\n", "[nightly]\nwindow = 5\n", 1))

    for _night in range(2):
        assert run_nightly(config, log=quiet) == 4
        assert hunts(state) == [("hunting", 402, 403)]
    # The regression is reverted and out of the window: no step, the open hunt goes on.
    reverted = [CiRun(405 + k, commit_of(405 + k), conflicts=v) for k, v in enumerate((41, 43, 40))]
    write_job_history(gcs_client, bucket, job, reverted)
    lines: list[str] = []
    assert run_nightly(config, log=lines.append) == 4
    assert any("no regression" in line for line in lines)
    assert any("resuming the hunt" in line for line in lines)
    assert hunts(state) == [("hunting", 402, 403)]
    data = json.loads(next((state / "reports").glob("*/*/nightly.json")).read_text())
    assert data["status"] == "failed"
    assert commit_of(402)[:12] in data["reason"] or "revision" in data["reason"]
    assert data["bisection"]["evaluations"] == []


@pytest.mark.slow
def test_a_user_metric_drives_the_nightly(gcs_client: Any, tmp_path: Path) -> None:
    # `[nightly.jobs.metrics.NAME]` is read by the one metric registry: the CI runs are
    # scored with it and the step found in it, as `run` and `history` would (issue 11).
    bucket, job = "nightly-user-metric", "ci-kubernetes-kubemark-gce-scale"
    values = [45, 52, 48, 50, 47, 480, 520, 510]
    runs = [CiRun(300 + k, commit_of(300 + k), conflicts=v) for k, v in enumerate(values)]
    write_job_history(gcs_client, bucket, job, runs)
    state = tmp_path / "state"
    config = tmp_path / "n.toml"
    config.write_text(
        f"""
[nightly]
state = "{state}"

[[nightly.jobs]]
job = "{job}"
bucket = "{bucket}"
metric = "node_patch_409"

[nightly.jobs.metrics.node_patch_409]
verb = "PATCH"
path = "^/api/v1/nodes/"
statuses = [409]
""",
        encoding="utf-8",
    )
    lines: list[str] = []
    assert run_nightly(config, log=lines.append) == 4  # no backend: reported, not bisected
    # Progress while it works: one line per CI run scored.
    assert sum(" scored (" in line for line in lines) == len(values)
    data = json.loads(next((state / "reports").glob("*/*/nightly.json")).read_text())
    assert data["metric"] == "node_patch_409"
    assert [r["value"] for r in data["runs"]] == values
    assert (data["range"]["good_run"], data["range"]["bad_run"]) == (304, 305)
    # The same name without its table is the registry's one error, naming the job's key.
    config.write_text(config.read_text().split("[nightly.jobs.metrics")[0], encoding="utf-8")
    with pytest.raises(ConfigError, match=r"nightly\.jobs\[0\]\.metric.*unknown metric"):
        run_nightly(config, log=quiet)


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("a = 1\n", "`nightly` is missing"),
        ('[nightly]\nstate = "x"\n', "`nightly.jobs` is missing"),
        ('[[nightly.jobs]]\njob = "j"\n[nightly.jobs.run]\nbackend = "sim"\n', ".repo` is missing"),
    ],
)
def test_a_missing_nightly_key_names_the_example_that_sets_it(
    tmp_path: Path, text: str, key: str
) -> None:
    """Issue 22, point 1: configs/nightly.toml is the example with every nightly key."""
    from bisector.nightly.config import load_nightly_config

    path = tmp_path / "n.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_nightly_config(path)
    assert key in str(info.value) and str(info.value).endswith("configs/nightly.toml sets it")


@pytest.mark.slow
def test_several_regressions_are_hunted_newest_first_one_a_night(
    gcs_client: Any, tmp_path: Path
) -> None:
    bucket, job = "nightly-two-steps", "ci-kubernetes-e2e-gce-scale-performance-100"
    values = [45, 52, 48, 50, 47, 44, 51, 49, 46, 53, 48, 50]  # runs 500..511
    values += [200, 210, 190, 205, 198, 202, 195, 207]  # 512..519: the first regression
    values += [800, 820, 790, 810, 805, 815]  # 520..525: the second
    runs = [CiRun(500 + k, commit_of(500 + k), conflicts=v) for k, v in enumerate(values)]
    write_job_history(gcs_client, bucket, job, runs)
    state = tmp_path / "state"
    config = nightly_config(tmp_path / "n.toml", bucket=bucket, job=job, repo=None, state=state)

    assert run_nightly(config, log=quiet) == 4  # no backend: reported, not bisected
    assert hunts(state) == [("unbisected", 519, 520)]  # the newest first
    data = json.loads(next((state / "reports").glob("*/*/nightly.json")).read_text())
    assert (data["range"]["good_run"], data["range"]["bad_run"]) == (519, 520)
    assert data["range"]["threshold_source"] == "change point"
    assert data["range"]["p_value"] < 1e-3
    assert data["higher_is_worse"] is True
    points = data["change_points"]
    assert [(c["last_before_run"], c["first_after_run"]) for c in points] == [
        (511, 512),
        (519, 520),
    ]
    assert [(c["direction"], c["hunted"]) for c in points] == [
        ("regression", False),
        ("regression", True),
    ]
    assert all(c["p_value"] < 1e-3 for c in points)
    markdown = next((state / "reports").glob("*/*/nightly.md")).read_text()
    assert "change point at runs 519..520: 201 -> 808 (+302%), regression, p<1e-12 (this hunt)" in (
        markdown
    )

    lines: list[str] = []
    assert run_nightly(config, log=lines.append) == 4  # the older one, the next night
    assert (
        f"{job}: regressions in conflicts, newest first: runs 519..520 (p<1e-12), "
        "runs 511..512 (p<1e-12)" in lines
    )
    assert any("runs 519 and 520 already hunted" in line for line in lines)
    assert hunts(state) == [("unbisected", 519, 520), ("unbisected", 511, 512)]
    assert run_nightly(config, log=quiet) == 0  # both hunted
