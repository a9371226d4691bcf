"""The gce backend with the REAL 2017 scripts of a kubernetes checkout, on the GCE twin.

Runs only with `make contract KUBE=/path/to/kubernetes` (a scratch checkout: the
build writes _output/ into it, the instrumentation patch is applied to it, and
the kubemark scripts write their files under test/kubemark/resources, as on a
real machine). Without KUBE it is skipped, saying how to run it.

It must reach: base cluster up (cluster/kube-up.sh), kubemark master created
under the name bisector copies the log from (test/kubemark/start-kubemark.sh),
hollow nodes requested within the base cluster's capacity, the log copied, and
everything deleted at the end (stop-kubemark.sh, cluster/kube-down.sh): the
twin's project holds nothing billable. Each script step the twin saw is written
to `$CONTRACT_OUT/<commit>-steps.txt` when CONTRACT_OUT is set.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bisector.backends import gce_steps
from bisector.backends.base import BackendContext, Candidate
from bisector.backends.gce import GceBackend
from bisector.config import Section, load_config
from bisector.twin import TwinConfig, install
from bisector.twin.state import Home
from tests.helpers.loop_driver import evaluate

ROOT = Path(__file__).resolve().parents[2]
KUBE = os.environ.get("KUBE")
HOW = "the contract test needs a kubernetes checkout: make contract KUBE=/path/to/kubernetes"

pytestmark = pytest.mark.skipif(not KUBE, reason=HOW)


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def twin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Home:
    home = install(tmp_path / "twin", TwinConfig(project="twin-project", log_duration="10m"))
    monkeypatch.setenv("PATH", f"{home.bin}{os.pathsep}{os.environ['PATH']}")
    return home


def _section(tmp_path: Path, checkout: Path) -> Section:
    """configs/gce-kubemark-500.toml's [backends.gce], with the twin's project."""
    gce = load_config(ROOT / "configs" / "gce-kubemark-500.toml").table("backends").table("gce")
    data = dict(gce.data)
    data.update(project="twin-project", base_checkout=str(checkout),
                build_cache_dir=str(tmp_path / "cache"), retry_initial="1s")  # fmt: skip
    return Section(data, "gce-kubemark-500.toml", "backends.gce")


def test_the_real_scripts_run_end_to_end_on_the_twin(twin: Home, tmp_path: Path) -> None:
    assert KUBE is not None
    checkout = Path(KUBE).absolute()
    commit = _git(checkout, "rev-parse", "HEAD")
    context = BackendContext(_section(tmp_path, checkout), tmp_path / "run", warmup_s=0.0)
    backend = GceBackend(context, sleep=lambda s: None)
    cfg = backend.cfg
    cand = Candidate(commit, checkout, tmp_path / "run" / "evals" / "e1", 0)

    backend.setup()
    state = twin.load()
    base_master = f"{gce_steps.base_prefix(cfg, 0)}-master"
    assert base_master in state.kind("instances"), "kube-up.sh brought no base master up"
    minions = [i for i in state.kind("instances") if "-minion-group-" in i]
    assert len(minions) == cfg.num_nodes
    assert {state.kind("instances")[m]["machineType"] for m in minions} == {cfg.node_size}
    config = gce_steps.kubeconfig(cfg, 0)
    assert config.stat().st_mode & 0o777 == 0o600

    outcome = evaluate(backend, cand)
    assert outcome.status == "measured", outcome.reason
    served = [
        c for c in twin.calls()
        if c["argv"][:2] == ["compute", "scp"] and c["argv"][-1].startswith(str(cand.log_dir))
    ]  # fmt: skip
    assert served and served[0]["code"] == 0
    master = gce_steps.master_name(cfg, 0)
    assert f"{master}:/var/log/kube-apiserver.log*" in served[0]["argv"]
    assert [p.name for p in outcome.logs] == ["kube-apiserver.log"]
    assert outcome.logs[0].stat().st_size > 1_000_000

    created = [
        c for c in twin.calls() if c["argv"][:4] == ["compute", "instances", "create", master]
    ]
    assert created, f"start-kubemark.sh created no {master}"
    hollow = [
        c for c in twin.calls()
        if c["tool"] == "kubectl" and c["argv"][:2] == ["create", "-f"]
        and c["argv"][2].endswith("hollow-node.yaml")
    ]  # fmt: skip
    assert hollow, "start-kubemark.sh never created the hollow-node ReplicationController"

    backend.close()
    left = twin.load()
    assert left.leftovers() == {}
    assert all(not c.get("objects") for c in left.kind("clusters").values())
    assert not (tmp_path / "run" / "resources.json").exists()
    unmodelled = [c for c in twin.calls() if c["code"] == 97]
    assert unmodelled == []
    _write_steps(twin, commit)


def _write_steps(twin: Home, commit: str) -> None:
    out = os.environ.get("CONTRACT_OUT")
    if not out:
        return
    lines = [f"{c['code']:>3} {c['tool']} {' '.join(c['argv'])[:200]}" for c in twin.calls()]
    Path(out).mkdir(parents=True, exist_ok=True)
    (Path(out) / f"{commit[:7]}-steps.txt").write_text("\n".join(lines) + "\n")


# -- a whole `bisector run` on the twin, over a real range of the 2017 history ---------------
# First-parent merges of kubernetes (hyperhq/kubernetes): b6c00aeb10 (#46377) is good;
# e59fd18c16 (#46428), 481e017060 (#46588, which brings f93a270 "Optimize selector for
# single-matching items"), c866355894 (#46561) and a4e730336d (#46566) follow it. The
# twin is told that trees containing f93a270 are bad, so the culprit is 481e017060.
GOOD, BAD, CULPRIT, CAUSE = "b6c00aeb10", "a4e730336d", "481e017060", "f93a270"


def _needs_history(checkout: Path) -> None:
    for commit in (GOOD, BAD, CAUSE):
        done = subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=checkout,
                              capture_output=True, check=False)  # fmt: skip
        if done.returncode != 0:
            pytest.skip(
                f"KUBE's repository has no {commit}: needs the 2017 history (1444d25..7043372)"
            )


def _run_config(tmp_path: Path, warmup: str) -> Path:
    text = (ROOT / "configs" / "gce-kubemark-500.toml").read_text()
    text = text.replace('project = "my-gcp-project"', 'project = "twin-project"')
    text = text.replace('warmup = "20m"', f'warmup = "{warmup}"')
    cache = tmp_path / "cache"
    extra = f'build_cache_dir = "{cache}"\nretry_initial = "1s"\n'
    text = text.replace("[backends.gce]\n", "[backends.gce]\n" + extra, 1)
    path = tmp_path / "gce-kubemark-500-twin.toml"
    path.write_text(text)
    return path


def _bisector(*args: str) -> list[str]:
    return [str(Path(sys.executable).parent / "bisector"), *args]


def test_bisector_run_on_the_twin_names_the_culprit_of_a_real_range(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert KUBE is not None
    checkout = Path(KUBE).absolute()
    _needs_history(checkout)
    home = install(tmp_path / "twin", TwinConfig(project="twin-project", log_duration="10m",
                                                  bad_if_contains=(CAUSE,)))  # fmt: skip
    env = {**os.environ, "PATH": f"{home.bin}{os.pathsep}{os.environ['PATH']}"}
    config = _run_config(tmp_path, "1s")
    run = subprocess.run(
        _bisector("run", "--config", str(config), "--good", GOOD, "--bad", BAD,
                  "--repo", str(checkout), "--run-dir", str(tmp_path / "run")),
        env=env, capture_output=True, text=True, check=False, timeout=1800,
    )  # fmt: skip
    out = run.stdout + run.stderr
    _write_text("run-output.txt", out)
    assert run.returncode == 0, out[-3000:]
    assert CULPRIT in out
    assert home.load().leftovers() == {}
    assert [c for c in home.calls() if c["code"] == 97] == []
    _write_steps(home, "run")


def test_cleanup_after_kill_9_on_the_twin_leaves_nothing(tmp_path: Path) -> None:
    assert KUBE is not None
    checkout = Path(KUBE).absolute()
    _needs_history(checkout)
    home = install(tmp_path / "twin", TwinConfig(project="twin-project", log_duration="10m",
                                                  bad_if_contains=(CAUSE,)))  # fmt: skip
    env = {**os.environ, "PATH": f"{home.bin}{os.pathsep}{os.environ['PATH']}"}
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(
        _bisector("run", "--config", str(_run_config(tmp_path, "10m")), "--good", GOOD,
                  "--bad", BAD, "--repo", str(checkout), "--run-dir", str(run_dir)),
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 900
        while not _in_warmup(home):  # a kubemark master is up and its hollow nodes are Ready
            assert proc.poll() is None, "bisector run ended before its first warmup"
            assert time.monotonic() < deadline, "no kubemark cluster came up on the twin"
            time.sleep(1)
    finally:
        proc.kill()  # SIGKILL: no teardown, no journal close
        proc.wait()
    assert home.load().leftovers() != {}
    cleanup = subprocess.run(_bisector("cleanup", "--run-dir", str(run_dir)), env=env,
                             capture_output=True, text=True, check=False, timeout=900)  # fmt: skip
    _write_text("cleanup-output.txt", cleanup.stdout + cleanup.stderr)
    assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
    assert home.load().leftovers() == {}
    assert not (run_dir / "resources.json").exists()


def _in_warmup(home: Home) -> bool:
    calls = home.calls()
    ready = any(
        c["tool"] == "kubectl" and c["argv"][-2:] == ["get", "node"] and c["code"] == 0
        and any(a.endswith("kubeconfig.kubemark") for a in c["argv"])
        for c in calls
    )  # fmt: skip
    return ready and any(
        c["tool"] == "gcloud" and "kubemark-master" in " ".join(c["argv"]) for c in calls
    )


def _write_text(name: str, text: str) -> None:
    out = os.environ.get("CONTRACT_OUT")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / name).write_text(text)
