"""scripts/procs_plant_modern.py: the branch the modern proof bisects, on a small tree shaped
like kubernetes v1.32.0-rc.1 where it matters (the gate's two default declarations, read
from staging/src/k8s.io/apiserver/pkg/features/kube_features.go:421-423 and
pkg/features/versioned_kube_features.go:368-370 of cd13ec4a)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
DECLARATION = """\
var defaultVersionedKubernetesFeatureGates = map[featuregate.Feature]featuregate.VersionedSpecs{
\t{prefix}WatchFromStorageWithoutResourceVersion: {
\t\t{Version: version.MustParse("1.27"), Default: false, PreRelease: featuregate.Beta},
\t},

\t{prefix}WatchList: {
\t\t{Version: version.MustParse("1.27"), Default: false, PreRelease: featuregate.Alpha},
\t\t{Version: version.MustParse("1.32"), Default: true, PreRelease: featuregate.Beta},
\t},
}
"""


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("plant", ROOT / "scripts/procs_plant_modern.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout


def _tree(path: Path, plant: ModuleType) -> Path:
    path.mkdir()
    _git(path, "init", "-q")
    for change in plant.COMMENTS:
        if change is not None:
            (path / change[0]).parent.mkdir(parents=True, exist_ok=True)
            (path / change[0]).write_text("package x\n")
    staging, kube = plant.GATE_FILES
    for name, prefix in ((staging, ""), (kube, "genericfeatures.")):
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(DECLARATION.replace("{prefix}", prefix))
    _git(path, "add", "-A")
    _git(path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "v1.32.0-rc.1")
    return path


def test_ten_commits_one_planted_flipping_both_declarations_and_nothing_else(
    tmp_path: Path,
) -> None:
    plant = _script()
    repo = _tree(tmp_path / "k", plant)
    base, planted, tip = plant.plant(repo, "HEAD", "planted")
    assert _git(repo, "rev-list", "--count", f"{base}..{tip}").strip() == "10"
    assert _git(repo, "log", "-1", "--format=%s", planted).startswith("PLANTED:")
    diff = _git(repo, "diff", f"{planted}^", planted)
    assert diff.count('-\t\t{Version: version.MustParse("1.27"), Default: false') == 2
    assert diff.count('+\t\t{Version: version.MustParse("1.27"), Default: true') == 2
    assert "WatchList" not in "".join(ln for ln in diff.splitlines() if ln.startswith(("+", "-"))
                                      and not ln.startswith(("+++", "---")))  # fmt: skip
    # The other nine only add a comment line; the same base gives the same ids.
    assert plant.plant(repo, base, "again") == (base, planted, tip)


def test_a_tree_without_the_gate_is_one_clear_line(tmp_path: Path) -> None:
    plant = _script()
    repo = _tree(tmp_path / "k", plant)
    (repo / plant.GATE_FILES[1]).write_text("package features\n")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "older")
    with pytest.raises(SystemExit, match=r"is this a 1\.32 tree"):
        plant.plant(repo, "HEAD", "planted")


def test_the_report_check_wants_the_planted_commit_confirmed(tmp_path: Path) -> None:
    plant = _script()
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"culprit": {"commit": "abc", "confirmed": False}}))
    assert plant.check_report(report, "abc") == 1  # named but not confirmed
    report.write_text(json.dumps({"culprit": {"commit": "abc", "confirmed": True}}))
    assert plant.check_report(report, "abc") == 0
    assert plant.check_report(report, "def") == 1
