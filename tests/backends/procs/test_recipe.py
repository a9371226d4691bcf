"""The build's own steps read from a GOPATH-era tree (bisector.backends.procs.recipe).

The Makefile lines below are the rules of the real trees' `build/root/Makefile.generated_files`
(kubernetes c13d8917 of 1 June 2017, 2c521d7d of 1 August 2017, 855c5e0e of 1 September
2017, read from the hyperhq/kubernetes mirror): where `$(OPENAPI_GEN):` builds its
generator moved from cmd/libs/go2idl to vendor/k8s.io/kube-gen to vendor/k8s.io/code-generator
while every other line stayed. `hack/godep-save.sh` is 855c5e0e's loop linking staging.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bisector.backends.procs import recipe
from bisector.backends.procs.build import BuildPlace
from bisector.errors import BuildError
from bisector.report.adaptation import FROM_TREE, read_build_fixes
from tests.helpers.procs_backend import ProcsWorld, built_of
from tests.helpers.repo import BuiltRepo

GENERATORS = {
    "2017-06": "cmd/libs/go2idl/openapi-gen",
    "2017-08": "./vendor/k8s.io/kube-gen/cmd/openapi-gen",
    "2017-09": "./vendor/k8s.io/code-generator/cmd/openapi-gen",
}


def makefile(generator: str) -> str:
    return f"""\
.PHONY: generated_files
generated_files: gen_deepcopy gen_defaulter gen_conversion gen_openapi

.PHONY: verify_generated_files
verify_generated_files: verify_gen_deepcopy    \\
                        verify_gen_defaulter   \\
                        verify_gen_conversion

GENERATED_FILE_PREFIX := zz_generated.

ALL_GO_DIRS := $(shell                                                   \\
    hack/make-rules/helpers/cache_go_dirs.sh $(META_DIR)/all_go_dirs.mk  \\
)

DEEPCOPY_BASENAME := $(GENERATED_FILE_PREFIX)deepcopy
DEEPCOPY_GEN := $(BIN_DIR)/deepcopy-gen

OPENAPI_BASENAME := $(GENERATED_FILE_PREFIX)openapi
OPENAPI_FILENAME := $(OPENAPI_BASENAME).go
OPENAPI_OUTPUT_PKG := pkg/generated/openapi

OPENAPI_GEN := $(BIN_DIR)/openapi-gen

OPENAPI_DIRS := $(shell                                             \\
    grep --color=never -l '+k8s:openapi-gen=' $(ALL_K8S_TAG_FILES)  \\
        | xargs -n1 dirname                                         \\
        | LC_ALL=C sort -u                                          \\
)

$(DEEPCOPY_GEN):
\thack/make-rules/build.sh ./vendor/k8s.io/code-generator/cmd/deepcopy-gen
\ttouch $@

$(OPENAPI_GEN):
\thack/make-rules/build.sh {generator}
\ttouch $@
"""


# hack/make-rules/helpers/cache_go_dirs.sh, cut to what it prints: every directory with
# a .go file, vendor/ and staging/ pruned, the cache file written.
GO_DIRS = """\
#!/bin/bash
set -o errexit
find -H . \\( -not \\( \\( -path ./vendor -o -path ./staging -o -path ./_\\* \\) -prune \\) \\) \\
    -type f -name \\*.go | sed 's|/[^/]*$||' | sed 's|^./||' | LC_ALL=C sort -u > "$1"
cat "$1"
"""

GODEP_SAVE = """\
for repo in $(ls staging/src/k8s.io); do
  if [ ! -e "vendor/k8s.io/${repo}" ]; then
     ln -s "../../staging/src/k8s.io/${repo}" "vendor/k8s.io/${repo}"
  fi
done
"""


def write_tree(root: Path, era: str = "2017-09", *, link_staging: bool = True) -> Path:
    files = {
        "build/root/Makefile.generated_files": makefile(GENERATORS[era]),
        "hack/make-rules/helpers/cache_go_dirs.sh": GO_DIRS,
        "hack/godep-save.sh": GODEP_SAVE,
        "pkg/api/v1/types.go": "// +k8s:openapi-gen=true\npackage v1\n",
        "pkg/apis/apps/types.go": "package apps\n",
        "cmd/kube-apiserver/apiserver.go": "package main\n",
        "staging/src/k8s.io/api/core/v1/doc.go": 'package v1 // import "k8s.io/api/core/v1"\n',
        "staging/src/k8s.io/newrepo/pkg/a/a.go": "package a\n",
        # 1444d25's apiextensions: a comment naming a path that does not exist.
        "staging/src/k8s.io/kube-apiextensions-server/pkg/apis/apiextensions/doc.go": (
            "// +k8s:deepcopy-gen=package\n\n"
            'package apiextensions // import "k8s.io/apiextension-server/pkg/apis/apiextensions"\n'
        ),
        "NEEDS": "pkg/generated/openapi/zz_generated.openapi.go\n",
        "value": "0\n",
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "hack/make-rules/helpers/cache_go_dirs.sh").chmod(0o755)
    (root / "vendor/k8s.io").mkdir(parents=True)
    names = ["api", "kube-apiextensions-server"] + (["newrepo"] if link_staging else [])
    for name in names:
        (root / "vendor/k8s.io" / name).symlink_to(f"../../staging/src/k8s.io/{name}")
    return root


def gopath_place(tree: Path) -> BuildPlace:
    return BuildPlace(tree, tree.parent / "gopath/src/k8s.io/kubernetes", {"GO": "go"})


@pytest.mark.parametrize("era", sorted(GENERATORS))
def test_the_generator_is_where_the_trees_makefile_builds_it(tmp_path: Path, era: str) -> None:
    tree = write_tree(tmp_path / "tree", era)
    (generated,) = recipe.read_generated(tree)
    assert generated.name == "openapi"
    assert generated.generator == GENERATORS[era].removeprefix("./")
    assert generated.output == "pkg/generated/openapi/zz_generated.openapi.go"
    assert generated.tag == "+k8s:openapi-gen="
    assert generated.go_dirs == "hack/make-rules/helpers/cache_go_dirs.sh"
    steps = {s.name: s for s in recipe.tree_steps(gopath_place(tree), 60)}
    command = steps["generate-openapi"].step.cmd[-1]
    assert f'build -o "$BISECTOR_TOOLS/openapi-gen" ./{generated.generator}' in command
    assert "-p k8s.io/kubernetes/pkg/generated/openapi -O zz_generated.openapi" in command


def test_only_what_verify_generated_files_does_not_check_is_generated() -> None:
    assert recipe.uncommitted_sets(makefile(GENERATORS["2017-06"])) == ["openapi"]
    verified = "verify_gen_conversion verify_gen_openapi"
    every = makefile("x").replace("verify_gen_conversion", verified)
    assert recipe.uncommitted_sets(every) == []


def test_a_committed_output_a_module_tree_and_a_tree_without_the_makefile_need_nothing(
    tmp_path: Path,
) -> None:
    tree = write_tree(tmp_path / "tree")
    out = tree / "pkg/generated/openapi/zz_generated.openapi.go"
    out.parent.mkdir(parents=True)
    out.write_text("package openapi\n")
    assert "generate-openapi" not in [s.name for s in recipe.tree_steps(gopath_place(tree), 60)]
    assert recipe.tree_steps(BuildPlace(tree, tree, {}), 60) == []  # module mode
    (tree / recipe.MAKEFILE).unlink()
    assert recipe.read_generated(tree) == []


def test_a_missing_staging_link_and_a_foreign_import_comment_are_mended_for_real(
    tmp_path: Path,
) -> None:
    tree = write_tree(tmp_path / "tree", link_staging=False)
    steps = {s.name: s for s in recipe.tree_steps(gopath_place(tree), 60)}
    assert "newrepo" in steps["staging-links"].why
    assert steps["foreign-import-comments"].why.endswith(
        "staging/src/k8s.io/kube-apiextensions-server/pkg/apis/apiextensions/doc.go"
    )
    for name in ("staging-links", "foreign-import-comments"):
        s = steps[name].step
        subprocess.run(s.cmd, cwd=s.cwd, check=True)
    assert (tree / "vendor/k8s.io/newrepo/pkg/a/a.go").is_file()
    doc = tree / "staging/src/k8s.io/kube-apiextensions-server/pkg/apis/apiextensions/doc.go"
    assert doc.read_text().splitlines()[-1] == "package apiextensions"
    # A comment naming where the tree keeps the package stays (k8s.io/api/core/v1).
    assert "// import" in (tree / "staging/src/k8s.io/api/core/v1/doc.go").read_text()
    assert {s.name for s in recipe.tree_steps(gopath_place(tree), 60)} == {"generate-openapi"}


def _commit_tree(world: ProcsWorld, era: str) -> BuiltRepo:
    path = world.root / f"repo-{era}"
    write_tree(path, era, link_staging=False)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(path)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "a 2017 tree"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True)
    return BuiltRepo(path, [head.stdout.strip()])


@pytest.mark.parametrize("era", ["2017-06", "2017-09"])
def test_one_config_without_fixes_builds_trees_of_every_era_and_lists_what_it_did(
    world: ProcsWorld, era: str
) -> None:
    world.repo = _commit_tree(world, era)
    backend = world.backend()
    backend.setup()  # the harness is built from such a tree too
    candidate = world.candidate(0)
    backend.build(candidate)
    generated = candidate.worktree / "pkg/generated/openapi/zz_generated.openapi.go"
    assert "k8s.io/kubernetes/pkg/api/v1" in generated.read_text()  # the tagged package only
    assert "pkg/apis/apps" not in generated.read_text()
    assert built_of(backend, candidate.commit).binary.is_file()
    applied = read_build_fixes(candidate.eval_dir)
    assert [a.name for a in applied] == [
        "staging-links",
        "foreign-import-comments",
        "generate-openapi",
    ]
    assert {a.source for a in applied} == {FROM_TREE}
    assert GENERATORS[era].removeprefix("./") in applied[-1].commands[0]
    assert json.loads((candidate.eval_dir / "build-fixes.json").read_text())[0]["source"] == "tree"
    # From the cache, the same list: the binary was built with them.
    again = world.candidate(0, "wt2", "002")
    backend.build(again)
    assert [a.name for a in read_build_fixes(again.eval_dir)] == [a.name for a in applied]


def test_without_the_trees_steps_the_build_fails_on_the_missing_package(
    world: ProcsWorld,
) -> None:
    world.repo = _commit_tree(world, "2017-09")
    backend = world.backend()
    backend.setup()
    candidate = world.candidate(0)
    (candidate.worktree / recipe.MAKEFILE).unlink()  # nothing tells what to generate
    with pytest.raises(BuildError, match="cannot find package"):
        backend.build(candidate)
