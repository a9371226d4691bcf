#!/usr/bin/env python3
"""Render a report.html to a full-page PNG with Debian's headless chromium, to look at it.

    scripts/screenshot_report.py RUN_DIR/report.html OUT.png [--width 1280]

The picture is the whole page, however long: chromium first lays the page out at
`--width` and says how tall it is (a copy of the page with one line of script that
writes its height into the DOM, read back with --dump-dom), then draws a window that
tall. `--height N` fixes the height instead (the top N pixels).

Runs with any python3 >= 3.11, the project's venv or not: it needs only the standard
library and bisector/proc.py beside it in this checkout. Needs `chromium` on PATH
(Debian: apt-get install -y chromium). Exit codes: 0 written, 2 bad input (no such
report), 3 chromium missing, 4 chromium failed or wrote no picture. The browser gets a
new empty profile and no network-facing background services; the page itself is
self-contained (inline CSS and SVG), so nothing is fetched.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from pathlib import Path

# The checkout's own bisector package (stdlib only for proc), so that
# `scripts/screenshot_report.py` works as the README writes it, without the venv on PATH.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bisector import proc

CHROMIUM_NAMES = ("chromium", "chromium-browser")
TIMEOUT_S = 120.0
MAX_HEIGHT = 32_000  # chromium's own limit on a window is about 16k-32k pixels
_MEASURE = (
    "<script>document.body.setAttribute('data-page-height',"
    "String(Math.ceil(document.documentElement.scrollHeight)));</script>"
)
_HEIGHT = re.compile(r'data-page-height="(\d+)"')


def find_chromium() -> str | None:
    return next((path for name in CHROMIUM_NAMES if (path := shutil.which(name))), None)


def browser_flags(profile: Path) -> list[str]:
    return [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
    ]


def command(
    chromium: str, html: Path, png: Path, profile: Path, size: tuple[int, int]
) -> list[str]:
    return [
        chromium,
        *browser_flags(profile),
        f"--screenshot={png}",
        f"--window-size={size[0]},{size[1]}",
        html.resolve().as_uri(),
    ]


def _chromium(argv: list[str]) -> proc.CmdResult:
    try:  # proc.run kills chromium's whole process group on a timeout
        return proc.run(argv, timeout=TIMEOUT_S, check=False)
    except proc.CommandError as exc:
        raise RuntimeError(str(exc)) from None


def page_height(chromium: str, html: Path, width: int, scratch: Path) -> int:
    """How tall the page is when laid out `width` pixels wide."""
    copy = scratch / "measure.html"
    text = html.read_text(encoding="utf-8", errors="replace")
    copy.write_text(
        text.replace("</body>", _MEASURE + "</body>") if "</body>" in text else text + _MEASURE,
        encoding="utf-8",
    )
    profile = scratch / "profile-measure"
    argv = [
        chromium,
        *browser_flags(profile),
        f"--window-size={width},800",
        "--dump-dom",
        copy.as_uri(),
    ]
    result = _chromium(argv)
    found = _HEIGHT.search(result.stdout or "")
    if result.code != 0 or found is None:
        tail = (result.stderr or result.stdout).strip().splitlines()[-5:]
        raise RuntimeError(
            f"chromium exited {result.code} without the page's height: " + " | ".join(tail)
        )
    return min(max(int(found.group(1)), 1), MAX_HEIGHT)


def screenshot(html: Path, png: Path, width: int = 1280, height: int | None = None) -> Path:
    """Write `png` (the whole page unless `height`); FileNotFoundError without chromium,
    RuntimeError when it fails."""
    chromium = find_chromium()
    if chromium is None:
        raise FileNotFoundError("chromium is not installed (Debian: apt-get install -y chromium)")
    png.parent.mkdir(parents=True, exist_ok=True)
    png.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="bisector-chromium-") as scratch:
        tall = height or page_height(chromium, html, width, Path(scratch))
        profile = Path(scratch) / "profile"
        result = _chromium(command(chromium, html, png, profile, (width, tall)))
    if result.code != 0 or not png.is_file() or png.stat().st_size == 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-5:]
        raise RuntimeError(f"chromium exited {result.code} without a picture: " + " | ".join(tail))
    return png


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("html", type=Path, help="the report.html to render")
    parser.add_argument("png", type=Path, help="where to write the PNG")
    parser.add_argument("--width", type=int, default=1280, help="page width in pixels")
    parser.add_argument(
        "--height", type=int, default=None, help="only the top N pixels (default: whole page)"
    )
    args = parser.parse_args(argv)
    if not args.html.is_file():
        print(f"no report at {args.html}; pass a run's report.html", file=sys.stderr)
        return 2
    try:
        screenshot(args.html, args.png, args.width, args.height)
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        return 3
    except RuntimeError as exc:
        print(f"screenshot failed: {exc}", file=sys.stderr)
        return 4
    print(f"wrote {args.png} ({args.png.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
