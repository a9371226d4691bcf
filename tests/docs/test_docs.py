"""The docs (issue 22, point 9): README's links land on pages that exist, the site's
navigation is made from the pages present, and a broken link fails the strict build."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _nav() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mkdocs_nav", ROOT / "scripts" / "mkdocs_nav.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_links_land_on_files_that_exist() -> None:
    text = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if "://" not in link]
    assert local, "README links to the docs"
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, missing


def test_readme_is_short_and_keeps_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text()
    # What it is, two commands, a tour, your own tree and links: the reference (and every
    # measured figure) is docs/.
    assert len(text.splitlines()) <= 100
    assert "make demo" in text and "make test" in text


def _sections(text: str) -> list[str]:
    return [line[3:] for line in text.splitlines() if line.startswith("## ")]


def test_readme_says_what_it_is_then_the_two_commands_then_your_own_tree() -> None:
    """A new user read make targets and set-up prose before what the tool does."""
    text = (ROOT / "README.md").read_text()
    intro = text[: text.index("\n## ")]
    assert "finds the commit that made a Kubernetes cluster slower" in intro
    assert "make" not in intro and "```" not in intro  # what it is, before any command
    sections = _sections(text)
    assert sections[0] == "Try it", sections
    first = re.search(r"```sh\n(.*?)```", text, re.S)
    assert first is not None and first.start() > text.index("## Try it")
    commands = [line.split("#")[0].strip() for line in first[1].splitlines()]
    assert commands == ["make demo", "make test"]  # the two commands, nothing else
    tour = next(i for i, s in enumerate(sections) if s.startswith("A tour"))
    own = next(i for i, s in enumerate(sections) if "your own" in s)
    assert 0 < tour < own < sections.index("Reference"), sections


def test_readme_leaves_figures_to_the_docs_and_links_in_lists() -> None:
    """Dated measurements and a paragraph of 20-odd links were the README's; the figures
    live in docs/ (procs.md, simulator.md, testing.md), the links one topic a line."""
    text = (ROOT / "README.md").read_text()
    months = "January|February|March|April|May|June|July|August|September|October|November"
    dated = re.findall(rf"\b\d{{1,2}} (?:{months}|December)\b|\b20\d\d-\d\d-\d\d\b", text)
    assert not dated, dated
    assert not re.search(r"\b\d+m\d\ds\b", text), "a measured time: it belongs in docs/"
    for block in re.split(r"\n\s*\n|\n- ", text):
        assert len(re.findall(r"\]\(", block)) <= 5, block


def test_readme_says_who_writes_the_log_git_bisect_run_scores() -> None:
    """`git bisect run bisector score kube-apiserver.log` did not say where that log comes
    from at each step: the user's own script writes it before bisector scores it."""
    text = (ROOT / "README.md").read_text()
    line = next(ln for ln in text.splitlines() if "git bisect run" in ln)
    assert re.search(r"git bisect run sh -c '\S.* && bisector score kube-apiserver\.log", line)
    item = text[text.rindex("\n- ", 0, text.index(line)) :][:800]
    assert "Your script" in item and "kube-apiserver.log" in item


def test_every_page_is_in_the_navigation_known_ones_in_order(tmp_path: Path) -> None:
    for page in ("index.md", "bisecting.md", "zz-new-topic.md", "sub/deeper.md"):
        (tmp_path / page).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / page).write_text(f"# {page}\n")
    nav = _nav().navigation(tmp_path)
    # Known pages in reading order (missing ones such as demo.md left out, no error),
    # then pages nobody listed, by name.
    assert nav == ["index.md", "bisecting.md", "sub/deeper.md", "zz-new-topic.md"]
    assert set(_nav().navigation(ROOT / "docs")) == {
        p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")
    }


@pytest.mark.slow
def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    mkdocs = Path(sys.executable).parent / "mkdocs"
    if not mkdocs.exists():
        pytest.skip("mkdocs is not installed (pip install -e '.[dev]')")
    site = tmp_path / "site"
    shutil.copytree(ROOT / "docs", site / "docs")
    shutil.copy(ROOT / "mkdocs.yml", site / "mkdocs.yml")
    (site / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "mkdocs_nav.py", site / "scripts" / "mkdocs_nav.py")
    env = {"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"}

    def build() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(mkdocs), "build", "--strict"],  # --quiet loses broken anchors
            cwd=site, capture_output=True, text=True, check=False, env=env,
        )  # fmt: skip

    assert build().returncode == 0
    (site / "docs" / "extra.md").write_text("# Extra\n\nSee [nowhere](nowhere.md).\n")
    broken = build()
    assert broken.returncode != 0 and "nowhere.md" in broken.stdout + broken.stderr
    (site / "docs" / "extra.md").write_text("# Extra\n\nSee [the demo](demo.md#no-such-part).\n")
    assert build().returncode != 0  # a broken anchor too
