#!/usr/bin/env python3
"""Render a report.html to PNG with Debian's headless chromium, to look at the page.

    scripts/screenshot_report.py RUN_DIR/report.html OUT.png [--width 1280] [--height 2400]

Needs `chromium` on PATH (Debian: apt-get install -y chromium). Exit codes: 0 written,
2 bad input (no such report), 3 chromium missing, 4 chromium failed or wrote no picture.
The browser gets a new empty profile and no network-facing background services; the page
itself is self-contained (inline CSS and SVG), so nothing is fetched.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from bisector import proc

CHROMIUM_NAMES = ("chromium", "chromium-browser")
TIMEOUT_S = 120.0


def find_chromium() -> str | None:
    return next((path for name in CHROMIUM_NAMES if (path := shutil.which(name))), None)


def command(
    chromium: str, html: Path, png: Path, profile: Path, size: tuple[int, int]
) -> list[str]:
    return [
        chromium,
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
        f"--screenshot={png}",
        f"--window-size={size[0]},{size[1]}",
        html.resolve().as_uri(),
    ]


def screenshot(html: Path, png: Path, width: int = 1280, height: int = 2400) -> Path:
    """Write `png`; raises FileNotFoundError without chromium, RuntimeError when it fails."""
    chromium = find_chromium()
    if chromium is None:
        raise FileNotFoundError("chromium is not installed (Debian: apt-get install -y chromium)")
    png.parent.mkdir(parents=True, exist_ok=True)
    png.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="bisector-chromium-") as profile:
        try:  # proc.run kills chromium's whole process group on a timeout
            result = proc.run(
                command(chromium, html, png, Path(profile), (width, height)),
                timeout=TIMEOUT_S,
                check=False,
            )
        except proc.CommandError as exc:
            raise RuntimeError(str(exc)) from None
    if result.code != 0 or not png.is_file() or png.stat().st_size == 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-5:]
        raise RuntimeError(f"chromium exited {result.code} without a picture: " + " | ".join(tail))
    return png


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("html", type=Path, help="the report.html to render")
    parser.add_argument("png", type=Path, help="where to write the PNG")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=2400)
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
