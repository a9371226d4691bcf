"""What the gce backend does with each failure a real run meets (bisector.twin.faults).

Each failure's text is what the twin prints for it (asked of the twin here, not copied),
and the twin's text is the real tool's (tests/twin/test_gcloud_strict.py names where each
comes from). The backend then runs through the fake proc: the assertions are what it
does (retried, skipped with the reason, or refused before anything is created) and that
nothing is left up (its resource record is empty or holds only the base cluster a run
keeps). The same faults against the REAL 2017 scripts on the twin are in
tests/contract/test_gce_faults_contract.py.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from bisector.backends.base import BackendContext, Candidate
from bisector.backends.gce import adapt as gce_adapt
from bisector.backends.gce.backend import RELEASE_OUTPUTS, SERVER_TARBALL, GceBackend
from bisector.backends.resources import ResourceRecord
from bisector.config import Section
from bisector.errors import ConfigError, InfraError, LaunchError
from bisector.twin import TwinConfig, install
from bisector.twin.rehearse import on_path
from bisector.twin.state import Home
from tests.helpers.fake_proc import Call, FakeProc
from tests.helpers.loop_driver import evaluate

COMMIT = "7043372d05510b13a0928af92deda6110740dd5e"
P = ("--project", "twin-project")
Z = ("--zone", "us-central1-b")


def _twin(tmp_path: Path, **config: Any) -> Home:
    return install(tmp_path / "twin", TwinConfig(**config))


def _gcloud(home: Home, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{home.bin}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["gcloud", *argv], env=env, capture_output=True, text=True,
                          check=False)  # fmt: skip


def _said(tmp_path: Path, fault: dict[str, Any], *argv: str) -> str:
    """What the twin prints when `fault` strikes `gcloud argv` (after creating what it needs)."""
    home = _twin(tmp_path, faults=(fault,))
    if argv[:2] == ("compute", "ssh"):
        assert _gcloud(home, "compute", "instances", "create", argv[2], *Z, *P).returncode == 0
    done = _gcloud(home, *argv)
    assert done.returncode != 0, done
    return done.stderr


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeProc:
    fake = FakeProc.install(monkeypatch)
    fake.on("rev-parse", stdout="a" * 40 + "\n")
    fake.on("make quick-release", effect=_release)
    fake.on("gcloud compute scp", effect=_logs)
    return fake


def _release(call: Call) -> None:
    assert call.cwd is not None
    for rel in RELEASE_OUTPUTS:
        target = Path(call.cwd) / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("x\n")


def _logs(call: Call) -> None:
    (Path(call.argv[-1]) / "kube-apiserver.log").write_text("I0602 log\n")


def _backend(tmp_path: Path, **extra: object) -> GceBackend:
    base = tmp_path / "base"
    (base / SERVER_TARBALL).parent.mkdir(parents=True, exist_ok=True)
    (base / SERVER_TARBALL).write_text("release\n")
    data: dict[str, object] = {
        "project": "twin-project",
        "zone": "us-central1-b",
        "instance_prefix": "k",
        "num_nodes": 6,
        "node_size": "n1-standard-8",
        "master_size": "n1-standard-4",
        "kubemark_num_nodes": 500,
        "kubemark_master_size": "n1-standard-16",
        "base_checkout": str(base),
        "build_cache_dir": str(tmp_path / "cache"),
        "retry_initial": "1s",
        **extra,
    }
    context = BackendContext(Section(data, "gce.toml", "backends.gce"), tmp_path / "run", 60.0)
    return GceBackend(context, sleep=lambda s: None)


def _candidate(tmp_path: Path) -> Candidate:
    wt = tmp_path / "wt"
    wt.mkdir(exist_ok=True)
    return Candidate(COMMIT, wt, tmp_path / "run" / "evals" / "one", 0)


def _scripts(fake: FakeProc) -> list[str]:
    return [line for line in fake.lines if line.startswith("./") or "serial-port" in line]


# -- refused before anything is created ------------------------------------------------------


def test_quota_short_in_a_low_quota_project_is_refused_before_anything_is_created(
    tmp_path: Path,
) -> None:
    """The real backend against the twin (no fake proc): the preflight reads the twin
    project's quotas and refuses; the twin's project holds nothing, no script ran."""
    home = _twin(tmp_path, quotas={"regions": {"us-central1": {"CPUS": 24, "IN_USE_ADDRESSES": 4}}})
    with on_path(home):
        backend = _backend(tmp_path)
        with pytest.raises(ConfigError) as refused:
            backend.setup()
    message = str(refused.value)
    assert "nothing was created" in message
    assert "quota CPUS in us-central1: need 68, limit 24, in use 0: 44 short" in message
    assert "quota IN_USE_ADDRESSES in us-central1: need 8, limit 4, in use 0: 4 short" in message
    assert "console.cloud.google.com/iam-admin/quotas?project=twin-project" in message
    assert home.load().leftovers() == {}
    made = [c for c in home.calls() if "create" in c["argv"] or c["tool"] == "make"]
    assert made == []
    assert ResourceRecord(tmp_path / "run").ids() == []


def test_an_image_the_project_cannot_boot_is_refused_before_anything_is_created(
    tmp_path: Path,
) -> None:
    home = _twin(tmp_path, images={"cos-cloud": ["cos-stable-121-18867-0-94"]})
    refused = pytest.raises(ConfigError, match=r"image cos-cloud/cos-beta-59-9460-20-0: does not ")
    with on_path(home), refused:
        _backend(tmp_path).setup()
    assert home.load().leftovers() == {}


def test_an_org_policy_that_forbids_the_public_tars_is_refused_before_anything_is_created(
    tmp_path: Path,
) -> None:
    home = _twin(tmp_path, org_policies=("storage.uniformBucketLevelAccess",))
    refused = pytest.raises(
        ConfigError, match=r"org policy storage.uniformBucketLevelAccess: enforced: .* disable-"
    )
    with on_path(home), refused:
        _backend(tmp_path).setup()
    assert home.load().leftovers() == {} and home.load().kind("buckets") == {}


def test_no_cfssl_on_path_is_refused_before_anything_is_created(tmp_path: Path) -> None:
    home = _twin(tmp_path, cfssl_installed=False)
    path = os.pathsep.join(
        [str(home.bin), *(d for d in os.environ["PATH"].split(os.pathsep)
                          if not (Path(d) / "cfssl").exists())]
    )  # fmt: skip
    with on_path(home):
        backend = _backend(tmp_path, env={"PATH": path})
        with pytest.raises(ConfigError, match=r"cfssl: cfssl and cfssljson not on PATH: .*"
                           r"pkg.cfssl.org/R1.2, which is gone"):  # fmt: skip
            backend.setup()
    assert home.load().leftovers() == {}


# -- retried ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fault",
    [
        pytest.param({"kind": "stockout", "command": "compute instances create"}, id="stockout"),
        pytest.param({"kind": "rate-limit", "status": 429}, id="rate-limit-429"),
        pytest.param({"kind": "rate-limit", "status": 403}, id="rate-limit-403"),
    ],
)
def test_a_transient_api_failure_of_start_kubemark_is_undone_and_retried(
    fake: FakeProc, tmp_path: Path, fault: dict[str, Any]
) -> None:
    """start-kubemark.sh gives up after its own 3 attempts (test/kubemark/gce/util.sh
    run-gcloud-compute-with-retries) with gcloud's last answer on stderr."""
    said = _said(tmp_path, fault, "compute", "instances", "create", "k-kubemark-master", *Z, *P)
    fake.on("start-kubemark.sh", code=1, times=1, first=True,
            stderr=f"{said}Failed to create instances k-kubemark-master.\n")  # fmt: skip
    backend = _backend(tmp_path)
    backend.setup()
    outcome = evaluate(backend, _candidate(tmp_path))
    assert outcome.status == "measured"
    assert [s for s in _scripts(fake) if "kubemark" in s] == [
        "./test/kubemark/start-kubemark.sh",
        "./test/kubemark/stop-kubemark.sh",  # the half-made master undone before the retry
        "./test/kubemark/start-kubemark.sh",
        "./test/kubemark/stop-kubemark.sh",  # teardown
    ]
    assert ResourceRecord(tmp_path / "run").ids() == ["gce/base/k"]
    backend.close()
    assert ResourceRecord(tmp_path / "run").ids() == []


@pytest.mark.parametrize("kind", ["ssh-refused", "slow-boot"])
def test_ssh_refusing_longer_than_the_scripts_wait_is_undone_and_retried(
    fake: FakeProc, tmp_path: Path, kind: str
) -> None:
    """The scripts try ssh to the kubemark master 10 times (start-kubemark.sh
    wait-for-master-reachability); a VM that refuses longer fails start-kubemark.sh with
    ssh's exit code passed on by gcloud."""
    fault = {"kind": kind, "instance": ".*-kubemark-master", "times": 99, "attempts": 99}
    said = _said(tmp_path, fault, "compute", "ssh", "k-kubemark-master", *Z, *P, "--command=:")
    assert "Connection refused" in said and "return code [255]" in said
    fake.on("start-kubemark.sh", code=1, times=1, first=True, stderr=said)
    backend = _backend(tmp_path)
    backend.setup()
    assert evaluate(backend, _candidate(tmp_path)).status == "measured"
    assert _scripts(fake).count("./test/kubemark/start-kubemark.sh") == 2
    backend.close()
    assert ResourceRecord(tmp_path / "run").ids() == []


def test_a_start_that_keeps_failing_is_a_skip_with_the_reason_and_nothing_left_up(
    fake: FakeProc, tmp_path: Path
) -> None:
    said = _said(tmp_path, {"kind": "stockout"}, "compute", "instances", "create", "m", *Z, *P)
    fake.on("start-kubemark.sh", code=1, first=True, stderr=said)
    backend = _backend(tmp_path, retry_attempts=2)
    backend.setup()
    outcome = evaluate(backend, _candidate(tmp_path))
    assert outcome.status == "skip"
    assert "does not have enough resources available to fulfill the request" in outcome.reason
    assert _scripts(fake).count("./test/kubemark/stop-kubemark.sh") == 2
    assert ResourceRecord(tmp_path / "run").ids() == ["gce/base/k"]


# -- said for what it is, not retried ----------------------------------------------------------


def test_a_base_master_that_never_answers_keeps_its_console_and_is_not_retried(
    fake: FakeProc, tmp_path: Path
) -> None:
    """cluster/gce/util.sh check-cluster: exit 2 after KUBE_CLUSTER_INITIALIZATION_TIMEOUT.
    Earlier lines of kube-up.sh may look transient; the failure is not."""
    fake.on("kube-up.sh", code=2, first=True,
            stdout="Waiting up to 300 seconds for cluster initialization.\n",
            stderr="ssh: connect to host 203.0.113.2 port 22: Connection refused\n"
            "Cluster failed to initialize within 300 seconds.\n")  # fmt: skip
    backend = _backend(tmp_path)
    with pytest.raises(LaunchError) as failed:
        backend.setup()
    reason = failed.value.reason
    assert "master never answered" in reason and "not retried" in reason
    console = gce_adapt.console_path(backend.cfg, 0)
    assert str(console) in reason
    assert _scripts(fake) == [
        "./cluster/kube-up.sh",
        "bash -c 'gcloud compute instances get-serial-port-output k-master --zone us-central1-b "
        f"--project twin-project > {console}'",
        "./cluster/kube-down.sh",
    ]
    assert ResourceRecord(tmp_path / "run").ids() == []


def test_a_partly_created_node_group_stops_kube_up_and_is_not_retried(
    fake: FakeProc, tmp_path: Path
) -> None:
    """The gcloud wrapper's last words (gce_adapt.WRAPPER), then kube-up.sh killed."""
    fake.on("kube-up.sh", code=143, first=True,
            stderr="ERROR: (gcloud.compute.instance-groups.managed.wait-until-stable) Timeout "
            "while waiting for group to become stable.\nbisector: the node group did not become "
            "stable within 900 s (see gcloud compute instance-groups managed list-errors); "
            "stopping kube-up.sh, which would wait 25 more minutes for its nodes\n")  # fmt: skip
    backend = _backend(tmp_path)
    with pytest.raises(LaunchError, match=r"node group was not complete after 15m.*not retried"):
        backend.setup()
    assert _scripts(fake) == ["./cluster/kube-up.sh", "./cluster/kube-down.sh"]
    assert ResourceRecord(tmp_path / "run").ids() == []


# -- the gcloud wrapper against the twin (a real shell) ------------------------------------------


def _partial_group(tmp_path: Path) -> Home:
    home = _twin(tmp_path, faults=({"kind": "mig-partial", "group": "k-minion-group",
                                    "created": 2},))  # fmt: skip
    assert _gcloud(home, "compute", "instance-templates", "create", "k-minion-template", *P,
                   "--machine-type", "n1-standard-8").returncode == 0  # fmt: skip
    done = _gcloud(home, "compute", "instance-groups", "managed", "create", "k-minion-group", *P,
                   *Z, "--base-instance-name", "k-minion-group", "--size", "3", "--template",
                   "k-minion-template")  # fmt: skip
    assert done.returncode == 0, done.stderr
    return home


# kube-up.sh's call (cluster/gce/util.sh create-nodes, kubernetes 7043372), in a stand-in parent.
_CREATE_NODES = (
    "gcloud compute instance-groups managed wait-until-stable k-minion-group --zone "
    "us-central1-b --project twin-project || true\necho 'kube-up.sh went on'\n"
)


def test_the_twin_waits_forever_for_a_partly_created_group_as_gcloud_does(tmp_path: Path) -> None:
    home = _partial_group(tmp_path)
    env = {**os.environ, "PATH": f"{home.bin}{os.pathsep}{os.environ['PATH']}"}
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run(["bash", "-c", _CREATE_NODES], env=env, capture_output=True, timeout=5,
                       check=False)  # fmt: skip


def test_the_wrapper_bounds_the_wait_and_stops_kube_up(tmp_path: Path) -> None:
    home = _partial_group(tmp_path)
    backend = _backend(tmp_path, group_stable_timeout="10m")
    gce_adapt.write_wrapper(backend.cfg)
    env = {**os.environ,
           "PATH": f"{gce_adapt.wrapper_dir(backend.cfg)}{os.pathsep}{home.bin}{os.pathsep}"
                   f"{os.environ['PATH']}"}  # fmt: skip
    done = subprocess.run(["bash", "-c", _CREATE_NODES], env=env, capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip
    assert done.returncode in (-15, 143)  # killed by the wrapper's SIGTERM
    assert "kube-up.sh went on" not in done.stdout
    assert "Timeout while waiting for group to become stable." in done.stderr
    assert "bisector: the node group did not become stable within 600 s" in done.stderr
    (wait,) = [c for c in home.calls() if "wait-until-stable" in c["argv"]]
    assert wait["argv"][-1] == "--timeout=600" and wait["code"] == 1
    errors = _gcloud(home, "compute", "instance-groups", "managed", "list-errors",
                     "k-minion-group", *Z, *P)  # fmt: skip
    assert "does not have enough resources available" in errors.stdout
    # every other call passes through unchanged
    listed = subprocess.run(["gcloud", "compute", "instance-groups", "managed", "list-instances",
                             "k-minion-group", *Z, *P, "--format=value(instance)"], env=env,
                            capture_output=True, text=True, check=False)  # fmt: skip
    assert listed.stdout.split() == ["k-minion-group-0000", "k-minion-group-0001"]


# -- a delete that fails inside a script that ignores it ----------------------------------------


def test_a_rate_limited_delete_that_stop_kubemark_ignored_is_retried_until_gone(
    fake: FakeProc, tmp_path: Path
) -> None:
    """test/kubemark/gce/util.sh delete-master-instance-and-resources: `gcloud compute
    instances delete ... || true`; a 429 there leaves the master up and the script exits 0."""
    said = _said(tmp_path, {"kind": "rate-limit", "status": 429, "command":
                            "compute instances delete"}, "compute", "instances", "delete", "m",
                 *Z, *P)  # fmt: skip
    fake.on("gcloud compute instances delete k-kubemark-master", code=1, times=1, first=True,
            stderr=said)  # fmt: skip
    backend = _backend(tmp_path)
    backend.setup()
    assert evaluate(backend, _candidate(tmp_path)).status == "measured"
    deletes = [line for line in fake.lines if line.startswith(
        "gcloud compute instances delete k-kubemark-master")]  # fmt: skip
    assert len(deletes) == 2  # after stop-kubemark.sh: refused (429), then again: gone
    assert ResourceRecord(tmp_path / "run").ids() == ["gce/base/k"]


def test_a_delete_that_keeps_failing_is_a_teardown_failure_that_keeps_the_record(
    fake: FakeProc, tmp_path: Path
) -> None:
    fake.on(
        "gcloud compute disks delete k-kubemark-master-pd",
        code=1,
        first=True,
        stderr="ERROR: (gcloud.compute.disks.delete) Could not fetch resource:\n - The disk "
        "resource 'k-kubemark-master-pd' is already being used by 'k-kubemark-master'",
    )
    backend = _backend(tmp_path)  # fmt: skip
    backend.setup()
    cand = _candidate(tmp_path)
    backend.launch(cand)
    with pytest.raises(
        InfraError,
        match=r"stop-kubemark.sh left the kubemark master up: gcloud "
        r"compute disks delete k-kubemark-master-pd: .*already being used",
    ):
        backend.teardown(cand)  # fmt: skip
    assert ResourceRecord(tmp_path / "run").ids() == ["gce/base/k", "gce/kubemark/k"]


def test_a_base_master_that_was_never_created_is_retried(fake: FakeProc, tmp_path: Path) -> None:
    """kube-up.sh creates its master in the background and goes on when that fails (seen on
    the twin with a rate limit on that create: check-cluster then waits out its timeout).
    No master VM: the create's own error decides, and a rate limit is retried."""
    said = _said(tmp_path, {"kind": "rate-limit", "status": 429}, "compute", "instances",
                 "create", "k-master", *Z, *P)  # fmt: skip
    fake.on("kube-up.sh", code=2, times=1, first=True,
            stderr=f"{said}Cluster failed to initialize within 300 seconds.\n")  # fmt: skip
    fake.on("get-serial-port-output", code=1, times=1, first=True,
            stderr="ERROR: (gcloud.compute.instances.get-serial-port-output) Could not fetch "
            "resource:\n - The resource 'projects/twin-project/zones/us-central1-b/instances/"
            "k-master' was not found")  # fmt: skip
    fake.on(
        "gcloud compute networks describe",
        code=1,
        first=True,
        stderr=" - The resource 'projects/twin-project/global/networks/k' was not found",
    )
    backend = _backend(tmp_path)  # fmt: skip
    backend.setup()
    assert _scripts(fake)[:4] == [
        "./cluster/kube-up.sh",
        "bash -c 'gcloud compute instances get-serial-port-output k-master --zone us-central1-b "
        f"--project twin-project > {gce_adapt.console_path(backend.cfg, 0)}'",
        "./cluster/kube-down.sh",
        "./cluster/kube-up.sh",
    ]
    # kube-down.sh took the network with it: made again before the second kube-up.sh (seen
    # on the twin with the real scripts: their own create of it is the refused --mode=auto)
    lines = fake.lines
    between = lines[lines.index("./cluster/kube-down.sh") : len(lines) - 1 - lines[::-1].index(
        "./cluster/kube-up.sh")]  # fmt: skip
    assert "gcloud compute networks create k --project twin-project --subnet-mode=auto" in between
    assert ResourceRecord(tmp_path / "run").ids() == ["gce/base/k"]
    backend.close()
    assert ResourceRecord(tmp_path / "run").ids() == []
