"""Make the branch the modern proof bisects: 10 commits on a Kubernetes v1.32 tree, one PLANTED.

    python scripts/procs_plant_modern.py --repo ~/kubernetes [--base v1.32.0-rc.1] [--branch NAME]

Nine commits add a comment to a file of the apiserver/client-go staging trees (harmless,
real-looking changes); the sixth, marked PLANTED in its message, turns the default of the
`WatchFromStorageWithoutResourceVersion` feature gate on. That commit is planted by this
project: the code it switches on is upstream's (kubernetes #115096, 610b67031c79, "cacher:
Fix watch behaviour for unset RV"; the regression it caused is #121688, and #123935 put it
behind this gate, default off). The default is declared twice and both must change
(staging/src/k8s.io/apiserver/pkg/features/kube_features.go and
pkg/features/versioned_kube_features.go: a different spec registered twice panics at start).

Plumbing only (a temporary index, `git write-tree --missing-ok`): the checkout is never
touched, and a tree whose snapshot lacks some test-data blobs (two swagger.json files of
the v1.32.0-rc.1 upload) still gets its commits. Dates and author are fixed, so the same
base gives the same commit ids everywhere. Idempotent: an existing branch is kept if it
already holds these commits. Prints the base, the planted commit and the tip.

With `--check-report RUN/report.json` (after `bisector run`): exit 0 when the run named
the planted commit, confirmed; 1 otherwise, saying what it named.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

from bisector import proc

GATE = "WatchFromStorageWithoutResourceVersion"
GATE_FILES = (
    "staging/src/k8s.io/apiserver/pkg/features/kube_features.go",
    "pkg/features/versioned_kube_features.go",
)
PLANTED = (
    "PLANTED: WatchFromStorageWithoutResourceVersion default on (both declarations; the code "
    "it enables is upstream's #115096, regression #121688)"
)
COMMENTS = (
    (
        "staging/src/k8s.io/apiserver/pkg/storage/cacher/cacher.go",
        "// The cacher serves list and watch requests from its watch cache; "
        "see delegator.go for when it does not.",
        "cacher: say where requests bypass the watch cache",
    ),
    (
        "staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go",
        "// Watch and List read from etcd directly: callers wanting the cache go through "
        "the cacher.",
        "etcd3: note that the store itself never caches",
    ),
    (
        "staging/src/k8s.io/apiserver/pkg/storage/cacher/watch_cache.go",
        "// The watch cache keeps a sliding window of events; its capacity grows and "
        "shrinks with the load.",
        "watch cache: describe the event window",
    ),
    (
        "staging/src/k8s.io/client-go/tools/cache/reflector.go",
        "// A reflector's watch carries a resource version after its first list; see ListAndWatch.",
        "reflector: document the resource version a watch starts from",
    ),
    (
        "staging/src/k8s.io/apiserver/pkg/endpoints/handlers/watch.go",
        "// Each watch request is served by one serveWatch goroutine per connection.",
        "handlers: note the goroutine per watch",
    ),
    None,  # the planted commit
    (
        "staging/src/k8s.io/apiserver/pkg/storage/cacher/ready.go",
        "// ready tracks whether the cacher may serve requests; it is reset on every re-list.",
        "cacher: document the ready state",
    ),
    (
        "staging/src/k8s.io/apimachinery/pkg/apis/meta/internalversion/defaults.go",
        "// SetListOptionsDefaults is applied to every list and watch request before it is served.",
        "internalversion: say when list option defaults apply",
    ),
    (
        "staging/src/k8s.io/apiserver/pkg/storage/cacher/caching_object.go",
        "// A cachingObject serializes an object once per encoding for all the watchers "
        "that need it.",
        "cacher: explain the caching object",
    ),
    (
        "staging/src/k8s.io/apiserver/pkg/storage/interfaces.go",
        '// ListOptions.ResourceVersion "" means the newest state, served from etcd when '
        "consistency requires it.",
        "storage: clarify an empty resource version",
    ),
)
_DEFAULT_OFF = re.compile(
    r"(\b" + GATE + r": \{\n\s*\{Version: version\.MustParse\(\"1\.27\"\), Default: )false"
)


def git(repo: Path, *args: str, env: dict[str, str] | None = None, stdin: str | None = None) -> str:
    # proc.run adds `env` to the current environment.
    return proc.run(["git", *args], cwd=repo, env=env, stdin=stdin, timeout=120).stdout


def flip(text: str, path: str) -> str:
    flipped, n = _DEFAULT_OFF.subn(r"\1true", text)
    if n != 1:
        raise SystemExit(f"{path}: no `{GATE}` default false at 1.27; is this a 1.32 tree?")
    return flipped


def plant(repo: Path, base: str, branch: str) -> tuple[str, str, str]:
    base_id = git(repo, "rev-parse", "--verify", f"{base}^{{commit}}").strip()
    who = {
        "GIT_AUTHOR_NAME": "bisector",
        "GIT_AUTHOR_EMAIL": "bisector@localhost",
        "GIT_COMMITTER_NAME": "bisector",
        "GIT_COMMITTER_EMAIL": "bisector@localhost",
    }
    with tempfile.TemporaryDirectory() as tmp:
        index = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git(repo, "read-tree", base_id, env=index)
        parent, planted = base_id, ""
        for n, change in enumerate(COMMENTS, start=1):
            if change is None:
                edits = [(f, flip(git(repo, "show", f"{parent}:{f}"), f)) for f in GATE_FILES]
                message = PLANTED
            else:
                path, line, message = change
                edits = [(path, git(repo, "show", f"{parent}:{path}") + line + "\n")]
            for path, text in edits:
                blob = git(repo, "hash-object", "-w", "--stdin", stdin=text).strip()
                git(repo, "update-index", "--cacheinfo", f"100644,{blob},{path}", env=index)
            tree = git(repo, "write-tree", "--missing-ok", env=index).strip()
            when = {"GIT_AUTHOR_DATE": f"2026-12-04T12:{n:02d}:00Z"}
            when["GIT_COMMITTER_DATE"] = when["GIT_AUTHOR_DATE"]
            commit = ["commit-tree", tree, "-p", parent, "-m", message]
            parent = git(repo, *commit, env={**index, **who, **when}).strip()
            if change is None:
                planted = parent
    git(repo, "update-ref", f"refs/heads/{branch}", parent)
    return base_id, planted, parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repo", type=Path, required=True, help="a Kubernetes v1.32 checkout")
    parser.add_argument("--base", default="v1.32.0-rc.1", help="the good endpoint")
    parser.add_argument("--branch", default="bisector-planted-gate")
    parser.add_argument("--check-report", type=Path, help="a run's report.json to check")
    args = parser.parse_args(argv)
    try:
        base, planted, tip = plant(args.repo, args.base, args.branch)
    except proc.CommandError as exc:
        print(f"error: {exc.why}: {exc.stderr.strip()[-300:]}", file=sys.stderr)
        return 2
    if args.check_report is None:
        print(f"base {base}\nplanted {planted}\ntip {tip}")
        return 0
    return check_report(args.check_report, planted)


def check_report(path: Path, planted: str) -> int:
    try:
        culprit = json.loads(path.read_text()).get("culprit") or {}
    except (OSError, ValueError) as exc:
        print(f"error: cannot read {path}: {exc}", file=sys.stderr)
        return 2
    named, confirmed = culprit.get("commit"), culprit.get("confirmed")
    if named == planted and confirmed:
        print(f"the run named the planted commit {planted[:12]}, confirmed")
        return 0
    print(f"the run named {named} (confirmed: {confirmed}), not the planted {planted}, confirmed")
    return 1


if __name__ == "__main__":
    sys.exit(main())
