"""Clean against incremental builds of the `procs` backend, side by side in one run.

Builds `kube-apiserver` of BASE with an empty GOCACHE (clean: what the first candidate of
a hunt costs on a new machine), then of NEXT with the same GOCACHE (incremental: what a
candidate near the last one costs), each through the backend's own build (its toolchain
choice, build fixes, GOPATH and flags), and prints both times and their ratio. Nothing
outside the scratch directory is used or kept: the build cache and GOCACHE are fresh.

    PYTHONPATH=. python scripts/bench_procs_build.py --repo ~/kubernetes \\
        --config configs/procs-2017.toml f93a270^ f93a270
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from bisector.backends.base import BackendContext, Candidate
from bisector.backends.registry import create_backend
from bisector.config import Section, load_config
from bisector.gitrepo import GitRepo
from bisector.settings import RunSettings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", help="the commit built clean")
    parser.add_argument("next", help="the commit built after it, on the same GOCACHE")
    parser.add_argument("--repo", type=Path, required=True, help="a Kubernetes checkout")
    parser.add_argument("--config", type=Path, required=True, help="a procs config")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = parser.parse_args(argv)

    repo = GitRepo(args.repo)
    base, following = repo.resolve(args.base), repo.resolve(args.next)
    settings = RunSettings.from_config(
        load_config(args.config), good=base, bad=following, repo=repo.root
    )
    scratch = Path(tempfile.mkdtemp(prefix="bench-procs-build-"))
    section = settings.backend_section
    data = dict(section.data, gocache=str(scratch / "gocache"))
    data["build_cache_dir"] = str(scratch / "builds")
    context = BackendContext(
        Section(data, section.file, section.path), scratch, warmup_s=settings.warmup_s
    )
    backend = create_backend(settings.backend, context)
    print(f"scratch {scratch}; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    times: list[float] = []
    try:
        for label, commit in (("clean", base), ("incremental", following)):
            worktree = scratch / "worktrees" / commit[:12]
            repo.add_worktree(worktree, commit)
            start = time.monotonic()
            backend.build(Candidate(commit, worktree, scratch / "evals" / commit[:12]))
            times.append(time.monotonic() - start)
            print(f"{label:12} {commit[:12]} {times[-1]:7.1f} s", flush=True)
    finally:
        backend.close()
        for worktree in (scratch / "worktrees").glob("*"):
            repo.remove_worktree(worktree)
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    print(f"incremental / clean: {times[1] / times[0]:.2f} (clean is {times[0] / times[1]:.1f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
