"""The nightly watches what CI builds keep (apiserver logs, CL2 summaries) and refuses the rest
with one line, as `bisector history` does (bisector.ci.scoring.ci_source_problem)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector.entry import main
from bisector.errors import ConfigError
from bisector.nightly.config import load_nightly_config

CL2_JOB = "ci-kubernetes-e2e-gce-scale-performance-100"


def _config(tmp_path: Path, metric: str) -> Path:
    config = tmp_path / "nightly.toml"
    config.write_text(f'[nightly]\n[[nightly.jobs]]\njob = "{CL2_JOB}"\nmetric = "{metric}"\n')
    return config


@pytest.mark.parametrize(
    "metric", ["apiserver_patch_node_status_p99_ms", "pod_startup_p99_ms", "scheduling_throughput"]
)
def test_a_cl2_metric_is_watched(tmp_path: Path, metric: str) -> None:
    job = load_nightly_config(_config(tmp_path, metric)).jobs[0]
    assert (job.metric, job.metrics.source_of(metric)) == (metric, "cl2")


def test_a_user_cl2_metric_is_watched(tmp_path: Path) -> None:
    config = _config(tmp_path, "list_pods_p99_ms")
    config.write_text(
        config.read_text()
        + '[nightly.jobs.metrics.list_pods_p99_ms]\nsource = "cl2"\n'
        + 'summary = "APIResponsivenessPrometheus_load_"\nkey = "Perc99"\n'
        + 'labels = { Verb = "LIST", Resource = "pods", Scope = "cluster" }\n'
    )
    job = load_nightly_config(config).jobs[0]
    assert job.metrics.source_of("list_pods_p99_ms") == "cl2"


@pytest.mark.parametrize(
    ("metric", "source"),
    [("terminated_watchers", "prometheus"), ("apiserver_cpu_s", "process")],
)
def test_a_metric_ci_builds_do_not_keep_is_refused_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], metric: str, source: str
) -> None:
    config = _config(tmp_path, metric)
    with pytest.raises(ConfigError, match=rf"nightly.jobs\[0\].metric`: {metric} is a {source} "):
        load_nightly_config(config)
    with pytest.raises(SystemExit) as exit_info:
        main(["nightly", "--config", str(config)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert err.count("\n") == 1, err
    # The same words as `bisector history --metric` (tests/commands/test_history_cl2.py).
    assert "CI builds keep apiserver logs and CL2 summaries only; choose a log or cl2" in err
    assert not (tmp_path / "nightly-state").exists(), "nothing is created for a bad config"


def test_the_cl2_example_config_is_valid_and_its_hunt_can_measure_its_metric() -> None:
    """configs/nightly-cl2.toml: the real 2026 job, cl2 metrics built in and user-defined,
    and a kind backend whose workload hands over the CL2 report the hunt measures."""
    from bisector.backends.kind.steps import KindSettings
    from bisector.nightly.hunt import run_settings, unmeasurable
    from bisector.nightly.runner import check_run_table

    root = Path(__file__).resolve().parents[2]
    cfg = load_nightly_config(root / "configs" / "nightly-cl2.toml")
    assert {j.job for j in cfg.jobs} == {CL2_JOB}
    assert {j.bucket for j in cfg.jobs} == {"kubernetes-ci-logs"}
    assert [j.metrics.source_of(j.metric) for j in cfg.jobs] == ["cl2"] * 3
    assert [j.metrics.worse(j.metric) for j in cfg.jobs] == ["higher", "lower", "higher"]
    hunted = cfg.jobs[0]
    check_run_table(hunted)
    settings = run_settings(cfg, hunted, "HEAD~1", "HEAD", cfg.state_dir / "hunts" / "x")
    assert unmeasurable(settings) is None
    kind = KindSettings.from_section(settings.backend_section)
    assert kind.workload is not None and '--report-dir="$BISECTOR_REPORT_DIR"' in kind.workload
    assert "\n" not in kind.workload.strip()  # TOML's line-ending backslashes join the lines


def _nightly(tmp_path: Path, text: str) -> Path:
    config = tmp_path / "nightly.toml"
    config.write_text(text)
    return config


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        # Issue 30 item 2: a job's bisection keys were read only when its hunt began,
        # after the scoring, at night; now at load, with the job's table path.
        (
            '[nightly.jobs.run]\nbackend = "sim"\nrepeats = 0\n',
            "key `nightly.jobs[1].run.repeats` must be at least 1, got 0",
        ),
        (
            '[nightly.jobs.run]\nbackend = "sim"\nwarmup = "1m"\n'
            "[nightly.jobs.backends.sim]\nnodes = 0\n",
            "key `nightly.jobs[1].backends.sim.nodes` must be at least 1, got 0",
        ),
        (
            '[nightly.jobs.run]\nbackend = "sim"\n[nightly.jobs.backends.simm]\nnodes = 5\n',
            "`[nightly.jobs[1].backends.simm]` is not a known table; did you mean "
            "[nightly.jobs[1].backends.sim]?",
        ),
        ("budget = { cluster_hours = 0 }\n", "`nightly.jobs[1].budget.cluster_hours` must be more"),
        ("min_bad_runs = 1\n", "`nightly.jobs[1].min_bad_runs` must be at least 2 (one bad run"),
    ],
)
def test_a_second_jobs_bad_key_is_refused_at_load_with_its_table_path(
    tmp_path: Path, extra: str, says: str
) -> None:
    text = (
        '[nightly]\n[[nightly.jobs]]\njob = "a"\n'
        f'[[nightly.jobs]]\njob = "b"\nrepo = "{tmp_path}"\n{extra}'
    )
    config = _nightly(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_nightly_config(config)
    assert str(caught.value).startswith(f"{config}: ") and says in str(caught.value)


def test_a_misspelt_top_table_beside_nightly_is_refused(tmp_path: Path) -> None:
    config = _nightly(tmp_path, '[nightly]\n[[nightly.jobs]]\njob = "a"\n[nightlyy]\nwindow = 3\n')
    with pytest.raises(ConfigError, match=r"`\[nightlyy\]` is not a known table; did you mean"):
        load_nightly_config(config)


def _hunting(tmp_path: Path, metric: str) -> Path:
    config = tmp_path / "nightly.toml"
    config.write_text(
        f'[nightly]\n[[nightly.jobs]]\njob = "ci-kubernetes-kubemark-gce-scale"\nrepo = "."\n'
        f'metric = "{metric}"\n[nightly.jobs.run]\nbackend = "procs"\nwarmup = "1m"\n'
        'check_every = "2m"\n'
    )
    return config


def test_a_hunts_looks_are_checked_at_load_as_its_backend_will_check_them(tmp_path: Path) -> None:
    # The job's backend was built at load without the hunt's warmup and looks: procs'
    # refusal of a look no sooner than the warmup's end came at the hunt, after a night's
    # scoring.
    with pytest.raises(ConfigError, match=r"`run.check_every` = 120s is not shorter than the"):
        load_nightly_config(_hunting(tmp_path, "conflicts"))
    # The hunt's metric decides whether its warmups are watched: a rate never is.
    assert load_nightly_config(_hunting(tmp_path, "conflicts_per_min")).jobs[0].repo is not None
