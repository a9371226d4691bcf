"""One module per CLI command; `bisector.cli` only wires them to typer."""
