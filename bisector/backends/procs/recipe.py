"""The build's own steps, read from the tree: what a GOPATH-era Kubernetes tree makes
before `go build` can compile it, found the way its own scripts find it.

Kubernetes' `make` does more than `go build`; three things a kube-apiserver build of a
tree without go.mod needs, each read from that tree, so one configuration builds every
tree of an era (the generator moved three times in 2017-2019):

* **generated files that are not committed.** The tree's `Makefile.generated_files`
  (in `build/root/`) lists what `make generated_files` generates (`gen_deepcopy
  gen_defaulter gen_conversion gen_openapi`) and what `verify_generated_files` checks is committed;
  the difference (openapi, until 2019) is made here as that Makefile makes it: its
  generator package is the path its `$(OPENAPI_GEN):` rule passes to
  `hack/make-rules/build.sh` (`cmd/libs/go2idl/openapi-gen` in June 2017,
  `./vendor/k8s.io/kube-gen/cmd/openapi-gen` in August, then
  `./vendor/k8s.io/code-generator/cmd/openapi-gen`), its input the packages of
  `ALL_GO_DIRS` (the helper script the Makefile names) carrying the Makefile's tag
  (`+k8s:openapi-gen=`), its output `$(OPENAPI_OUTPUT_PKG)/$(OPENAPI_BASENAME).go`.
* **staging links.** `hack/godep-save.sh` links each `staging/src/k8s.io/<repo>` into
  `vendor/k8s.io/<repo>`; a commit inside a PR may add the repository before its link.
* **import comments naming another path.** Go enforces `package x // import "path"` in
  GOPATH mode (`code in directory ... expects import ...`); staging packages whose
  comment names a path that is not where the tree keeps them (1444d25's
  `k8s.io/apiextension-server/...`) get the comment dropped.

A tree with go.mod builds in module mode and needs none of this.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from bisector.backends.procs.build import IMPORT_PATH, BuildPlace
from bisector.backends.steps import Step, step

MAKEFILE = "build/root/Makefile.generated_files"
MAIN_MAKEFILE = "build/root/Makefile"
GODEP_SAVE = "hack/godep-save.sh"
STAGING = "staging/src/k8s.io"
VENDORED = "vendor/k8s.io"
_CONTINUATION = re.compile(r"\\\n")
_IMPORT_COMMENT = re.compile(r'^(package [A-Za-z0-9_]+)\s*//\s*import\s+"([^"]+)"')


@dataclass(frozen=True)
class TreeStep:
    """One step of the tree's own build, and what in the tree says it is needed."""

    name: str
    why: str
    step: Step

    def fingerprint(self) -> str:
        return "\0".join([self.name, *self.step.cmd])


@dataclass(frozen=True)
class Generated:
    """One generated file the tree's Makefile makes and does not commit."""

    name: str  # the Makefile's set: "openapi"
    generator: str  # the generator's package, relative to the tree: vendor/k8s.io/.../openapi-gen
    output_pkg: str  # pkg/generated/openapi
    basename: str  # zz_generated.openapi
    tag: str  # +k8s:openapi-gen=
    go_dirs: str  # the helper listing ALL_GO_DIRS: hack/make-rules/helpers/cache_go_dirs.sh

    @property
    def output(self) -> str:
        return f"{self.output_pkg}/{self.basename}.go"


def _joined(text: str) -> str:
    """Make's logical lines: a backslash-newline continues the line."""
    return _CONTINUATION.sub(" ", text)


def _variable(text: str, name: str) -> str | None:
    found = re.search(rf"^{name}\s*:?=\s*(.*?)\s*$", text, re.MULTILINE)
    return found.group(1) if found else None


def _targets(text: str, rule: str) -> list[str]:
    found = re.search(rf"^{rule}:(.*)$", text, re.MULTILINE)
    return found.group(1).split() if found else []


def uncommitted_sets(makefile: str) -> list[str]:
    """The sets `generated_files` makes that `verify_generated_files` does not check:
    generated at build time, never committed (`openapi` in 2017)."""
    text = _joined(makefile)
    made = [t.removeprefix("gen_") for t in _targets(text, "generated_files")]
    verified = {t.removeprefix("verify_gen_") for t in _targets(text, "verify_generated_files")}
    return [name for name in made if name not in verified]


def generator_package(makefile: str, upper: str) -> str | None:
    """The package the `$(<UPPER>_GEN):` rule builds with hack/make-rules/build.sh."""
    lines = makefile.splitlines()
    for i, line in enumerate(lines):
        if line.strip() != f"$({upper}_GEN):":
            continue
        for recipe in lines[i + 1 :]:
            if not recipe.startswith("\t"):
                break
            found = re.search(r"hack/make-rules/build\.sh\s+(\S+)", recipe)
            if found:
                return found.group(1).removeprefix("./")
    return None


def read_generated(tree: Path) -> list[Generated]:
    """What the tree's Makefile generates into one package and does not commit; [] for a
    tree without that Makefile (module-mode trees, or older than it)."""
    try:
        makefile = (tree / MAKEFILE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    text = _joined(makefile)
    prefix = _variable(text, "GENERATED_FILE_PREFIX")
    if prefix is None:
        try:
            main = (tree / MAIN_MAKEFILE).read_text(encoding="utf-8", errors="replace")
        except OSError:
            main = ""
        prefix = _variable(_joined(main), "GENERATED_FILE_PREFIX") or "zz_generated."
    go_dirs = re.search(r"^ALL_GO_DIRS\s*:=\s*\$\(shell\s+(\S+)", text, re.MULTILINE)
    found = []
    for name in uncommitted_sets(makefile):
        upper = name.upper()
        generator = generator_package(makefile, upper)
        output_pkg = _variable(text, f"{upper}_OUTPUT_PKG")
        basename = _variable(text, f"{upper}_BASENAME")
        tag = re.search(rf"^{upper}_DIRS\s*:=.*?'(\+k8s:[A-Za-z0-9-]+=)'", text, re.MULTILINE)
        if not (generator and output_pkg and basename and tag and go_dirs):
            continue  # per-package output, or a shape this reader does not know: not made
        basename = basename.replace("$(GENERATED_FILE_PREFIX)", prefix)
        found.append(Generated(name, generator, output_pkg, basename, tag.group(1), go_dirs[1]))
    return found


def generate_command(gen: Generated) -> str:
    """bash, run at the GOPATH link: the generator built from the tree, run over the
    packages of ALL_GO_DIRS that carry its tag (as the Makefile's rule does)."""
    tool = f'"$BISECTOR_TOOLS/{gen.name}-gen"'
    listing = f'"$BISECTOR_TOOLS/{gen.name}-go-dirs.txt"'
    return "\n".join(
        [
            f"rm -f {listing}",
            f"dirs=$({gen.go_dirs} {listing})",
            "pkgs=$( { find $dirs -maxdepth 1 -type f -name '*.go' "
            f"-exec grep -l -- '{gen.tag}' {{}} + || true; }} "
            f"| xargs -n1 dirname | LC_ALL=C sort -u | sed 's|^|{IMPORT_PATH}/|' | paste -sd, -)",
            'test -n "$pkgs"',
            f'"$GO" build -o {tool} ./{gen.generator}',
            f'{tool} --logtostderr -i "$pkgs" -p {IMPORT_PATH}/{gen.output_pkg} -O {gen.basename}',
        ]
    )


def missing_staging_links(tree: Path) -> list[str]:
    """Staging repositories without their vendor/k8s.io link, when the tree links them
    (hack/godep-save.sh does)."""
    staging, vendored = tree / STAGING, tree / VENDORED
    try:
        says = "staging/src/k8s.io" in (tree / GODEP_SAVE).read_text(errors="replace")
    except OSError:
        return []
    if not says or not staging.is_dir() or not vendored.is_dir():
        return []
    return sorted(
        d.name
        for d in staging.iterdir()
        if d.is_dir() and not (vendored / d.name).is_symlink() and not (vendored / d.name).exists()
    )


def foreign_import_comments(tree: Path) -> list[str]:
    """Staging files whose `// import "..."` comment names another path than the one the
    tree keeps them at (k8s.io/<path under staging/src/k8s.io>), relative to the tree."""
    staging = tree / STAGING
    if not staging.is_dir():
        return []
    found = []
    for path in sorted(staging.rglob("*.go")):
        match = _package_clause(path)
        if match is None:
            continue
        expected = "k8s.io/" + path.parent.relative_to(staging).as_posix()
        if match.group(2) != expected:
            found.append(path.relative_to(tree).as_posix())
    return found


def _package_clause(path: Path) -> re.Match[str] | None:
    """The file's package clause with an import comment, read up to that clause only."""
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("package "):
                    return _IMPORT_COMMENT.match(line)
    except OSError:
        return None
    return None


def tree_steps(place: BuildPlace, timeout: float) -> list[TreeStep]:
    """The steps a GOPATH-mode tree's build needs before `go build`, read from it now
    (the worktree is checked out); [] for a module-mode tree."""
    if place.src == place.tree:  # module mode: go.mod says everything
        return []
    tree = place.tree
    found = []
    links = missing_staging_links(tree)
    if links:
        found.append(
            TreeStep(
                "staging-links",
                f"{GODEP_SAVE} links every {STAGING}/<repo> into {VENDORED}/; this tree "
                f"lacks {', '.join(links)}",
                step(
                    "bash", "-euo", "pipefail", "-c",
                    "; ".join(f"ln -s ../../{STAGING}/{n} {VENDORED}/{n}" for n in links),
                    cwd=tree, timeout=timeout,
                ),
            )
        )  # fmt: skip
    comments = foreign_import_comments(tree)
    if comments:
        found.append(
            TreeStep(
                "foreign-import-comments",
                "Go enforces import comments in GOPATH mode; these name a path the tree "
                f"does not keep them at: {', '.join(comments)}",
                step(
                    "sed", "-i", "-E",
                    r"s|^(package [A-Za-z0-9_]+)[[:space:]]*//[[:space:]]*import .*$|\1|",
                    *comments, cwd=tree, timeout=timeout,
                ),
            )
        )  # fmt: skip
    for gen in read_generated(tree):
        if (tree / gen.output).exists():
            continue  # committed in this tree
        found.append(
            TreeStep(
                f"generate-{gen.name}",
                f"{MAKEFILE} generates {gen.output} and does not commit it "
                f"(not in verify_generated_files): ./{gen.generator} over the packages "
                f"tagged {gen.tag}",
                step(
                    "bash", "-euo", "pipefail", "-c", generate_command(gen),
                    cwd=place.src, env=place.env, timeout=timeout,
                ),
            )
        )  # fmt: skip
    return found
