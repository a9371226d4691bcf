"""One night of configs/k8s/nightly-cronjob.yaml on a real cluster (`make real-nightly`).

    PYTHONPATH=. python scripts/real_nightly.py --cluster-dir DIR --kubectl KUBECTL --run-dir RUN \\
        [--image localhost/bisector:dev] [--no-schedule] [--timeout 1800]

Run inside `scripts/real_cluster.py run ... --` (the cluster's admin kubeconfig in
DIR/admin.kubeconfig, the image imported). On this machine:

1. A CI history in which a regression appears, in a real GCS (`gcp-storage-emulator`)
   listening on the host's address (pods reach the host's addresses, not its loopback nor
   the internet): the tests' demo repository (bisector.sim.demo_repo, seed 2, 12 PRs) and
   its CI runs (tests/helpers/nightly.py: good runs up to the culprit's PR, bad runs
   after it), written by tests/helpers/ci_history.py in the real layout.
2. That repository served to the pods with `git daemon` (as scripts/real_jobs.py does),
   partial clones allowed (the init container clones with --filter=blob:none).
3. The CronJob derived from configs/k8s/nightly-cronjob.yaml itself (`derive`: each change
   and why is said there), the ConfigMap made as the manifest's header says
   (`kubectl create configmap bisector-nightly --from-file=nightly.toml=...`) from the
   tests' nightly.toml (the sim backend), both applied with the tree's kubectl.
4. One night started as an operator would: `kubectl create job --from=cronjob/...`;
   waited for to its end. The nightly exits 3 when it reports a culprit, and the manifest
   says that ends the Job Failed on purpose (backoffLimit 0): so the night passes when its
   Job is Failed *because* the nightly container exited 3, and its report (read from the
   state hostPath) names the planted regression's range and the planted culprit. Any other
   exit, or a Complete Job, fails the check.
5. The schedule path (unless --no-schedule): the CronJob's schedule set to every minute,
   the Job the controller creates waited for (the CronJob suspended once it exists, so it
   is the only one), and its night must find the regression already hunted: exit 0, Job
   Complete, no second hunt in the database. That night also takes the init container's
   other branch (`git fetch` into the checkout the first night left on the volume).
6. The CronJob, its Jobs and the ConfigMap deleted (foreground); nothing may be left: no
   pod, Job or CronJob in the cluster, the emulator and git daemon stopped.

Prints a summary (each night's exit, wall time, the report's head). Exit 0 every check
held, 1 otherwise, 2 bad input.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parent.parent

CRONJOB_FILE = ROOT / "configs" / "k8s" / "nightly-cronjob.yaml"
CRONJOB = "bisector-nightly"  # also the ConfigMap's name in the manifest
NAMESPACE = "default"
STATE = "/var/lib/bisector"  # where the manifest mounts the state volume
UPSTREAM = "https://github.com/kubernetes/kubernetes"
NIGHTLY = "nightly"  # the manifest's main container
IMAGE = "localhost/bisector:dev"
STATE_UID = 1000  # the manifest's runAsUser / runAsGroup
HOME = "/home/bisector"  # the gce target's home of uid 1000, where the manifest mounts home/
MANUAL_JOB = "bisector-nightly-manual"
CI_JOB = "ci-kubernetes-kubemark-5000"
BUCKET = "real-nightly"
UPLOAD_PREFIX = "bisector-reports"
KUBECTL_TIMEOUT_S = 120.0
SCHEDULE_WAIT_S = 150.0  # the next minute of `* * * * *`, and the controller's resync
# A pod waiting for one of these never starts by itself: fail at once, saying why.
STUCK = ("ErrImageNeverPull", "InvalidImageName", "CreateContainerConfigError",
         "CreateContainerError", "ImagePullBackOff", "ErrImagePull")  # fmt: skip


def say(text: str) -> None:
    print(f"real-nightly: {text}", flush=True)


class NightError(Exception):
    """A step of the night did not happen as it must; the message says which."""


# -- the manifest, as this machine needs it ------------------------------------------------
@dataclass(frozen=True)
class Here:
    """What this machine gives the CronJob instead of what a production cluster has."""

    git_url: str  # the served repository (instead of GitHub)
    state_host_path: str  # the state directory on the one node (instead of the claim)
    emulator: str  # STORAGE_EMULATOR_HOST: http://ADDRESS:PORT
    service_account: bool  # whether the manifest's serviceAccountName exists here
    image: str = IMAGE


def load_manifest(path: Path = CRONJOB_FILE) -> list[dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]
    return [dict(d) for d in docs]


def pod_spec(cronjob: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return spec


def derive(docs: Sequence[dict[str, Any]], here: Here) -> list[dict[str, Any]]:
    """The objects to apply on this machine: the manifest's CronJob with only what this
    machine needs changed. `docs` is not modified. Raises NightError when the manifest no
    longer has what a change relies on (update this function with it).

    Changed, and why:
    - The PersistentVolumeClaim is not applied: this cluster has no storage provisioner, so
      it would stay Pending and the pod with it. The `state` volume is a hostPath directory
      instead (type Directory: made beforehand, never created root-owned by the kubelet; the
      one node is this machine). A hostPath ignores fsGroup, so that directory is made
      owned by the containers' uid 1000.
    - Every image is the procs target imported into containerd (localhost/bisector:dev)
      with imagePullPolicy Never: no registry is reachable, and the gce target's extras
      (Cloud SDK, docker CLI) serve only the gce backend, which tonight's sim does not use.
    - The docker:dind native sidecar goes, with the volumes only it shares (the engine's
      socket and data), their mounts in the other containers and DOCKER_HOST: its image
      cannot be pulled here, and only the gce backend's scripts need a Docker engine.
    - The init container clones from the served git URL instead of GitHub (no internet);
      the rest of its script (mkdir of the home, fetch when the checkout is there, the
      partial clone) is the manifest's.
    - serviceAccountName goes when that account does not exist here: it carries Workload
      Identity on GKE, and a pod naming a missing account is refused by the apiserver
      (the namespace's default account runs it instead).
    - The nightly container gets STORAGE_EMULATOR_HOST: the CI history and the upload
      bucket are the emulator's, on the host's address.
    - The nightly container gets HOME=/home/bisector and XDG_CACHE_HOME=/home/bisector/.cache:
      the gce target's user 1000 has that home (where the manifest mounts the state
      volume's home/); the procs image has no user 1000 (HOME would be /) and points
      XDG_CACHE_HOME at /var/cache, which is root's.
    - dnsPolicy None with the nameserver 127.0.0.1: this cluster runs no DNS and the
      host's nameserver is out of the pods' reach, so a lookup would wait out its
      timeouts; everything the night reaches is an IP address.
    Kept as written: the schedule and time zone, concurrencyPolicy Forbid, the deadlines,
    the history limits, backoffLimit 0, restartPolicy Never, every securityContext
    (non-root uid 1000, no privilege escalation, fsGroup), the nightly container's args,
    resources and mounts (the state volume, its home/ subPath, the config read-only), the
    ConfigMap volume.
    """
    cronjobs = [d for d in docs if d.get("kind") == "CronJob"]
    if len(cronjobs) != 1:
        raise NightError(f"{CRONJOB_FILE.name} holds {len(cronjobs)} CronJobs, not one")
    cronjob = copy.deepcopy(cronjobs[0])
    spec = pod_spec(cronjob)
    engine = [
        c for c in spec.get("initContainers", []) if str(c.get("image", "")).startswith("docker:")
    ]
    if not engine:
        raise NightError("the manifest has no docker:dind sidecar to leave out")
    engine_volumes = {m["name"] for c in engine for m in c.get("volumeMounts", [])}
    spec["initContainers"] = [c for c in spec["initContainers"] if c not in engine]
    containers = [*spec["initContainers"], *spec["containers"]]
    state = [v for v in spec["volumes"] if v["name"] == "state"]
    if len(state) != 1 or "persistentVolumeClaim" not in state[0]:
        raise NightError("the manifest's `state` volume is not a PersistentVolumeClaim")
    spec["volumes"] = [
        {"name": "state", "hostPath": {"path": here.state_host_path, "type": "Directory"}}
        if v["name"] == "state"
        else v
        for v in spec["volumes"]
        if v["name"] not in engine_volumes
    ]
    cloned = False
    for c in containers:
        c["image"] = here.image
        c["imagePullPolicy"] = "Never"
        c["volumeMounts"] = [
            m for m in c.get("volumeMounts", []) if m["name"] not in engine_volumes
        ]
        env = [e for e in c.get("env", []) if e["name"] != "DOCKER_HOST"]
        if c["name"] == NIGHTLY:
            env += [
                {"name": "HOME", "value": HOME},
                {"name": "XDG_CACHE_HOME", "value": f"{HOME}/.cache"},
                {"name": "STORAGE_EMULATOR_HOST", "value": here.emulator},
            ]
        if env:
            c["env"] = env
        else:
            c.pop("env", None)
        args = [str(a) for a in c.get("args", [])]
        if any(UPSTREAM in a for a in args):
            c["args"] = [a.replace(UPSTREAM, here.git_url) for a in args]
            cloned = True
    if not cloned:
        raise NightError(f"no container of the manifest clones {UPSTREAM}")
    if not any(c["name"] == NIGHTLY for c in spec["containers"]):
        raise NightError(f"the manifest has no `{NIGHTLY}` container")
    if not here.service_account:
        spec.pop("serviceAccountName", None)
    spec["dnsPolicy"] = "None"
    spec["dnsConfig"] = {"nameservers": ["127.0.0.1"]}
    return [cronjob]


def nightly_toml() -> str:
    """The ConfigMap's nightly.toml: the tests' nightly config (tests/helpers/nightly.py,
    the sim backend) with the state and checkout where the manifest puts them, its
    reports uploaded to the emulator's bucket."""
    from tests.helpers.nightly import nightly_config

    with tempfile.TemporaryDirectory() as tmp:
        path = nightly_config(
            Path(tmp) / "nightly.toml",
            bucket=BUCKET,
            job=CI_JOB,
            repo=Path(STATE) / "kubernetes",
            state=Path(STATE),
            upload=f"gs://{BUCKET}/{UPLOAD_PREFIX}",
        )
        return path.read_text(encoding="utf-8")


# -- reading what the cluster says -------------------------------------------------------
def job_outcome(job: dict[str, Any]) -> str | None:
    """ "Complete" or "Failed" once the Job has ended, else None."""
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("status") == "True" and cond.get("type") in ("Complete", "Failed"):
            return str(cond["type"])
    return None


def job_reason(job: dict[str, Any]) -> str:
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("status") == "True" and cond.get("type") in ("Complete", "Failed"):
            return str(cond.get("reason") or "")
    return ""


def statuses(pod: dict[str, Any]) -> list[dict[str, Any]]:
    """The statuses of `pod`'s init containers, then of its containers."""
    status = pod.get("status") or {}
    return [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]


def exit_code(pod: dict[str, Any], container: str) -> int | None:
    """The exit code of `container` (init or not) of `pod`, None while it has not ended."""
    for s in statuses(pod):
        if s.get("name") == container:
            term = (s.get("state") or {}).get("terminated")
            return int(term["exitCode"]) if term else None
    return None


def stuck_reason(pod: dict[str, Any]) -> str | None:
    """Why a container of `pod` waits for something that will not come by itself."""
    for s in statuses(pod):
        waiting = (s.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in STUCK:
            return f"container {s.get('name')}: {waiting['reason']}: {waiting.get('message', '')}"
    return None


def pod_line(pod: dict[str, Any]) -> str:
    """One line of where a pod is: its phase and each container's state."""
    phase = (pod.get("status") or {}).get("phase", "?")
    parts = [f"pod {pod['metadata']['name']} {phase}"]
    for s in statuses(pod):
        state = s.get("state") or {}
        if "terminated" in state:
            parts.append(f"{s['name']} exited {state['terminated'].get('exitCode')}")
        elif "running" in state:
            parts.append(f"{s['name']} running")
        elif "waiting" in state:
            parts.append(f"{s['name']} waiting ({state['waiting'].get('reason', '')})")
    return ", ".join(parts)


def report_problems(data: dict[str, Any], *, good: str, bad: str, culprit: str) -> list[str]:
    """What nightly.json gets wrong about the planted regression: its range must be the
    CI runs around the culprit's PR; a culprit it names must be the planted one (a wrong
    culprit is the worst answer); status found must name one."""
    problems = []
    rng = data.get("range") or {}
    if (rng.get("good_commit"), rng.get("bad_commit")) != (good, bad):
        problems.append(
            f"the report's range is {rng.get('good_commit')}..{rng.get('bad_commit')}, "
            f"the regression is {good}..{bad}"
        )
    named = (data.get("culprit") or {}).get("commit")
    if named is not None and named != culprit:
        problems.append(f"the report names {named} as the culprit; the planted one is {culprit}")
    if data.get("status") == "found" and named is None:
        problems.append("status found with no culprit")
    if data.get("status") != "found":
        problems.append(
            f"the hunt ended {data.get('status')} ({data.get('reason')}), "
            "not with the planted culprit found"
        )
    return problems


# -- this machine's side: the history, the tree, the emulator --------------------------------
def made_history(run_dir: Path) -> tuple[Any, list[Any], str, str]:
    """The demo repository at RUN/kubernetes and its CI runs: (demo, runs, good, bad)."""
    from bisector.sim.demo_repo import create_demo_repo
    from tests.helpers.nightly import demo_ci_runs

    demo = create_demo_repo(run_dir / "kubernetes", seed=2, prs=12)
    # The init container clones with --filter=blob:none, as from GitHub: allow it.
    subprocess.run(["git", "-C", str(demo.path), "config", "uploadpack.allowFilter", "true"],
                   check=True)  # fmt: skip
    runs, good, bad = demo_ci_runs(demo)
    return demo, runs, good, bad


def emulator(address: str) -> contextlib.AbstractContextManager[tuple[str, Any]]:
    """A gcp-storage-emulator on `address` (in memory): its URL and an anonymous client."""
    from tests.helpers.gcs import gcs_emulator_at

    return gcs_emulator_at(address)


def state_dir(run_dir: Path) -> Path:
    """RUN/state, empty, owned by the containers' uid (a hostPath ignores fsGroup)."""
    state = run_dir / "state"
    state.mkdir()
    os.chown(state, STATE_UID, STATE_UID)
    state.chmod(0o755)
    return state


# -- kubectl ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Kubectl:
    binary: Path
    kubeconfig: Path

    def run(self, *args: str, stdin: str | None = None, check: bool = True) -> str:
        cmd = [str(self.binary), "--kubeconfig", str(self.kubeconfig), "-n", NAMESPACE, *args]
        done = subprocess.run(cmd, input=stdin, capture_output=True, text=True,
                              timeout=KUBECTL_TIMEOUT_S, check=False)  # fmt: skip
        if check and done.returncode != 0:
            raise NightError(f"$ kubectl {' '.join(args)}: exit {done.returncode}: "
                             f"{(done.stderr or done.stdout).strip()}")  # fmt: skip
        return done.stdout

    def json(self, *args: str) -> dict[str, Any]:
        out: dict[str, Any] = json.loads(self.run("get", *args, "-o", "json"))
        return out

    def pods_of(self, job: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.json("pods", "-l", f"job-name={job}")["items"]
        return items

    def logs(self, job: str, container: str) -> str:
        return self.run("logs", f"job/{job}", "-c", container, "--tail=-1", check=False)


@dataclass
class Night:
    job: str
    outcome: str  # Complete / Failed
    reason: str  # the Job's condition's reason
    clone_exit: int | None
    nightly_exit: int | None
    wall_s: float
    log: str  # the nightly container's
    clone_log: str  # the init container's


def wait_night(kubectl: Kubectl, job: str, began: float, timeout: float) -> Night:
    """Wait for `job` to end, saying where its pod is as it changes."""
    last = ""
    while True:
        outcome = job_outcome(kubectl.json("job", job))
        pods = kubectl.pods_of(job)
        line = "; ".join(pod_line(p) for p in pods) or "no pod yet"
        if line != last:
            say(f"{job}: {line}")
            last = line
        if outcome is not None:
            break
        for pod in pods:
            if (why := stuck_reason(pod)) is not None:
                raise NightError(f"{job}: {why}")
        if time.monotonic() - began > timeout:
            raise NightError(f"{job} did not end in {timeout:.0f} s: {line}")
        time.sleep(2)
    wall = time.monotonic() - began
    finished = kubectl.json("job", job)
    pod = pods[0] if pods else {}
    return Night(
        job=job,
        outcome=outcome,
        reason=job_reason(finished),
        clone_exit=exit_code(pod, "kubernetes-checkout"),
        nightly_exit=exit_code(pod, NIGHTLY),
        wall_s=wall,
        log=kubectl.logs(job, NIGHTLY),
        clone_log=kubectl.logs(job, "kubernetes-checkout"),
    )


def scheduled_job(kubectl: Kubectl, seen: set[str]) -> str | None:
    """A Job the CronJob controller made (owned by the CronJob, not one of `seen`)."""
    for job in kubectl.json("jobs")["items"]:
        owners = job["metadata"].get("ownerReferences") or []
        annotations = job["metadata"].get("annotations") or {}
        if job["metadata"]["name"] in seen or annotations.get("cronjob.kubernetes.io/instantiate"):
            continue
        if any(o.get("kind") == "CronJob" and o.get("name") == CRONJOB for o in owners):
            return str(job["metadata"]["name"])
    return None


def left_in_cluster(kubectl: Kubectl) -> list[str]:
    """Every pod, Job and CronJob of any namespace, and the night's ConfigMap."""
    out = kubectl.run("get", "pods,jobs,cronjobs", "-A", "-o", "name")
    out += kubectl.run("get", "configmap", CRONJOB, "--ignore-not-found", "-o", "name")
    return out.split()


def diagnose(kubectl: Kubectl) -> None:
    """What the cluster says about the night's pods, after a failed step."""
    for args in (("get", "cronjobs,jobs,pods", "-o", "wide"), ("describe", "pods"),
                 ("get", "events", "--sort-by=.lastTimestamp")):  # fmt: skip
        with contextlib.suppress(NightError, subprocess.TimeoutExpired):
            say(f"$ kubectl {' '.join(args)}")
            print(kubectl.run(*args, check=False)[-6000:], flush=True)


# -- the night ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Planted:
    """The history's regression: the CI runs' last good and first bad commits, the culprit."""

    good: str
    bad: str
    culprit: str

    @property
    def report_dir(self) -> str:  # under <state>/reports/<job>/, as the nightly names it
        return f"{self.good[:12]}-{self.bad[:12]}"


def night_line(n: Night) -> str:
    return (
        f"{n.job}: Job {n.outcome} ({n.reason}), clone exit {n.clone_exit}, "
        f"nightly exit {n.nightly_exit}, {n.wall_s:.0f} s"
    )


def first_night(kubectl: Kubectl, timeout: float, failures: list[str]) -> Night:
    """The night an operator starts: its nightly must report the culprit (exit 3), which
    the manifest's backoffLimit 0 turns into a Failed Job on purpose."""
    began = time.monotonic()
    kubectl.run("create", "job", f"--from=cronjob/{CRONJOB}", MANUAL_JOB)
    n = wait_night(kubectl, MANUAL_JOB, began, timeout)
    say(night_line(n))
    if (n.outcome, n.nightly_exit) == ("Failed", 3):
        say(f"{n.job}: Failed on purpose: exit 3 is a culprit reported")
    else:
        failures.append(
            f"the first night's Job is {n.outcome} with the nightly's exit {n.nightly_exit}: "
            "a culprit reported is exit 3 and a Failed Job"
        )
    return n


def scheduled_night(kubectl: Kubectl, timeout: float, failures: list[str]) -> Night | None:
    """The night the CronJob controller starts once the schedule is every minute: the
    regression is hunted already, so it must end Complete with exit 0."""
    kubectl.run("patch", "cronjob", CRONJOB, "--type=merge",
                "-p", '{"spec":{"schedule":"* * * * *"}}')  # fmt: skip
    say("schedule set to every minute: waiting for the controller's Job")
    began = time.monotonic()
    job = None
    while job is None and time.monotonic() - began < SCHEDULE_WAIT_S:
        job = scheduled_job(kubectl, {MANUAL_JOB})
        if job is None:
            time.sleep(2)
    # Only that one: the next minute would start another once it ends.
    kubectl.run("patch", "cronjob", CRONJOB, "--type=merge", "-p", '{"spec":{"suspend":true}}')
    if job is None:
        failures.append(f"the CronJob controller made no Job within {SCHEDULE_WAIT_S:.0f} s")
        return None
    say(f"the controller made {job} {time.monotonic() - began:.0f} s after the patch")
    n = wait_night(kubectl, job, time.monotonic(), timeout)
    say(night_line(n))
    if (n.outcome, n.nightly_exit) != ("Complete", 0):
        failures.append(
            f"the scheduled night's Job is {n.outcome} with the nightly's exit "
            f"{n.nightly_exit}: a regression already hunted is exit 0 and a Complete Job"
        )
    if "already hunted" not in n.log:
        failures.append("the scheduled night's log does not say the regression was hunted")
    return n


def check_report(state: Path, planted: Planted, client: Any, failures: list[str]) -> Path:
    """The first night's nightly.json on the state hostPath, and its upload."""
    report = state / "reports" / CI_JOB / planted.report_dir / "nightly.json"
    try:
        data = json.loads(report.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        failures.append(f"no report at {report}: {exc}")
    else:
        failures += report_problems(
            data, good=planted.good, bad=planted.bad, culprit=planted.culprit
        )
    uploaded = {b.name for b in client.list_blobs(BUCKET, prefix=UPLOAD_PREFIX + "/")}
    want = f"{UPLOAD_PREFIX}/{CI_JOB}/{planted.report_dir}/nightly.json"
    if want in uploaded:
        say(f"uploaded: {len(uploaded)} objects under gs://{BUCKET}/{UPLOAD_PREFIX}/")
    else:
        failures.append(f"gs://{BUCKET}/{want} was not uploaded")
    return report


def check_hunts(state: Path, planted: Planted, failures: list[str]) -> None:
    from bisector.nightly.store import NightlyStore

    store = NightlyStore(state / "nightly.db")
    try:
        hunts = [(h.status, h.culprit) for h in store.hunts()]
    finally:
        store.close()
    if hunts != [("found", planted.culprit)]:
        failures.append(f"the database holds the hunts {hunts}, not the one found")


def clean_up(kubectl: Kubectl, nights: Sequence[Night], failures: list[str]) -> None:
    """The CronJob, its Jobs and the ConfigMap deleted; nothing may be left."""
    wait = ("--cascade=foreground", "--wait=true", "--timeout=120s", "--ignore-not-found")
    kubectl.run("delete", "cronjob", CRONJOB, *wait)
    for n in nights:
        kubectl.run("delete", "job", n.job, *wait)
    kubectl.run("delete", "configmap", CRONJOB, "--ignore-not-found")
    deadline = time.monotonic() + 60
    while (left := left_in_cluster(kubectl)) and time.monotonic() < deadline:
        time.sleep(2)
    if left:
        failures.append("left in the cluster: " + ", ".join(left))
    else:
        say("nothing of the night is left in the cluster")


def night(args: argparse.Namespace, kubectl: Kubectl) -> int:
    from real_jobs import git_daemon, host_address

    from tests.helpers.ci_history import write_job_history

    run_dir: Path = args.run_dir.resolve()
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    failures: list[str] = []
    address = host_address()
    demo, runs, good, bad = made_history(run_dir)
    planted = Planted(good, bad, demo.culprit)
    state = state_dir(run_dir)
    say(
        f"demo repository {demo.path}: {len(runs)} CI runs, the regression between "
        f"{good[:12]} and {bad[:12]}, planted culprit {demo.culprit[:12]}"
    )
    nights: list[Night] = []
    with emulator(address) as (url, client), git_daemon(demo.path, address) as git_url:
        write_job_history(client, BUCKET, CI_JOB, runs)
        say(f"CI history of {CI_JOB} in gs://{BUCKET} at {url}")
        account = kubectl.run("get", "serviceaccount", "bisector", "-o", "name", check=False)
        here = Here(
            git_url=git_url,
            state_host_path=str(state),
            emulator=url,
            service_account=bool(account.strip()),
            image=args.image,
        )
        manifest = run_dir / "nightly-cronjob.yaml"
        manifest.write_text(yaml.safe_dump_all(derive(load_manifest(), here), sort_keys=False))
        config = run_dir / "nightly.toml"
        config.write_text(nightly_toml(), encoding="utf-8")
        kubectl.run("create", "configmap", CRONJOB, f"--from-file=nightly.toml={config}")
        say(kubectl.run("apply", "-f", str(manifest)).strip())

        nights.append(first_night(kubectl, args.timeout, failures))
        report = check_report(state, planted, client, failures)
        if not args.no_schedule and (later := scheduled_night(kubectl, args.timeout, failures)):
            nights.append(later)
        check_hunts(state, planted, failures)
        if failures:
            diagnose(kubectl)
        clean_up(kubectl, nights, failures)

    for n in nights:
        if n.clone_exit != 0:
            say(f"--- {n.job}: the checkout's log:")
            for line in n.clone_log.strip().splitlines()[-12:]:
                print(f"    {line}")
        say(f"--- {night_line(n)}; the nightly's log ends:")
        for line in n.log.strip().splitlines()[-12:]:
            print(f"    {line}")
    md = report.with_name("nightly.md")
    if md.is_file():
        say(f"--- {md} begins:")
        for line in md.read_text(encoding="utf-8").splitlines()[:25]:
            print(f"    {line}")
    for f in failures:
        say(f"FAILED: {f}")
    if not failures:
        say("the CronJob's night named the planted regression and its culprit")
    return 1 if failures else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--cluster-dir", type=Path, required=True)
    parser.add_argument("--kubectl", type=Path, required=True, help="the tree's kubectl")
    parser.add_argument(
        "--run-dir", type=Path, required=True, help="emptied, then the night's files"
    )
    parser.add_argument("--image", default=IMAGE)
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds a night may take")
    parser.add_argument("--no-schedule", action="store_true", help="only the night started by hand")
    args = parser.parse_args(argv)
    kubeconfig = args.cluster_dir.resolve() / "admin.kubeconfig"
    if not kubeconfig.is_file():
        print(
            f"real-nightly: no cluster in {args.cluster_dir} (no admin.kubeconfig)", file=sys.stderr
        )
        return 2
    if not os.access(args.kubectl, os.X_OK):
        print(f"real-nightly: no kubectl at {args.kubectl}", file=sys.stderr)
        return 2
    began = time.monotonic()
    try:
        code = night(args, Kubectl(args.kubectl, kubeconfig))
    except NightError as exc:
        say(f"FAILED: {exc}")
        diagnose(Kubectl(args.kubectl, kubeconfig))
        code = 1
    say(f"done in {(time.monotonic() - began) / 60:.1f} min, exit {code}")
    return code


if __name__ == "__main__":
    sys.exit(main())
