"""The gce backend with the REAL 2017 scripts of a kubernetes checkout, on the GCE twin.

Runs only with `make contract KUBE=/path/to/kubernetes` (a scratch checkout: the
build writes _output/ into it, the instrumentation patch is applied to it, and
the kubemark scripts write their files under test/kubemark/resources, as on a
real machine). Without KUBE it is skipped, saying how to run it.

It must reach: base cluster up (cluster/kube-up.sh), kubemark master created
under the name bisector copies the log from (test/kubemark/start-kubemark.sh),
hollow nodes requested within the base cluster's capacity, the log copied, and
everything deleted at the end (stop-kubemark.sh, cluster/kube-down.sh): the
twin's project holds nothing billable. The twin is as strict as gcloud 528: no
call of the scripts or the backend may be one real gcloud refuses (exit 2), and,
with the real SDK 528 installed, every distinct gcloud call the scripts made is
replayed through it offline to check that the twin parsed each as it does. Each
script step the twin saw is written to `$CONTRACT_OUT/<commit>-steps.txt` when
CONTRACT_OUT is set. The rehearsal runs in a scratch clone of KUBE (the build
writes _output/ and the patch is applied there), so a second run starts clean.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from bisector.backends.base import BackendContext
from bisector.backends.gce import steps as gce_steps
from bisector.backends.gce.backend import GceBackend
from bisector.config import Section, load_config
from bisector.report.model import Report
from bisector.twin import TwinConfig, install
from bisector.twin.doctor_rehearsal import scratch_clone
from bisector.twin.rehearse import rehearse
from bisector.twin.state import Home

ROOT = Path(__file__).resolve().parents[2]
KUBE = os.environ.get("KUBE")
HOW = "the contract test needs a kubernetes checkout: make contract KUBE=/path/to/kubernetes"

pytestmark = pytest.mark.skipif(not KUBE, reason=HOW)


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _section(tmp_path: Path, checkout: Path) -> Section:
    """configs/gce-kubemark-500.toml's [backends.gce], with the twin's project."""
    gce = load_config(ROOT / "configs" / "gce-kubemark-500.toml").table("backends").table("gce")
    data = dict(gce.data)
    data.update(project="twin-project", base_checkout=str(checkout),
                build_cache_dir=str(tmp_path / "cache"), retry_initial="1s")  # fmt: skip
    return Section(data, "gce-kubemark-500.toml", "backends.gce")


@pytest.mark.timeout(1800)
def test_the_real_scripts_run_end_to_end_on_the_twin(tmp_path: Path) -> None:
    assert KUBE is not None
    checkout = tmp_path / "kubernetes"
    scratch_clone(Path(KUBE).absolute(), checkout, "KUBE")
    section = _section(tmp_path, checkout)
    cfg = GceBackend(BackendContext(section, tmp_path / "probe")).cfg
    result = rehearse(section, checkout, tmp_path / "twin", TwinConfig(log_duration="10m"))
    _write_text(f"{result.commit[:7]}-steps.txt", "\n".join(result.steps()) + "\n")
    calls = result.calls

    assert result.unmodelled == []
    assert result.status == "measured", result.reason
    # as strict as gcloud 528: nothing the scripts or the backend ran was a refused command line
    assert [c for c in calls if c["code"] == 2 and c["tool"] == "gcloud"] == []
    # the 2026 adaptations ran: the network first (so create-network's --mode=auto never
    # runs), the gcr.io repository the hollow-node image is pushed to, the bounded group wait
    network = gce_steps.network(cfg, 0)
    assert ["compute", "networks", "create", network, "--project", "twin-project",
            "--subnet-mode=auto"] in [c["argv"] for c in calls]  # fmt: skip
    assert not [c for c in calls if "--mode=auto" in c["argv"]]
    pushes = [c for c in calls if c["argv"][:2] == ["docker", "--"]]
    assert pushes and all(c["code"] == 0 for c in pushes)
    waits = [c for c in calls if "wait-until-stable" in c["argv"]]
    assert waits and all(a.startswith("--timeout=") for a in (c["argv"][-1] for c in waits))
    # base cluster up: kube-up.sh created the base master and NUM_NODES of NODE_SIZE
    base_master = f"{gce_steps.base_prefix(cfg, 0)}-master"
    assert _created(calls, "instances", base_master)
    minion_group = f"{gce_steps.base_prefix(cfg, 0)}-minion-group"
    create_group = ["compute", "instance-groups", "managed", "create", minion_group]
    group = [c for c in calls if c["argv"][:5] == create_group]
    assert group and group[0]["argv"][group[0]["argv"].index("--size") + 1] == str(cfg.num_nodes)
    # the kubemark master under the name bisector copies the log from
    master = gce_steps.master_name(cfg, 0)
    assert _created(calls, "instances", master)
    copies = [c for c in calls if c["argv"][:2] == ["compute", "scp"] and
              f"{master}:/var/log/kube-apiserver.log*" in c["argv"]]  # fmt: skip
    assert copies and copies[0]["code"] == 0
    # hollow nodes requested within the base cluster's capacity, all scheduled
    (hollow,) = [c for c in calls if c["tool"] == "kubectl" and c["argv"][:2] == ["create", "-f"]
                 and c["argv"][2].endswith("hollow-node.yaml")]  # fmt: skip
    assert hollow["code"] == 0
    (placed,) = result.home.scheduling()
    assert placed["replicas"] == cfg.kubemark_num_nodes == placed["scheduled"]
    assert placed["pending"] == 0 and placed["capacity"]["nodes"] == cfg.num_nodes
    assert placed["pod_millicpu"] * placed["replicas"] <= placed["capacity"]["millicpu"]
    assert placed["pod_bytes"] * placed["replicas"] <= placed["capacity"]["bytes"]
    # the log copied
    assert [p.name for p in result.logs] == ["kube-apiserver.log"]
    assert result.logs[0].stat().st_size > 1_000_000
    # everything deleted at the end: nothing billable left, nothing recorded for cleanup
    assert result.leftovers == {}
    assert not (result.home.path / "run" / "resources.json").exists()
    assert _deleted(calls, "instances", master) and _deleted(
        calls, "firewall-rules", f"{master}-https"
    )
    assert gce_steps.kubeconfig(cfg, 0).name == "base-0.kubeconfig"
    _replay_through_real_gcloud(calls, tmp_path)


def _real_gcloud_528() -> str | None:
    gcloud = shutil.which("gcloud")
    version = Path("/usr/lib/google-cloud-sdk/VERSION")
    if gcloud is None or not version.is_file() or version.read_text().strip() != "528.0.0":
        return None
    return gcloud


def _replay_through_real_gcloud(calls: list[dict[str, Any]], tmp_path: Path) -> None:
    """Every distinct gcloud call of the rehearsal, through the REAL SDK 528 offline (empty
    config, no account, proxy on a closed port): a call real gcloud refuses as a command
    line exits 2 before anything else; one it accepts stops at the missing account (1).
    The twin must have parsed each the same way."""
    gcloud = _real_gcloud_528()
    if gcloud is None:
        return
    config = tmp_path / "real-gcloud-config"
    config.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "CLOUDSDK_CONFIG": str(config),
           "CLOUDSDK_CORE_DISABLE_PROMPTS": "1",
           "CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK": "true",
           "HTTPS_PROXY": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9"}  # fmt: skip
    distinct = {tuple(c["argv"]): c["code"] for c in calls if c["tool"] == "gcloud"}

    def real(argv: tuple[str, ...]) -> int:
        done = subprocess.run([gcloud, *argv], env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, check=False, timeout=120)  # fmt: skip
        return done.returncode

    with ThreadPoolExecutor(max_workers=2) as pool:
        codes = dict(zip(distinct, pool.map(real, distinct), strict=True))
    disagree = [
        (argv, twin, codes[argv]) for argv, twin in distinct.items()
        if (twin == 2) != (codes[argv] == 2)
    ]  # fmt: skip
    _write_text(
        "real-gcloud-replay.txt",
        "".join(f"{codes[a]} twin={t} gcloud {' '.join(a)[:200]}\n" for a, t in distinct.items()),
    )
    assert disagree == [], disagree
    assert not [a for a in distinct if codes[a] == 2], "the scripts made a call gcloud refuses"


def _created(calls: list[dict[str, Any]], kind: str, name: str) -> bool:
    return any(c["argv"][:4] == ["compute", kind, "create", name] and c["code"] == 0
               for c in calls)  # fmt: skip


def _deleted(calls: list[dict[str, Any]], kind: str, name: str) -> bool:
    return any(c["argv"][:3] == ["compute", kind, "delete"] and name in c["argv"]
               and c["code"] == 0 for c in calls)  # fmt: skip


# -- a whole `bisector run` on the twin, over a real range of the 2017 history ---------------
# First-parent merges of kubernetes (hyperhq/kubernetes): b6c00aeb10 (#46377) is good;
# e59fd18c16 (#46428), 481e017060 (#46588, which brings f93a270 "Optimize selector for
# single-matching items" after 48d0249a40), c866355894 (#46561) and a4e730336d (#46566)
# follow it. The twin is told that trees containing f93a270 are bad: the first-parent walk
# finds the merge 481e017060, the search inside the PR then f93a270 itself.
GOOD, BAD, MERGE, CAUSE = "b6c00aeb10", "a4e730336d", "481e017060", "f93a270"


def _needs_history(checkout: Path) -> None:
    for commit in (GOOD, BAD, CAUSE):
        done = subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=checkout,
                              capture_output=True, check=False)  # fmt: skip
        if done.returncode != 0:
            pytest.skip(
                f"KUBE's repository has no {commit}: needs the 2017 history (1444d25..7043372)"
            )


def _fresh_repo(checkout: Path, tmp_path: Path) -> Path:
    """A clone sharing KUBE's objects: `bisector run` keeps a measurement cache per
    repository (.git/bisector), and this test must measure, not reuse an earlier run's."""
    common = Path(_git(checkout, "rev-parse", "--path-format=absolute", "--git-common-dir"))
    repo = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(common), str(repo)],
                   check=True)  # fmt: skip
    # Replacements of blobs a partial mirror lacks (none in a full checkout) come along.
    subprocess.run(["git", "fetch", "-q", "origin", "refs/replace/*:refs/replace/*"], cwd=repo,
                   check=True)  # fmt: skip
    return repo


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


@pytest.mark.timeout(3600)
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
    repo = _fresh_repo(checkout, tmp_path)
    run = subprocess.run(
        _bisector("run", "--config", str(config), "--good", GOOD, "--bad", BAD,
                  "--repo", str(repo), "--run-dir", str(tmp_path / "run")),
        env=env, capture_output=True, text=True, check=False, timeout=1800,
    )  # fmt: skip
    out = run.stdout + run.stderr
    _write_text("run-output.txt", out)
    assert run.returncode == 0, out[-3000:]
    # what the run found, from its report (not the wording of its summary)
    report = Report.read(tmp_path / "run" / "report.json")
    assert report.culprit is not None
    assert report.culprit.commit.startswith(CAUSE) and report.culprit.confirmed
    assert report.culprit.merge is not None and report.culprit.merge.commit.startswith(MERGE)
    assert [a.name for a in report.adaptations][:3] == ["network", "registry", "staging bucket"]
    builds = [c for c in home.calls() if c["tool"] == "make" and c["argv"] == ["quick-release"]]
    assert len(builds) >= 4  # measured here: endpoints, the merge, the PR's commits
    assert home.load().leftovers() == {}
    assert [c for c in home.calls() if c["code"] == 97] == []
    _write_text(
        "run-steps.txt",
        "\n".join(f"{c['code']:>3} {c['tool']} {' '.join(c['argv'])[:200]}" for c in home.calls())
        + "\n",
    )


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("worktrees", ["kept", "removed"])
def test_cleanup_after_kill_9_on_the_twin_leaves_nothing(tmp_path: Path, worktrees: str) -> None:
    """`removed`: the run's worktrees are gone too, so cleanup replays the recorded gcloud
    fallbacks of both the kubemark master and the base cluster."""
    assert KUBE is not None
    checkout = Path(KUBE).absolute()
    _needs_history(checkout)
    home = install(tmp_path / "twin", TwinConfig(project="twin-project", log_duration="10m",
                                                  bad_if_contains=(CAUSE,)))  # fmt: skip
    env = {**os.environ, "PATH": f"{home.bin}{os.pathsep}{os.environ['PATH']}"}
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(
        _bisector("run", "--config", str(_run_config(tmp_path, "10m")), "--good", GOOD,
                  "--bad", BAD, "--repo", str(_fresh_repo(checkout, tmp_path)),
                  "--run-dir", str(run_dir)),
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
    if worktrees == "removed":
        shutil.rmtree(run_dir / "worktrees")
    cleanup = subprocess.run(_bisector("cleanup", "--run-dir", str(run_dir)), env=env,
                             capture_output=True, text=True, check=False, timeout=900)  # fmt: skip
    _write_text(f"cleanup-{worktrees}-output.txt", cleanup.stdout + cleanup.stderr)
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
