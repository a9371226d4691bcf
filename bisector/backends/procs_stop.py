"""The teardown step under the module name older run directories recorded (`python -m
bisector.backends.procs_stop --tag T --remove DIR`): `bisector cleanup` replays that
command after a crash, so it must keep working; it is `bisector.backends.procs.stop`."""

from __future__ import annotations

import sys

from bisector.backends.procs.stop import main

if __name__ == "__main__":
    sys.exit(main())
