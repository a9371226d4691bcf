"""The twin's gcloud flag table, written from an installed Google Cloud SDK's own command tree.

The table (`bisector/data/twin/gcloud-528-flags.json`) says, for every gcloud
command the 2017 kubemark scripts, the gce backend and `bisector doctor` run,
which flags that command accepts in Cloud SDK 528.0.0 and what each takes:
`bool`, a value (`value`; `dynamic` is a value gcloud completes from the
project), or one of a list of choices. It is data about the tool's interface,
read from the SDK's static completion tree
(`<sdk>/data/cli/gcloud_completions.py`, `STATIC_COMPLETION_CLI_TREE`: the same
tree `gcloud <command> --help` documents, without hidden flags); no SDK code is
copied. Regenerate it for another release with

    python -m bisector.twin flag-table --sdk /usr/lib/google-cloud-sdk > FILE

and `tests/twin/test_sdk_table.py` checks that the committed table is what the
installed SDK says (skipped where no SDK 528 is installed).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

RELEASE = "528.0.0"
TABLE = Path(__file__).resolve().parents[1] / "data" / "twin" / f"gcloud-{RELEASE[:3]}-flags.json"

# Every command path the scripts of kubernetes 1444d25..7043372 (cluster/gce/util.sh,
# cluster/common.sh, test/kubemark/*), the gce backend and its doctor checks call; each in
# the release tracks (ga, beta, alpha) where the SDK has it.
COMMANDS = (
    "auth list",
    "config get",
    "config list",
    "docker",
    "version",
    "artifacts repositories create",
    "artifacts repositories describe",
    "artifacts settings describe",
    "compute addresses create",
    "compute addresses delete",
    "compute addresses describe",
    "compute addresses list",
    "compute copy-files",
    "compute disks create",
    "compute disks delete",
    "compute disks describe",
    "compute disks list",
    "compute firewall-rules create",
    "compute firewall-rules delete",
    "compute firewall-rules describe",
    "compute firewall-rules list",
    "compute forwarding-rules create",
    "compute forwarding-rules delete",
    "compute forwarding-rules describe",
    "compute images describe",
    "compute instance-groups managed create",
    "compute instance-groups managed delete",
    "compute instance-groups managed describe",
    "compute instance-groups managed list",
    "compute instance-groups managed list-errors",
    "compute instance-groups managed list-instances",
    "compute instance-groups managed wait-until-stable",
    "compute instance-templates create",
    "compute instance-templates delete",
    "compute instance-templates describe",
    "compute instance-templates list",
    "compute instances add-access-config",
    "compute instances add-metadata",
    "compute instances attach-disk",
    "compute instances create",
    "compute instances delete",
    "compute instances delete-access-config",
    "compute instances describe",
    "compute instances get-serial-port-output",
    "compute instances list",
    "compute networks create",
    "compute networks delete",
    "compute networks describe",
    "compute networks list",
    "compute networks subnets create",
    "compute networks subnets delete",
    "compute networks subnets describe",
    "compute project-info describe",
    "compute regions describe",
    "compute routes delete",
    "compute routes list",
    "compute scp",
    "compute ssh",
    "compute target-pools add-instances",
    "compute target-pools create",
    "compute target-pools delete",
    "compute target-pools describe",
    "compute target-pools remove-instances",
    "compute zones list",
    "resource-manager org-policies describe",
    "storage buckets describe",
)
TRACKS = ("", "beta", "alpha")

Kind = str | list[str]  # "bool", "value", "dynamic", or the choices


def read_tree(sdk: Path) -> dict[str, Any]:
    """STATIC_COMPLETION_CLI_TREE of an SDK, read as data (the file is one dict literal)."""
    source = (sdk / "data" / "cli" / "gcloud_completions.py").read_text(encoding="utf-8")
    module = ast.parse(source)
    for node in module.body:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "STATIC_COMPLETION_CLI_TREE"
        ):
            tree = ast.literal_eval(node.value)
            assert isinstance(tree, dict)
            return tree
    raise ValueError(f"{sdk}: no STATIC_COMPLETION_CLI_TREE in data/cli/gcloud_completions.py")


def sdk_release(sdk: Path) -> str:
    """The SDK's release, from its VERSION file."""
    return (sdk / "VERSION").read_text(encoding="utf-8").strip()


def build(tree: dict[str, Any], release: str) -> dict[str, Any]:
    """The twin's table: global flags, group flags and each command's flags."""
    groups: dict[str, dict[str, Kind]] = {}
    commands: dict[str, dict[str, Kind]] = {}
    for track in TRACKS:
        for path in COMMANDS:
            words = [*([track] if track else []), *path.split()]
            node: dict[str, Any] | None = tree
            for i, word in enumerate(words):
                assert node is not None
                group_flags = node.get("flags", {})
                if i and group_flags:
                    groups[" ".join(words[:i])] = dict(sorted(group_flags.items()))
                node = node.get("commands", {}).get(word)
                if node is None:
                    break
            if node is not None:
                commands[" ".join(words)] = dict(sorted(node.get("flags", {}).items()))
    return {
        "release": release,
        "source": "<sdk>/data/cli/gcloud_completions.py STATIC_COMPLETION_CLI_TREE",
        "global": dict(sorted(tree.get("flags", {}).items())),
        "groups": dict(sorted(groups.items())),
        "commands": dict(sorted(commands.items())),
    }


def dumps(table: dict[str, Any]) -> str:
    return json.dumps(table, indent=1, sort_keys=False) + "\n"


def load() -> dict[str, Any]:
    data = json.loads(TABLE.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data
