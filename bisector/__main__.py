from __future__ import annotations

from bisector.entry import main

main()
