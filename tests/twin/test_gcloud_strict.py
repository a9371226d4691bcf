"""The twin refuses what gcloud 528 and the Compute Engine API refuse, as they say it.

Command-line refusals (exit 2) are compared with the REAL Google Cloud SDK 528 when it is
installed (its parsing runs before credentials and network: measured offline, and the
calls here run with an empty config, no account and a proxy on a closed port, so nothing
can leave the machine). The API's refusals (exit 1) cannot be produced offline; each
expected text below is written from where the API's answer is quoted (named beside it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from bisector.twin import TwinConfig, install
from bisector.twin.state import Home

P = ("--project", "twin-project")
Z = ("--zone", "us-central1-b")
SDK = Path("/usr/lib/google-cloud-sdk")


@pytest.fixture
def twin(tmp_path: Path) -> Home:
    return install(tmp_path / "twin", TwinConfig())


def run(home: Home, *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{home.bin}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(list(argv), cwd=cwd, env=env, capture_output=True, text=True,
                          check=False)  # fmt: skip


def real_gcloud_528() -> str | None:
    gcloud = shutil.which("gcloud")
    version = SDK / "VERSION"
    if gcloud is None or not version.is_file() or version.read_text().strip() != "528.0.0":
        return None
    return gcloud


def real(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """The real gcloud 528, offline: empty config, no account, any proxy a closed port."""
    gcloud = real_gcloud_528()
    assert gcloud is not None
    config = tmp_path / "gcloud-config"
    config.mkdir(exist_ok=True)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "CLOUDSDK_CONFIG": str(config),
        "CLOUDSDK_CORE_DISABLE_PROMPTS": "1",
        "CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK": "true",
        "CLOUDSDK_CORE_DISABLE_USAGE_REPORTING": "true",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "https_proxy": "http://127.0.0.1:9",
        "NO_GCE_CHECK": "True",
    }
    return subprocess.run([gcloud, *argv], env=env, capture_output=True, text=True,
                          check=False, timeout=120)  # fmt: skip


HINT = "\n\nTo search the help text of gcloud commands, run:\n  gcloud help -- SEARCH_TERMS"

# The command-line refusals: what gcloud 528 prints (measured), exit 2.
PARSE_CASES = [
    pytest.param(
        ("compute", "networks", "create", "kubemark-500", "--mode=auto", *P),
        "ERROR: (gcloud.compute.networks.create) unrecognized arguments: --mode=auto "
        "(did you mean '--subnet-mode'?) " + HINT,
        id="networks-create-mode-auto",
    ),
    pytest.param(
        ("compute", "instances", "create", "ok", "--bogus-flag", *Z, *P),
        "ERROR: (gcloud.compute.instances.create) unrecognized arguments: --bogus-flag " + HINT,
        id="bogus-flag",
    ),
    pytest.param(
        ("compute", "networks", "create", "n", "--subnet-mode=bogus", *P),
        "ERROR: (gcloud.compute.networks.create) argument --subnet-mode: Invalid choice: "
        "'bogus'.\n\nValid choices are [auto, custom, legacy].",
        id="invalid-choice",
    ),
    pytest.param(
        ("compute", "instances", "create", "x", "--metadata", "a=1", "--metadata", "b=2", *Z, *P),
        'ERROR: (gcloud.compute.instances.create) argument --metadata: "metadata" argument '
        "cannot be specified multiple times",
        id="metadata-twice",
    ),
    pytest.param(
        ("compute", "instance-groups", "managed", "wait-until-stable", "g", *Z, "--timout", "9"),
        "ERROR: (gcloud.compute.instance-groups.managed.wait-until-stable) unrecognized "
        "arguments:\n  --timout (did you mean '--timeout'?)\n  9\n  To search the help text "
        "of gcloud commands, run:\n  gcloud help -- SEARCH_TERMS",
        id="misspelt-timeout",
    ),
    pytest.param(
        ("compute", "--zones", "us-central1-b", "instances", "list", *P),
        "ERROR: (gcloud.compute) unrecognized arguments: --zones " + HINT,
        id="flag-before-command",
    ),
    pytest.param(
        ("compute", "ssh", "m", *Z, *P, "--command"),
        "ERROR: (gcloud.compute.ssh) argument --command: expected one argument",
        id="flag-without-value",
    ),
]


@pytest.mark.parametrize(("argv", "message"), PARSE_CASES)
def test_the_twin_refuses_a_command_line_as_gcloud_528_does(
    twin: Home, argv: tuple[str, ...], message: str
) -> None:
    done = run(twin, "gcloud", *argv)
    assert (done.returncode, done.stderr.rstrip("\n")) == (2, message)
    (call,) = twin.calls()
    assert call["code"] == 2
    assert twin.load().leftovers() == {}


@pytest.mark.slow
@pytest.mark.skipif(real_gcloud_528() is None, reason="needs the Google Cloud SDK 528 installed")
@pytest.mark.parametrize(("argv", "message"), PARSE_CASES)
def test_real_gcloud_528_says_the_same(tmp_path: Path, argv: tuple[str, ...], message: str) -> None:
    done = real(tmp_path, *argv)
    said = done.stderr.split("\nUsage:")[0].rstrip("\n")
    assert (done.returncode, said) == (2, message)


@pytest.mark.slow
@pytest.mark.skipif(real_gcloud_528() is None, reason="needs the Google Cloud SDK 528 installed")
def test_the_calls_the_twin_accepts_parse_in_real_gcloud_528(tmp_path: Path, twin: Home) -> None:
    """The backend's own calls and those of kube-up.sh the twin answers: real gcloud parses
    them (it stops at the missing account, exit 1, instead of exit 2)."""
    for argv in (
        ("compute", "networks", "create", "k", "--project", "p", "--subnet-mode=auto"),
        ("compute", "instance-groups", "managed", "wait-until-stable", "g", *Z, "--project", "p",
         "--timeout=900"),
        ("artifacts", "repositories", "create", "gcr.io", "--repository-format=docker",
         "--location", "us", "--project", "p"),
        ("compute", "regions", "describe", "us-central1", "--project", "p", "--format=json"),
        ("resource-manager", "org-policies", "describe", "storage.uniformBucketLevelAccess",
         "--project", "p", "--effective", "--format=json"),
        ("compute", "instance-templates", "list", "-r", "k-minion-template", "--project", "p"),
        ("compute", "--project", "p", "ssh", "m", "--zone", "z", "--command", "ls"),
    ):  # fmt: skip
        done = real(tmp_path, *argv)
        assert done.returncode == 1 and "active account" in done.stderr, (argv, done.stderr)


# -- the API's refusals: exit 1, "Could not fetch resource:" and the API's message ----------


def test_a_79_character_upper_case_name(twin: Home) -> None:
    """hashicorp/terraform#20884, skypilot-org/skypilot#139: the API quotes its regex."""
    name = "A" * 79
    done = run(twin, "gcloud", "compute", "instances", "create", name, *Z, *P)
    assert done.returncode == 1
    assert done.stderr.rstrip() == (
        "ERROR: (gcloud.compute.instances.create) Could not fetch resource:\n"
        f" - Invalid value for field 'resource.name': '{name}'. Must be a match of regex "
        "'(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'"
    )
    assert twin.load().leftovers() == {}


def test_a_zone_that_does_not_exist(twin: Home) -> None:
    """zjuul/snowplow-gcloud-installer#1, inspec/inspec-gcp#301."""
    done = run(twin, "gcloud", "compute", "instances", "create", "m", "--zone",
               "mars-central1-z", *P)  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.rstrip() == (
        "ERROR: (gcloud.compute.instances.create) Could not fetch resource:\n"
        " - Invalid value for field 'zone': 'mars-central1-z'. Unknown zone."
    )


def test_a_machine_type_that_does_not_exist(twin: Home) -> None:
    """GoogleCloudPlatform/bank-of-anthos#1234 (gcloud shows the type's URL)."""
    done = run(twin, "gcloud", "compute", "instances", "create", "m", *Z, "--machine-type",
               "n1-standard-999", *P)  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.rstrip() == (
        "ERROR: (gcloud.compute.instances.create) Could not fetch resource:\n"
        " - Invalid value for field 'resource.machineType': 'https://compute.googleapis.com/"
        "compute/v1/projects/twin-project/zones/us-central1-b/machineTypes/n1-standard-999'. "
        "Machine type with name 'n1-standard-999' does not exist in zone 'us-central1-b'."
    )


def test_an_image_that_does_not_exist(twin: Home) -> None:
    """gcloud resolves --image first (api_lib/compute/image_utils.py: "Could not fetch image
    resource:"); the API's 404 text: terraform-google-modules/terraform-google-container-vm#89."""
    done = run(twin, "gcloud", "compute", "instances", "create", "m", *Z, "--image-project",
               "cos-cloud", "--image", "cos-stable-55-8872-76-0", *P)  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.rstrip() == (
        "ERROR: (gcloud.compute.instances.create) Could not fetch image resource:\n"
        " - The resource 'projects/cos-cloud/global/images/cos-stable-55-8872-76-0' was not found"
    )
    # the image the 2017 scripts boot is there (the twin's default; see docs/gce-2026.md)
    ok = run(twin, "gcloud", "compute", "instances", "create", "m", *Z, "--image-project",
             "cos-cloud", "--image", "cos-beta-59-9460-20-0", *P)  # fmt: skip
    assert ok.returncode == 0, ok.stderr


def test_a_5_pb_disk(twin: Home) -> None:
    """Persistent disks end at 64 TB (cloud.google.com/compute/docs/disks); the API's wording
    for a larger one could not be checked (docs/gce-2026.md)."""
    done = run(twin, "gcloud", "compute", "disks", "create", "d", "--size", "5PB", *Z, *P)
    assert done.returncode == 1
    assert done.stderr.rstrip() == (
        "ERROR: (gcloud.compute.disks.create) Could not fetch resource:\n"
        " - Invalid value for field 'resource.sizeGb': '5242880'. Disk size cannot be larger "
        "than 65536 GB."
    )
    assert twin.load().kind("disks") == {}


def test_an_810_kb_metadata_value(twin: Home, tmp_path: Path) -> None:
    """Limits: gcloud 528 `compute instances create --help` (256 KB a value, 512 KB in all);
    the API's message as kubernetes #37180 quotes it (then for a 32768 limit)."""
    script = tmp_path / "startup.sh"
    script.write_bytes(b"#" * (810 * 1024))
    done = run(twin, "gcloud", "compute", "instances", "create", "m", *Z,
               "--metadata-from-file", f"startup-script={script}", *P)  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.rstrip() == (
        "ERROR: (gcloud.compute.instances.create) Could not fetch resource:\n"
        " - Value for field 'resource.metadata.items[0].value' is too large: maximum size "
        "262144 character(s); actual size 829440."
    )
    assert twin.load().leftovers() == {}


def test_port_99999(twin: Home) -> None:
    """gcloud checks only the rule's form (firewalls_utils.ParseRules); ports are 16-bit and
    the API refuses 99999 (its wording could not be checked)."""
    done = run(twin, "gcloud", "compute", "firewall-rules", "create", "fw", "--allow",
               "tcp:99999", *P)  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.startswith(
        "ERROR: (gcloud.compute.firewall-rules.create) Could not fetch resource:\n"
        " - Invalid value for field 'resource.allowed[0].ports[0]': '99999'."
    )
    form = run(twin, "gcloud", "compute", "firewall-rules", "create", "fw", "--allow",
               "tcp:1-x", *P)  # fmt: skip
    assert form.stderr.rstrip() == (
        "ERROR: (gcloud.compute.firewall-rules.create) Firewall rules must be of the form "
        "PROTOCOL[:PORT[-PORT]]; received [tcp:1-x]."
    )
    assert twin.load().leftovers() == {}


# -- quotas of a project with low quotas ------------------------------------------------------


def test_a_project_with_low_quotas_refuses_what_exceeds_them(tmp_path: Path) -> None:
    """mesosphere-backup/terraform-dcos#61, kelseyhightower/kubernetes-the-hard-way#47: "Quota
    'CPUS' exceeded.  Limit: 8.0 in region us-east1." """
    home = install(tmp_path / "twin", TwinConfig(quotas={"regions": {"us-central1": {"CPUS": 8}}}))
    assert run(home, "gcloud", "compute", "instances", "create", "a", *Z, "--machine-type",
               "n1-standard-4", *P).returncode == 0  # fmt: skip
    done = run(home, "gcloud", "compute", "instances", "create", "b", *Z, "--machine-type",
               "n1-standard-8", *P)  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.rstrip() == (
        "ERROR: (gcloud.compute.instances.create) Could not fetch resource:\n"
        " - Quota 'CPUS' exceeded.  Limit: 8.0 in region us-central1."
    )
    described = run(home, "gcloud", "compute", "regions", "describe", "us-central1", *P,
                    "--format=json")  # fmt: skip
    quotas = {q["metric"]: q for q in json.loads(described.stdout)["quotas"]}
    assert (quotas["CPUS"]["limit"], quotas["CPUS"]["usage"]) == (8, 4.0)
    assert quotas["DISKS_TOTAL_GB"]["usage"] == 10.0  # the boot disk of `a`


def test_an_injected_fault_strikes_as_many_times_as_it_is_told(tmp_path: Path) -> None:
    fault = {"kind": "stockout", "command": "compute instances create", "times": 2}
    home = install(tmp_path / "twin", TwinConfig(faults=(fault,)))
    codes = [run(home, "gcloud", "compute", "instances", "create", f"m{i}", *Z, *P).returncode
             for i in range(3)]  # fmt: skip
    assert codes == [1, 1, 0]
    assert sorted(home.load().kind("instances")) == ["m2"]
