"""A synthetic repository shaped like Kubernetes history in June 2017, for `bisector demo`.

A first-parent line of "Merge pull request #N from user/branch" commits, each PR
carrying 1 to 3 commits, some of which do not build (their simulator profile is
invalid or missing). One PR is the analogue of #46588: its first commit is
innocent and its second, "Optimize selector for single-matching items" (f93a270
in 2017), drops the Cacher's trigger index, which the sim backend turns into the
node-cacher lag. Author and committer dates are fixed, so hashes are the same on
every machine for a given seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from pathlib import Path

import git

from bisector.errors import BisectorError
from bisector.sim.profile import SimProfile, render_profile

PROFILE_PATH = "hack/kubemark-sim.toml"
CACHER_GO = "staging/src/k8s.io/apiserver/pkg/storage/cacher.go"
SELECTOR_GO = "staging/src/k8s.io/apimachinery/pkg/fields/selector.go"
CULPRIT_PR = 46588
CULPRIT_SUBJECT = "Optimize selector for single-matching items"
START_EPOCH = 1495706400  # 2017-05-25 10:00 UTC: the range spans the end of May into June

_USERS = (
    "liggitt",
    "smarterclayton",
    "deads2k",
    "gmarek",
    "shyamjvs",
    "thockin",
    "mikedanese",
    "caesarxuchao",
    "lavalamp",
    "sttts",
    "jbeda",
    "krousey",
    "yujuhong",
    "dchen1107",
)
_AREAS = (
    ("pkg/kubelet/kubelet_node_status.go", "kubelet: {} node status reporting"),
    ("pkg/controller/node/nodecontroller.go", "node controller: {} eviction rate limiting"),
    ("plugin/pkg/scheduler/factory/factory.go", "scheduler: {} predicate ordering"),
    ("pkg/kubectl/cmd/apply.go", "kubectl apply: {} last-applied handling"),
    ("test/e2e/density.go", "density test: {} latency thresholds"),
    ("cluster/gce/util.sh", "gce: {} master disk sizing"),
    ("pkg/api/validation/validation.go", "validation: {} taint effects"),
    ("test/kubemark/start-kubemark.sh", "kubemark: {} hollow-node resources"),
    ("staging/src/k8s.io/client-go/tools/cache/reflector.go", "client-go: {} relist backoff"),
    ("pkg/proxy/iptables/proxier.go", "kube-proxy: {} iptables-restore batching"),
)
_VERBS = ("fix", "clean up", "simplify", "tune", "document", "refactor", "log more about")


@dataclass(frozen=True)
class DemoRepo:
    path: Path
    good: str  # a mainline merge before the culprit's PR
    bad: str  # the mainline tip
    culprit: str  # the planted commit: second commit of the culprit PR
    culprit_subject: str
    culprit_pr: int
    culprit_merge: str  # the PR's merge on the first-parent line
    culprit_pr_first: str  # the PR's innocent first commit
    unbuildable: tuple[str, ...]  # commits whose profile is missing or invalid
    merges: int  # PR merges after `good`
    nodes: int
    seed: int


DEMO_NODES = 5000
DEMO_DURATION = "2m"  # enough for the regression to show by orders of magnitude


class _Builder:
    def __init__(self, path: Path, seed: int) -> None:
        self.path = path
        self.repo = git.Repo.init(path, initial_branch="master")
        self.rng = random.Random(seed)
        self.clock = START_EPOCH
        self.files: dict[str, str] = {}
        self.changed: set[str] = set()  # staged once per commit: index writes are slow
        self.removed: set[str] = set()

    def write(self, rel: str, text: str | None) -> None:
        target = self.path / rel
        if text is None:
            self.files.pop(rel, None)
            target.unlink()
            self.removed.add(rel)
            self.changed.discard(rel)
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        self.files[rel] = text
        self.changed.add(rel)
        self.removed.discard(rel)

    def touch(self, rel: str, note: str) -> None:
        old = self.files.get(rel, f"// {rel}\npackage main\n")
        self.write(rel, old + f"// {note}\n")

    def commit(self, message: str, parents: list[git.Commit], user: str) -> git.Commit:
        if self.changed:
            self.repo.index.add(sorted(self.changed))
        if self.removed:
            self.repo.index.remove(sorted(self.removed))
        self.changed.clear()
        self.removed.clear()
        self.clock += self.rng.randint(600, 7200)
        date = f"{self.clock} +0000"
        actor = git.Actor(user, f"{user}@users.noreply.github.com")
        return self.repo.index.commit(
            message,
            parent_commits=parents,
            author=actor,
            committer=actor,
            author_date=date,
            commit_date=date,
            head=True,
            skip_hooks=True,
        )


def create_demo_repo(
    path: Path, *, nodes: int = DEMO_NODES, seed: int = 0, prs: int = 40
) -> DemoRepo:
    """Create the demo repository at `path` (which must not exist or be empty)."""
    if path.exists() and any(path.iterdir()):
        raise BisectorError(f"{path} is not empty; pass a new directory for the demo repository")
    if prs < 12:
        raise BisectorError(f"a demo history needs at least 12 PRs, got {prs}")
    b = _Builder(path, seed)
    rng = b.rng
    healthy = SimProfile()
    b.write(PROFILE_PATH, render_profile(healthy))
    b.write(CACHER_GO, "// Cacher: dispatches watch events to watchers via the trigger index.\n")
    b.write(SELECTOR_GO, "// Field selectors.\n")
    b.write("README.md", "# kubernetes (bisector demo history)\n")
    root = b.commit("Initial tree at v1.7.0-alpha.4", [], "k8s-merge-robot")
    culprit_at = rng.randint(prs // 3, 2 * prs // 3)
    # A stretch of mainline that does not build, far enough from the culprit that the
    # merges around the culprit's are all measurable.
    far = [k for k in range(2, prs - 2) if abs(k - culprit_at) > 4]
    # A short history may have no such stretch: then the farthest one.
    broken_at = (
        rng.choice(far) if far else max(range(2, prs - 2), key=lambda k: abs(k - culprit_at))
    )
    inner_broken = set(
        rng.sample([k for k in range(prs) if k not in (culprit_at, broken_at, broken_at + 1)], 3)
    )
    pr_number = 46400
    main = root
    merges: list[git.Commit] = []
    unbuildable: list[str] = []
    culprit = first = merge_of_culprit = None
    for k in range(prs):
        pr_number += rng.randint(3, 30)
        user = rng.choice(_USERS)
        tip = main
        if k == culprit_at:
            number, user, branch, title = (
                CULPRIT_PR,
                "wojtek-t",
                "single_matching_selectors",
                CULPRIT_SUBJECT,
            )
            b.touch(SELECTOR_GO, "fast path: a selector matching a single field value")
            first = tip = b.commit("Add fast path for single-matching field selectors", [tip], user)
            b.touch(CACHER_GO, "strip the single-name field selector before Storage.Watch")
            b.write(PROFILE_PATH, render_profile(replace(healthy, trigger_index=False)))
            culprit = tip = b.commit(CULPRIT_SUBJECT, [tip], user)
        else:
            number = pr_number
            area, template = rng.choice(_AREAS)
            title = template.format(rng.choice(_VERBS))
            branch = title.split(":")[0].replace(" ", "-") + f"-{k}"
            for j in range(rng.choice((1, 1, 2, 2, 3))):
                b.touch(area, f"{title} (part {j + 1})")
                broken = False
                if k in inner_broken and j == 0:
                    b.write(PROFILE_PATH, render_profile(healthy).replace("true", "yes please", 1))
                    broken = True
                elif k in inner_broken:
                    b.write(PROFILE_PATH, render_profile(_current_profile(healthy, culprit)))
                if k == broken_at and j == 0:
                    b.write(PROFILE_PATH, None)
                if k == broken_at + 1 and j == 0:
                    b.write(PROFILE_PATH, render_profile(_current_profile(healthy, culprit)))
                subject = title[0].upper() + title[1:] + ("" if j == 0 else f" ({j + 1}/n)")
                tip = b.commit(subject, [tip], user)
                if broken or PROFILE_PATH not in b.files:
                    unbuildable.append(tip.hexsha)
            if (
                k in inner_broken
                and PROFILE_PATH in b.files
                and "yes please" in b.files[PROFILE_PATH]
            ):
                b.write(PROFILE_PATH, render_profile(_current_profile(healthy, culprit)))
                tip = b.commit("Fix the kubemark profile", [tip], user)
        message = (
            f"Merge pull request #{number} from {user}/{branch}\n\n"
            f"Automatic merge from submit-queue\n\n{title}\n"
        )
        main = b.commit(message, [main, tip], "k8s-merge-robot")
        if PROFILE_PATH not in b.files:
            unbuildable.append(main.hexsha)
        if k == culprit_at:
            merge_of_culprit = main
        merges.append(main)
    assert culprit is not None and first is not None and merge_of_culprit is not None
    good = merges[0]
    return DemoRepo(
        path=path,
        good=good.hexsha,
        bad=main.hexsha,
        culprit=culprit.hexsha,
        culprit_subject=CULPRIT_SUBJECT,
        culprit_pr=CULPRIT_PR,
        culprit_merge=merge_of_culprit.hexsha,
        culprit_pr_first=first.hexsha,
        unbuildable=tuple(unbuildable),
        merges=prs - 1,
        nodes=nodes,
        seed=seed,
    )


def _current_profile(healthy: SimProfile, culprit: git.Commit | None) -> SimProfile:
    """The profile the mainline carries at this point: healthy until the culprit lands."""
    return replace(healthy, trigger_index=culprit is None)


def demo_config(demo: DemoRepo, duration: str = DEMO_DURATION) -> str:
    """The TOML config that bisects `demo` with the sim backend."""
    return (
        "[run]\n"
        'backend = "sim"\n'
        'metric = "conflicts"\n'
        f'warmup = "{duration}"\n'
        # Early verdicts and prefetched builds (README "Hours to culprit").
        'check_every = "10s"\n'
        "early_good = true\n"
        "prefetch_builds = 2\n\n"
        "[backends.sim]\n"
        f'profile = "{PROFILE_PATH}"\n'
        f"nodes = {demo.nodes}\n"
        f"seed = {demo.seed}\n"
    )
