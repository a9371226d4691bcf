"""Links to the commit and the PR appear only when the remote is a GitHub repository URL."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector.report.links import commit_url, github_base, pr_url
from bisector.report.render import render_both
from tests.helpers.sample_report import BRANCH, sample_report

GITHUB = "https://github.com/kubernetes/kubernetes"


@pytest.mark.parametrize(
    "remote",
    [
        None,
        "",
        "https://gitlab.com/a/b",
        "git@github.com:a/b.git",
        "https://github.com/a",
        "file:///x",
    ],
)
def test_no_links_without_a_github_url(remote: str | None) -> None:
    assert github_base(remote) is None
    assert commit_url(remote, "abc") is None and pr_url(remote, 7) is None


def test_github_urls_for_commit_and_pull_request() -> None:
    assert commit_url(GITHUB, "abc123") == f"{GITHUB}/commit/abc123"
    assert pr_url(GITHUB + ".git", 46588) == f"{GITHUB}/pull/46588"
    assert pr_url(GITHUB, None) is None


def test_reports_link_the_culprit_and_its_pr_on_github(tmp_path: Path) -> None:
    md, html = render_both(sample_report(tmp_path, remote=GITHUB))
    culprit = BRANCH[1]
    for text in (md, html):
        assert f"{GITHUB}/commit/{culprit}" in text
        assert f"{GITHUB}/pull/46588" in text


def test_reports_have_no_links_for_another_host(tmp_path: Path) -> None:
    md, html = render_both(sample_report(tmp_path, remote="https://gitlab.example/k/k"))
    for text in (md, html):
        assert "/commit/" not in text and "/pull/" not in text
        assert "gitlab.example" not in text
