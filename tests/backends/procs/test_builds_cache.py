"""The procs build cache's key (issue 30, mutation audit): a binary is reused only when
everything that made it is the same: the tree, the Go that compiled it, the build fixes
applied, and for the harness its patch. Changing any one of them builds again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.procs_backend import HARNESS_PATCH, ProcsWorld, built_of, fake_env, make_world


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ProcsWorld]:
    made = make_world(tmp_path)
    with fake_env(monkeypatch, made):
        monkeypatch.setenv("FAKE_GO_CALLS", str(tmp_path / "go-calls"))
        yield made


def _builds(world: ProcsWorld, package: str) -> int:
    calls = (world.root / "go-calls").read_text().splitlines()
    return len([c for c in calls if c.startswith("build ") and f"./cmd/{package} " in c])


def test_the_same_tree_with_the_same_ingredients_is_built_once(world: ProcsWorld) -> None:
    world.backend().build(world.candidate(2, "wt-a"))
    world.backend().build(world.candidate(2, "wt-b"))
    assert _builds(world, "kube-apiserver") == 1


def test_another_go_version_builds_the_tree_again(
    world: ProcsWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.backend().build(world.candidate(2, "wt-a"))
    monkeypatch.setenv("FAKE_GO_VERSION", "go1.20.3")
    world.backend().build(world.candidate(2, "wt-b"))
    assert _builds(world, "kube-apiserver") == 2


def test_another_set_of_build_fixes_builds_the_tree_again(world: ProcsWorld) -> None:
    world.backend().build(world.candidate(2, "wt-a"))
    fix = {"name": "add-fixed", "why": "a fix for this tree", "command": "echo x > FIXED"}
    backend = world.backend(build_fixes=[fix])
    candidate = world.candidate(2, "wt-b")
    backend.build(candidate)
    assert _builds(world, "kube-apiserver") == 2
    assert "FIXED = True" in built_of(backend, candidate.commit).binary.read_text()


def test_another_harness_patch_builds_the_harness_again(world: ProcsWorld) -> None:
    first = world.backend()
    first.setup()
    world.patch.write_text(HARNESS_PATCH.replace("harness-patched", "harness-patched-v2"))
    second = world.backend()
    second.setup()
    assert _builds(world, "kubemark") == 2
    assert (kubemark := second.harness.kubemark) is not None
    assert "harness-patched-v2" in kubemark.read_text()


def test_a_release_tag_names_the_harness_in_any_clone(world: ProcsWorld) -> None:
    """A v1.32 tree's harness is its release tag: a snapshot's commit id (cd13ec4a) exists
    in no real kubernetes clone, the tag v1.32.0-rc.1 in every one. A branch of the same
    name is never what is checked out (a branch moves)."""
    import subprocess

    git = ["git", "-C", str(world.repo.path)]
    subprocess.run([*git, "tag", "v1.32.0-rc.1", world.repo.mainline[0]], check=True)
    subprocess.run([*git, "branch", "v1.32.0-rc.1", world.repo.mainline[2]], check=True)
    by_tag = world.backend(harness_commit="v1.32.0-rc.1")
    by_tag.setup()
    by_hash = world.backend()  # harness_commit = mainline[0], the tagged commit
    by_hash.setup()
    assert _builds(world, "kubemark") == 1  # the same tree: built once, by the tag
    assert by_tag.harness.kubemark is not None
    assert by_tag.harness.kubemark == by_hash.harness.kubemark
