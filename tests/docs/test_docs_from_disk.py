"""The docs site browses from disk (issue 29): `open .site/index.html` followed a link to
`demo/` and showed a file listing. Every local link of every built page names a file."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
HREF = re.compile(r'(?:href|src)="([^"]*)"')


def _build(tmp_path: Path) -> Path:
    mkdocs = Path(sys.executable).parent / "mkdocs"
    if not mkdocs.exists():
        pytest.skip("mkdocs is not installed (pip install -e '.[dev]')")
    site = tmp_path / "site"
    shutil.copytree(ROOT / "docs", site / "docs")
    shutil.copy(ROOT / "mkdocs.yml", site / "mkdocs.yml")
    (site / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "mkdocs_nav.py", site / "scripts" / "mkdocs_nav.py")
    env = {"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"}
    subprocess.run([str(mkdocs), "build", "--strict"], cwd=site, check=True, env=env,
                   capture_output=True)  # fmt: skip
    return site / ".site"


def test_every_local_link_of_the_built_site_lands_on_a_file(tmp_path: Path) -> None:
    out = _build(tmp_path)
    # 404.html is the web server's error page (absolute links): no link leads to it.
    pages = sorted(p for p in out.rglob("*.html") if p.name != "404.html")
    assert (out / "index.html") in pages and (out / "demo.html").is_file()
    checked = 0
    for page in pages:
        for link in HREF.findall(page.read_text(encoding="utf-8")):
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or not parts.path:
                continue  # another site, or an anchor on this page
            target = (page.parent / unquote(parts.path)).resolve()
            # A browser given file:// shows a directory as a listing, not its index.html.
            assert target.is_file(), f"{page.relative_to(out)} links {link}: not a file"
            checked += 1
    assert checked > len(pages)  # the navigation alone links every page from each
