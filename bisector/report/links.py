"""Links to a commit and a pull request, only when the repository's remote is on GitHub."""

from __future__ import annotations

import re

# What bisection.start.github_remote writes: https://github.com/OWNER/REPO (no .git, no slash).
_GITHUB = re.compile(r"^https://github\.com/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(?:\.git)?/?$")


def github_base(remote: str | None) -> str | None:
    """https://github.com/OWNER/REPO, or None when `remote` is not a GitHub repository URL."""
    if not remote:
        return None
    match = _GITHUB.match(remote.strip())
    if match is None:
        return None
    return f"https://github.com/{match.group(1)}/{match.group(2)}"


def commit_url(remote: str | None, commit: str) -> str | None:
    base = github_base(remote)
    return f"{base}/commit/{commit}" if base else None


def pr_url(remote: str | None, pr: int | None) -> str | None:
    base = github_base(remote)
    return f"{base}/pull/{pr}" if base and pr else None
