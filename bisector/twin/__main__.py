"""`python -m bisector.twin install DIR ...`, `leftovers DIR`, the shims' entry."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

from bisector.twin import UNMODELLED_EXIT, TwinConfig, install, leftovers
from bisector.twin.state import Home, Refused, Unmodelled


def _tools() -> dict[str, Callable[[Home, list[str]], int]]:
    from bisector.twin import gcloud, kubectl, tools

    return {
        "gcloud": gcloud.main,
        "gsutil": tools.gsutil,
        "docker": tools.docker,
        "curl": tools.curl,
        "make": tools.make,
        "kubectl": kubectl.main,
        "ssh": tools.unmodelled("ssh"),
        "scp": tools.unmodelled("scp"),
        "easyrsa": tools.easyrsa,
        "cfssl": tools.cfssl,
        "cfssljson": tools.cfssljson,
    }


def shim(home: Home, name: str, argv: list[str]) -> int:
    tool = _tools().get(name)
    if tool is None:
        print(f"bisector twin: unmodelled call: no tool {name}", file=sys.stderr)
        return UNMODELLED_EXIT
    try:
        code = tool(home, argv)
    except Unmodelled as exc:
        line = shlex.join([name, *argv])
        print(f"bisector twin: unmodelled call: {line}: {exc}", file=sys.stderr)
        home.record(name, argv, UNMODELLED_EXIT, f"unmodelled: {exc}")
        return UNMODELLED_EXIT
    except Refused as exc:
        print(str(exc), file=sys.stderr)
        home.record(name, argv, exc.code, str(exc).splitlines()[-1] if str(exc) else "")
        return exc.code
    home.record(name, argv, code)
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bisector.twin", description=__doc__)
    parser.add_argument("--home", type=Path, help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", required=True)
    inst = sub.add_parser("install", help="write the shims into DIR/bin")
    inst.add_argument("dir", type=Path)
    inst.add_argument("--project", default="twin-project")
    inst.add_argument(
        "--bad-if-contains",
        action="append",
        default=[],
        metavar="COMMIT",
        help="trees containing COMMIT get the bad sim profile (repeatable)",
    )
    inst.add_argument("--log-duration", default="20m")
    inst.add_argument("--noise", type=float, default=0.0)
    left = sub.add_parser("leftovers", help="print what the twin's project still holds")
    left.add_argument("dir", type=Path)
    table = sub.add_parser("flag-table", help="print gcloud's flag table from an installed SDK")
    table.add_argument("--sdk", type=Path, default=Path("/usr/lib/google-cloud-sdk"))
    sh = sub.add_parser("shim")
    sh.add_argument("tool")
    sh.add_argument("args", nargs=argparse.REMAINDER)
    ns = parser.parse_args(argv)
    if ns.command == "install":
        home = install(
            ns.dir,
            TwinConfig(
                project=ns.project,
                bad_if_contains=tuple(ns.bad_if_contains),
                log_duration=ns.log_duration,
                noise=ns.noise,
            ),
        )
        print(f"export PATH={home.bin}:$PATH")
        return 0
    if ns.command == "leftovers":
        found = leftovers(ns.dir)
        print(json.dumps(found, indent=1) if found else "nothing left")
        return 1 if found else 0
    if ns.command == "flag-table":
        from bisector.twin import sdk_table

        built = sdk_table.build(sdk_table.read_tree(ns.sdk), sdk_table.sdk_release(ns.sdk))
        sys.stdout.write(sdk_table.dumps(built))
        return 0
    if ns.home is None:
        parser.error("shim needs --home")
    return shim(Home(ns.home), ns.tool, ns.args)


if __name__ == "__main__":
    sys.exit(main())
