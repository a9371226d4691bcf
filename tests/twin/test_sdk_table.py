"""The twin's gcloud flag table is what the installed Cloud SDK 528 says (twin.sdk_table)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector.twin import sdk_table
from bisector.twin.gcloud_args import parse

SDK = Path("/usr/lib/google-cloud-sdk")


@pytest.mark.slow
@pytest.mark.skipif(
    not (SDK / "VERSION").is_file() or (SDK / "VERSION").read_text().strip() != "528.0.0",
    reason="needs the Google Cloud SDK 528 installed at /usr/lib/google-cloud-sdk",
)
def test_the_committed_table_is_the_sdks_own() -> None:
    built = sdk_table.build(sdk_table.read_tree(SDK), sdk_table.sdk_release(SDK))
    assert sdk_table.dumps(built) == sdk_table.TABLE.read_text(encoding="utf-8")


def test_the_table_names_its_release_and_has_every_command_the_twin_parses() -> None:
    table = sdk_table.load()
    assert table["release"] == sdk_table.RELEASE == "528.0.0"
    for path in sdk_table.COMMANDS:
        assert path in table["commands"], path
    # what the 2017 scripts lean on: --mode is gone from networks create, --subnet-mode is there
    create = table["commands"]["compute networks create"]
    assert "--mode" not in create and create["--subnet-mode"] == ["auto", "custom", "legacy"]
    assert table["commands"]["compute instance-groups managed wait-until-stable"]["--timeout"]
    assert parse(["beta", "compute", "networks", "subnets", "describe", "s", "--region", "r"])


def test_the_hidden_config_get_value_is_config_get() -> None:
    assert parse(["config", "get-value", "project"]).command == ("config", "get")
