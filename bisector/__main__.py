from __future__ import annotations

from bisector.cli import main

main()
