"""Help conventions of the command line, in one place.

`Command` writes usage lines and argument lists the way man pages do (`LOG...`,
`[-- PATH...]`, `COMMIT VERDICT`), where typer would write `{logs}...`, `logs...
<list[str]>` and `[[-- PATH...]]...`; `-h` is `--help` on every command.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperCommand

# -h works as --help on every command (inherited from the app's context settings).
CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}


def _argument_usage(param: Any) -> str:
    """`LOG...` (required, many), `[-- PATH...]` (optional, many), `COMMIT` (one)."""
    name = str(param.metavar or param.name or "ARG").upper()
    if param.nargs != 1:
        name += "..."
    return name if param.required else f"[{name}]"


class Command(TyperCommand):
    """A typer command whose help shows arguments by their metavar, without Python types."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        pieces += [
            _argument_usage(p) for p in self.get_params(ctx) if p.param_type_name == "argument"
        ]
        return pieces

    def format_options(self, ctx: Any, formatter: Any) -> None:
        arguments = [
            (_argument_usage(p), getattr(p, "help", None) or "")
            for p in self.get_params(ctx)
            if p.param_type_name == "argument"
        ]
        options = [
            record
            for p in self.get_params(ctx)
            if p.param_type_name == "option" and (record := p.get_help_record(ctx)) is not None
        ]
        if arguments:
            with formatter.section("Arguments"):
                formatter.write_dl(arguments)
        if options:
            with formatter.section("Options"):
                formatter.write_dl(options)
