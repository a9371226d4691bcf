"""scripts/real_nightly.py without a cluster: the CronJob it applies is the real
configs/k8s/nightly-cronjob.yaml with only what this machine needs changed, its
nightly.toml is one the nightly reads with the state and checkout where the manifest
mounts them, and what it reads back from the cluster and the report is judged right
(a culprit other than the planted one fails the night)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from bisector.nightly.config import load_nightly_config
from tests.helpers.scripts import load_script

ROOT = Path(__file__).resolve().parents[2]


rn = load_script("real_nightly")
URL = "git://192.0.2.2:40123/kubernetes"
EMULATOR = "http://192.0.2.2:40124"
STATE = "/var/tmp/bisector-real-nightly/run/state"


def _here(service_account: bool = False) -> Any:
    return rn.Here(
        git_url=URL, state_host_path=STATE, emulator=EMULATOR, service_account=service_account
    )


def _original() -> dict[str, Any]:
    docs = rn.load_manifest()
    cronjob: dict[str, Any] = next(d for d in docs if d["kind"] == "CronJob")
    return cronjob


def _derived(service_account: bool = False) -> dict[str, Any]:
    (cronjob,) = rn.derive(rn.load_manifest(), _here(service_account))
    out: dict[str, Any] = cronjob
    return out


def _by_name(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {i["name"]: i for i in items}


def _env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env", [])}


def test_only_the_cronjob_is_applied_and_its_schedule_and_policies_stay() -> None:
    docs = rn.load_manifest()
    assert {d["kind"] for d in docs} == {"PersistentVolumeClaim", "CronJob"}
    applied = rn.derive(docs, _here())
    assert [d["kind"] for d in applied] == ["CronJob"]  # no provisioner would bind the claim
    original, derived = _original(), applied[0]
    assert derived["metadata"] == original["metadata"]
    job_keys = ("schedule", "timeZone", "concurrencyPolicy", "startingDeadlineSeconds",
                "successfulJobsHistoryLimit", "failedJobsHistoryLimit")  # fmt: skip
    for key in job_keys:
        assert derived["spec"][key] == original["spec"][key], key
    assert derived["spec"]["schedule"] == "30 3 * * *"
    assert derived["spec"]["concurrencyPolicy"] == "Forbid"
    template, was = derived["spec"]["jobTemplate"]["spec"], original["spec"]["jobTemplate"]["spec"]
    assert template["backoffLimit"] == was["backoffLimit"] == 0
    assert template["activeDeadlineSeconds"] == was["activeDeadlineSeconds"]
    pod, pod_was = rn.pod_spec(derived), rn.pod_spec(original)
    assert pod["restartPolicy"] == "Never"
    assert pod["securityContext"] == pod_was["securityContext"] == {"fsGroup": 1000}


def test_the_containers_keep_their_security_args_resources_and_mounts() -> None:
    pod, pod_was = rn.pod_spec(_derived()), rn.pod_spec(_original())
    now = _by_name([*pod["initContainers"], *pod["containers"]])
    was = _by_name([*pod_was["initContainers"], *pod_was["containers"]])
    assert set(now) == {"kubernetes-checkout", "nightly"}
    for name, container in now.items():
        assert container["securityContext"] == was[name]["securityContext"], name
        assert container["securityContext"]["runAsUser"] == 1000
        assert container["securityContext"]["runAsNonRoot"] is True
        assert container["securityContext"]["allowPrivilegeEscalation"] is False
    nightly = now["nightly"]
    assert (
        nightly["args"]
        == was["nightly"]["args"]
        == ["nightly", "--config", "/etc/bisector/nightly.toml"]
    )
    assert nightly["resources"] == was["nightly"]["resources"]
    kept = [m for m in was["nightly"]["volumeMounts"] if m["name"] != "docker-socket"]
    assert nightly["volumeMounts"] == kept
    assert {"name": "state", "mountPath": "/home/bisector", "subPath": "home"} in kept
    assert now["kubernetes-checkout"]["command"] == was["kubernetes-checkout"]["command"]
    assert now["kubernetes-checkout"]["volumeMounts"] == was["kubernetes-checkout"]["volumeMounts"]


def test_every_image_is_the_local_one_never_pulled() -> None:
    pod = rn.pod_spec(_derived())
    for container in [*pod["initContainers"], *pod["containers"]]:
        assert container["image"] == "localhost/bisector:dev"
        assert container["imagePullPolicy"] == "Never"
    originals = {c["image"] for c in [*rn.pod_spec(_original())["initContainers"]]}
    assert "bisector:gce" in originals and any(i.startswith("docker:") for i in originals)


def test_the_docker_engine_goes_with_its_volumes_mounts_and_socket() -> None:
    pod = rn.pod_spec(_derived())
    assert "docker" not in _by_name(pod["initContainers"])
    assert {v["name"] for v in pod["volumes"]} == {"state", "config"}
    for container in [*pod["initContainers"], *pod["containers"]]:
        assert "DOCKER_HOST" not in _env(container)
        assert not any(m["name"].startswith("docker") for m in container["volumeMounts"])
    assert "DOCKER_HOST" in _env(_by_name(rn.pod_spec(_original())["containers"])["nightly"])


def test_the_state_is_a_host_directory_and_the_config_the_configmap() -> None:
    volumes = _by_name(rn.pod_spec(_derived())["volumes"])
    assert volumes["state"] == {
        "name": "state",
        "hostPath": {"path": STATE, "type": "Directory"},
    }
    was = _by_name(rn.pod_spec(_original())["volumes"])
    assert (
        volumes["config"]
        == was["config"]
        == {
            "name": "config",
            "configMap": {"name": "bisector-nightly"},
        }
    )


def test_the_checkout_is_cloned_from_the_served_url_with_the_manifests_script() -> None:
    derived = _by_name(rn.pod_spec(_derived())["initContainers"])["kubernetes-checkout"]
    original = _by_name(rn.pod_spec(_original())["initContainers"])["kubernetes-checkout"]
    (script,) = derived["args"]
    (was,) = original["args"]
    assert "https://github.com/kubernetes/kubernetes" in was
    assert "github.com" not in script
    assert script == was.replace("https://github.com/kubernetes/kubernetes", URL)
    assert f"git clone --quiet --filter=blob:none {URL} /var/lib/bisector/kubernetes" in script
    assert "git -C /var/lib/bisector/kubernetes fetch --quiet origin master" in script


def test_the_nightly_reaches_the_emulator_with_a_home_it_can_write() -> None:
    pod = rn.pod_spec(_derived())
    nightly = _by_name(pod["containers"])["nightly"]
    assert _env(nightly) == {
        "HOME": "/home/bisector",
        "XDG_CACHE_HOME": "/home/bisector/.cache",
        "STORAGE_EMULATOR_HOST": EMULATOR,
    }
    assert "env" not in _by_name(pod["initContainers"])["kubernetes-checkout"]
    assert pod["dnsPolicy"] == "None" and pod["dnsConfig"] == {"nameservers": ["127.0.0.1"]}


def test_the_service_account_goes_only_when_it_does_not_exist() -> None:
    assert rn.pod_spec(_original())["serviceAccountName"] == "bisector"
    assert "serviceAccountName" not in rn.pod_spec(_derived(service_account=False))
    assert rn.pod_spec(_derived(service_account=True))["serviceAccountName"] == "bisector"


def test_the_manifest_read_is_left_as_it_was() -> None:
    docs = rn.load_manifest()
    before = copy.deepcopy(docs)
    rn.derive(docs, _here())
    assert docs == before


def test_a_manifest_without_what_a_change_relies_on_is_refused() -> None:
    docs = rn.load_manifest()
    cronjob = next(d for d in docs if d["kind"] == "CronJob")
    init = rn.pod_spec(cronjob)["initContainers"]
    init[0]["args"] = [init[0]["args"][0].replace("https://github.com/kubernetes/kubernetes", "x")]
    with pytest.raises(rn.NightError, match="clones"):
        rn.derive(docs, _here())
    with pytest.raises(rn.NightError, match="CronJobs"):
        rn.derive([d for d in docs if d["kind"] != "CronJob"], _here())


def test_the_config_map_holds_a_nightly_config_for_the_manifests_paths(tmp_path: Path) -> None:
    path = tmp_path / "nightly.toml"
    path.write_text(rn.nightly_toml())
    cfg = load_nightly_config(path)
    assert cfg.state_dir == Path("/var/lib/bisector")
    assert cfg.reports_dir == Path("/var/lib/bisector/reports")
    assert cfg.upload == "gs://real-nightly/bisector-reports"
    (job,) = cfg.jobs
    assert job.repo == Path("/var/lib/bisector/kubernetes")
    assert (job.job, job.bucket, job.metric) == (rn.CI_JOB, rn.BUCKET, "conflicts")
    assert job.bisect_config is not None
    assert job.bisect_config.table("run").data["backend"] == "sim"


# -- what the cluster and the report say ---------------------------------------------------
def _job(kind: str, reason: str) -> dict[str, Any]:
    return {
        "status": {
            "conditions": [
                {"type": "FailureTarget", "status": "True", "reason": reason},
                {"type": kind, "status": "True", "reason": reason},
            ]
        }
    }


def test_a_jobs_end_is_its_complete_or_failed_condition() -> None:
    assert rn.job_outcome({"status": {}}) is None
    assert (
        rn.job_outcome({"status": {"conditions": [{"type": "Failed", "status": "False"}]}}) is None
    )
    assert rn.job_outcome(_job("Failed", "BackoffLimitExceeded")) == "Failed"
    assert rn.job_reason(_job("Failed", "BackoffLimitExceeded")) == "BackoffLimitExceeded"
    assert rn.job_outcome(_job("Complete", "CompletionsReached")) == "Complete"


POD = {
    "metadata": {"name": "bisector-nightly-manual-x7k2p"},
    "status": {
        "phase": "Failed",
        "initContainerStatuses": [
            {"name": "kubernetes-checkout", "state": {"terminated": {"exitCode": 0}}}
        ],
        "containerStatuses": [{"name": "nightly", "state": {"terminated": {"exitCode": 3}}}],
    },
}


def test_the_exit_codes_of_the_pods_containers_are_read() -> None:
    assert rn.exit_code(POD, "kubernetes-checkout") == 0
    assert rn.exit_code(POD, "nightly") == 3
    running = {"status": {"containerStatuses": [{"name": "nightly", "state": {"running": {}}}]}}
    assert rn.exit_code(running, "nightly") is None
    assert rn.pod_line(POD) == (
        "pod bisector-nightly-manual-x7k2p Failed, kubernetes-checkout exited 0, nightly exited 3"
    )


def test_a_pod_whose_image_is_not_there_is_stuck_at_once() -> None:
    waiting = {"waiting": {"reason": "ErrImageNeverPull", "message": "image not present"}}
    pod = {"status": {"initContainerStatuses": [{"name": "kubernetes-checkout", "state": waiting}]}}
    assert (
        rn.stuck_reason(pod)
        == "container kubernetes-checkout: ErrImageNeverPull: image not present"
    )
    creating = {"waiting": {"reason": "PodInitializing"}}
    assert (
        rn.stuck_reason({"status": {"containerStatuses": [{"name": "n", "state": creating}]}})
        is None
    )


GOOD, BAD, CULPRIT = "a" * 40, "b" * 40, "c" * 40


def _report(status: str, culprit: str | None, good: str = GOOD) -> dict[str, Any]:
    return {
        "status": status,
        "reason": None if status == "found" else "budget of 2 evaluations used up",
        "range": {"good_commit": good, "bad_commit": BAD},
        "culprit": {"commit": culprit} if culprit else None,
    }


def test_the_report_must_name_the_range_and_the_planted_culprit() -> None:
    assert rn.report_problems(_report("found", CULPRIT), good=GOOD, bad=BAD, culprit=CULPRIT) == []
    wrong = rn.report_problems(_report("found", "d" * 40), good=GOOD, bad=BAD, culprit=CULPRIT)
    assert wrong == [f"the report names {'d' * 40} as the culprit; the planted one is {CULPRIT}"]
    elsewhere = rn.report_problems(
        _report("found", CULPRIT, good="e" * 40), good=GOOD, bad=BAD, culprit=CULPRIT
    )
    assert len(elsewhere) == 1 and "range" in elsewhere[0]
    (unbisected,) = rn.report_problems(_report("budget", None), good=GOOD, bad=BAD, culprit=CULPRIT)
    assert "ended budget (budget of 2 evaluations used up)" in unbisected
