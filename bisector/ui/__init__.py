"""What bisector prints: the progress lines of a run (plain, or live on a terminal), the
one rich console, and standard streams whose failure never decides an exit code.

Beside the entry: commands and the orchestration print through it; the layers below
only speak the progress vocabulary (bisector.search.progress)."""
