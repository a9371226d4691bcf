"""The planted modern hunt, each evaluation a Kubernetes Job on a real cluster (`make real-jobs`).

    python scripts/real_jobs.py --kube TREE --cluster-dir DIR --run-dir RUN \\
        [--base v1.32.0-rc.1] [--branch bisector-planted-gate] [--parallel 2] [-- RUN_ARGS]

Run inside `scripts/real_cluster.py run ... --` (KUBECONFIG set to the cluster's admin
kubeconfig, the image imported): it serves the tree to the pods from this machine with
`git daemon` (pods reach the host's addresses, not its loopback nor the internet), writes
configs/procs-modern.toml with `[run] executor = "kubernetes"`, `[search] parallel` Jobs at
a time and an `[executor.kubernetes]` table for this cluster, runs `bisector run` on the
planted branch, checks the culprit it names is the planted commit
(scripts/procs_plant_modern.py --check-report), and checks nothing of the run is left in
the cluster. The pods share this machine's procs caches (GOCACHE and the built binaries,
a hostPath volume: the one node is this machine).

The tree served: TREE itself when its history is whole. A tree whose snapshot lacks
blobs and stands in for them with `git replace` (this machine's v1.32.0-rc.1 lacks two
test-data swagger.json files) cannot be served as it is: `git upload-pack` never reads
replace refs, so every fetch of a commit fails on the missing blob. A copy is served then
where the stand-ins are the blobs themselves (the same commits rewritten with plumbing:
the same messages, authors and dates, other ids), and the hunt bisects that copy.
Exit 0 the planted commit named and confirmed, nothing left; 1 otherwise; 2 bad input.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from kubernetes import client as k
from kubernetes import config as kube_config

from bisector import proc
from bisector.executors.kubernetes.api import name_of
from bisector.executors.kubernetes.manifest import LABEL_RUN

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
GIT_TIMEOUT_S = 1800.0


def say(text: str) -> None:
    print(f"real-jobs: {text}", flush=True)


def git(repo: Path, *args: str, env: dict[str, str] | None = None, stdin: str | None = None) -> str:
    done = proc.run(["git", "-C", str(repo), *args], timeout=GIT_TIMEOUT_S, env=env, stdin=stdin)
    return done.stdout.strip()


# -- the tree the pods fetch ------------------------------------------------------------------
def replaced_blobs(tree: Path) -> dict[str, str]:
    """`git replace` stand-ins of blobs in `tree`: missing blob id -> the blob read instead."""
    out = git(tree, "for-each-ref", "--format=%(refname:strip=2) %(objectname) %(objecttype)",
              "refs/replace/")  # fmt: skip
    found = {}
    for line in out.splitlines():
        missing, stand_in, kind = line.split()
        if kind == "blob":
            found[missing] = stand_in
    return found


def serving_copy(tree: Path, dest: Path, refs: Sequence[str]) -> Path:
    """A repository with `refs` whose every object is there: `tree` itself when nothing in
    it is replaced, else a copy at `dest` with the stand-ins written in (see the doc)."""
    replaced = replaced_blobs(tree)
    if not replaced:
        return tree
    shutil.rmtree(dest, ignore_errors=True)
    git(dest.parent, "init", "--quiet", str(dest))
    alternates = dest / ".git" / "objects" / "info" / "alternates"
    alternates.write_text(str(tree / ".git" / "objects") + "\n")
    commits = git(tree, "rev-list", "--reverse", "--topo-order", *refs).split()
    mapped: dict[str, str] = {}
    index = dest / ".git" / "copy-index"
    for commit in commits:
        env = {"GIT_INDEX_FILE": str(index)}
        git(tree, "read-tree", commit, env=env)
        listing = git(tree, "ls-files", "--stage", env=env)
        for line in listing.splitlines():
            meta, path = line.split("\t", 1)
            mode, blob, _stage = meta.split()
            if blob in replaced:
                git(tree, "update-index", "--cacheinfo", f"{mode},{replaced[blob]},{path}", env=env)
        new_tree = git(dest, "write-tree", env=env)  # the index names objects of `tree`
        fields = git(tree, "log", "-1", "--format=%an%x00%ae%x00%ad%x00%cn%x00%ce%x00%cd%x00%P",
                     "--date=raw", commit).split("\0")  # fmt: skip
        name, email, date, c_name, c_email, c_date, parents = fields
        message = git(tree, "log", "-1", "--format=%B", commit)
        stamp = {
            "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_NAME": c_name, "GIT_COMMITTER_EMAIL": c_email,
            "GIT_COMMITTER_DATE": c_date,
        }  # fmt: skip
        args = [a for p in parents.split() for a in ("-p", mapped[p])]
        mapped[commit] = git(dest, "commit-tree", new_tree, *args, "-F", "-", env=stamp,
                             stdin=message + "\n")  # fmt: skip
    index.unlink(missing_ok=True)
    for ref in refs:
        full = git(tree, "rev-parse", "--symbolic-full-name", ref) or f"refs/tags/{ref}"
        git(dest, "update-ref", full, mapped[git(tree, "rev-parse", f"{ref}^{{commit}}")])
    git(dest, "repack", "-a", "-d", "-q")  # every object in the copy's own pack
    alternates.unlink()
    git(dest, "fsck", "--connectivity-only", "--no-progress")
    git(dest, "checkout", "--quiet", "--detach", refs[0])
    say(f"{tree} replaces {len(replaced)} missing blob(s): serving {dest}, its commits rewritten")
    return dest


def host_address() -> str:
    """This machine's address on its default route: pods reach it, not its loopback."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("198.51.100.1", 9))  # TEST-NET-2 (RFC 5737): routed, no packet sent
        return str(s.getsockname()[0])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.contextmanager
def git_daemon(repo: Path, address: str) -> Iterator[str]:
    """`git daemon` serving `repo` read-only on `address`; the URL pods fetch from."""
    port = free_port()
    base = repo.parent
    cmd = ["git", "daemon", "--reuseaddr", f"--base-path={base}", "--export-all",
           f"--listen={address}", f"--port={port}", str(repo)]  # fmt: skip
    daemon = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"git://{address}:{port}/{repo.name}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                git(repo, "ls-remote", url, "HEAD")
                break
            except proc.CommandError:
                if time.monotonic() > deadline or daemon.poll() is not None:
                    raise
                time.sleep(0.2)
        say(f"serving {repo} at {url}")
        yield url
    finally:
        daemon.terminate()
        try:
            daemon.wait(10)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()


# -- the hunt ----------------------------------------------------------------------------------
RUN_TABLE = '[run]\nbackend = "procs"'
CACHE_MOUNTS = (
    '{ "/var/cache/bisector/procs/go-build" = "go-build", '
    '"/var/cache/bisector/procs/builds" = "builds" }'
)


def jobs_config(kubeconfig: Path, url: str, parallel: int, cache: Path) -> str:
    """configs/procs-modern.toml, its evaluations as Jobs on this cluster."""
    text = (ROOT / "configs" / "procs-modern.toml").read_text(encoding="utf-8")
    if RUN_TABLE not in text:
        raise SystemExit(f"configs/procs-modern.toml has no {RUN_TABLE!r}: update real_jobs.py")
    text = text.replace(RUN_TABLE, RUN_TABLE + '\nexecutor = "kubernetes"', 1)
    table = f"""
[search]
parallel = {parallel}

[executor.kubernetes]
kubeconfig = "{kubeconfig}"
namespace = "default"
image = "localhost/bisector:dev"
image_pull_policy = "Never"
git_url = "{url}"
# This machine is the one node: the pods share its procs caches (GOCACHE, the binaries).
cache_host_path = "{cache}"
cache_mounts = {CACHE_MOUNTS}
shm_size = "2Gi"   # etcd's data lives in /dev/shm (procs' tmpdir): a runtime gives 64 MiB
# No DNS in this cluster, and the host's nameserver is out of the pods' reach: every lookup
# (each hollow node's status update resolves its node name) would wait for its timeouts.
dns_nameservers = ["127.0.0.1"]
"""
    return text + table


def left_in_cluster(kubeconfig: Path) -> list[str]:
    """Every Job and pod of any bisector run still in the cluster."""
    api = kube_config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
    jobs = k.BatchV1Api(api).list_job_for_all_namespaces(label_selector=LABEL_RUN).items
    pods = k.CoreV1Api(api).list_pod_for_all_namespaces(label_selector=LABEL_RUN).items
    return [f"Job {name_of(j)}" for j in jobs] + [f"pod {name_of(p)}" for p in pods]


def pods_named(report: Path) -> tuple[int, list[int]]:
    """The evaluations of `report` and those (by n) that do not name the pod they ran in."""
    try:
        evaluations = json.loads(report.read_text(encoding="utf-8")).get("evaluations") or []
    except (OSError, ValueError):
        return 0, []
    fresh = [e for e in evaluations if not e.get("cached")]
    return len(fresh), [e.get("n", 0) for e in fresh if "pod " not in (e.get("ran_on") or "")]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--kube", type=Path, required=True)
    parser.add_argument("--cluster-dir", type=Path, required=True)
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("--base", default="v1.32.0-rc.1")
    parser.add_argument("--branch", default="bisector-planted-gate")
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "bisector" / "procs")
    parser.add_argument("run_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    kubeconfig = args.cluster_dir.resolve() / "admin.kubeconfig"
    if not kubeconfig.is_file():
        print(f"real-jobs: no cluster in {args.cluster_dir} (no admin.kubeconfig)", file=sys.stderr)
        return 2
    run_dir = args.run_dir.resolve()
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    tree = run_dir.parent / f"{run_dir.name}-tree"
    served = serving_copy(args.kube.resolve(), tree, [args.branch, args.base])
    with git_daemon(served, host_address()) as url:
        config = run_dir.parent / f"{run_dir.name}.toml"
        config.write_text(jobs_config(kubeconfig, url, args.parallel, args.cache.resolve()))
        bisector = [PYTHON, "-m", "bisector"]
        # On the tree the run bisects: doctor reads from it which Go it needs.
        subprocess.run(
            [*bisector, "doctor", "--config", str(config), "--repo", str(served)], check=False
        )
        extra = [a for a in args.run_args if a != "--"]
        hunt = [*bisector, "run", "--config", str(config), "--repo", str(served), "--fresh",
                "--good", args.base, "--bad", args.branch, "--run-dir", str(run_dir),
                *extra]  # fmt: skip
        say("$ " + " ".join(hunt))
        hunt_began = time.monotonic()
        code = subprocess.run(hunt, check=False).returncode
        hunt_s = time.monotonic() - hunt_began
    took = time.monotonic() - began
    say(f"bisector run exited {code} after {hunt_s / 60:.1f} min ({took / 60:.1f} min in all)")
    report = run_dir / "report.json"
    check = subprocess.run(
        [PYTHON, str(ROOT / "scripts" / "procs_plant_modern.py"), "--repo", str(served),
         "--base", args.base, "--branch", args.branch, "--check-report", str(report)],
        check=False,
    )  # fmt: skip
    evaluations, unnamed = pods_named(report)
    if unnamed:
        say(f"evaluations {unnamed} of {evaluations} do not name the pod they ran in")
    else:
        say(f"each of the {evaluations} evaluations names its pod")
    left = left_in_cluster(kubeconfig)
    say(f"LEFT IN THE CLUSTER: {', '.join(left)}" if left else "nothing of the run is left")
    (run_dir.parent / f"{run_dir.name}-timing.json").write_text(
        json.dumps({"hunt_s": hunt_s, "script_s": took, "exit": code, "parallel": args.parallel})
    )
    ok = code == 0 and check.returncode == 0 and not unnamed and evaluations > 0 and not left
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
