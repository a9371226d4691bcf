"""The preflight tells gcloud's answers apart: the project's refusals are config errors with
the fix the answer supports; no answer (a network cut, an outage) is an infrastructure
failure, said with gcloud's words and no fix.

Every gcloud text is what real gcloud prints (tests/helpers/gcloud_answers.py names the
source of each: the Cloud SDK's own code, or a user's report quoting it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector import proc
from bisector.backends.base import BackendContext
from bisector.backends.gce import preflight
from bisector.backends.gce.backend import SERVER_TARBALL, GceBackend
from bisector.backends.gce.steps import GceSettings
from bisector.backends.steps import step
from bisector.config import Section
from bisector.errors import ConfigError, LaunchError
from tests.helpers.fake_proc import FakeProc
from tests.helpers.gcloud_answers import (
    COMPUTE_DISABLED,
    NETWORK_CUT,
    NEW_TO_US,
    NO_SUCH_PROJECT,
    OUTAGE_503,
    PERMISSION_DENIED,
    PROJECT,
    READ_QUOTA,
    REFRESH_REVOKED,
    REFRESH_WITHOUT_NETWORK,
    REGISTRY_DISABLED,
    TIMED_OUT,
)

_FIXES = ("enable", "grant", "gcloud auth", "raise the limit", "check `", "install")


def _failed(stderr: str) -> proc.CmdResult:
    return proc.CmdResult(1, "", stderr)


@pytest.mark.parametrize(
    ("stderr", "kind", "cause"),
    [
        (NETWORK_CUT, preflight.UNREACHABLE, "[Errno 101] Network is unreachable"),
        (TIMED_OUT, preflight.UNREACHABLE, "(gcloud.compute.regions.describe) timed out"),
        (REFRESH_WITHOUT_NETWORK, preflight.UNREACHABLE, "Temporary failure in name resolution"),
        (OUTAGE_503, preflight.UNREACHABLE, "'status': '503'"),
        (NEW_TO_US, preflight.UNKNOWN, "something no release printed before"),
    ],
    ids=["network-cut", "timed-out", "refresh-without-network", "503", "unknown"],
)
def test_no_answer_from_the_project_is_said_with_its_cause_and_no_fix(
    stderr: str, kind: str, cause: str
) -> None:
    answer = preflight.answer_of(_failed(stderr), PROJECT)
    assert (answer.kind, answer.fix) == (kind, None)
    assert cause in answer.said
    # The advice gcloud prints after the error is none of ours to repeat.
    assert "gcloud feedback" not in answer.text and "gcloud auth login" not in answer.text
    assert not any(fix in answer.text for fix in _FIXES), answer.text


@pytest.mark.parametrize(
    ("stderr", "kind", "fix"),
    [
        (
            PERMISSION_DENIED,
            preflight.DENIED,
            "grant the account gcloud runs as a role that holds compute.regions.get on "
            "project k8s-scale",
        ),
        (
            COMPUTE_DISABLED,
            preflight.DISABLED,
            "gcloud services enable compute.googleapis.com --project k8s-scale",
        ),
        (
            REGISTRY_DISABLED,
            preflight.DISABLED,
            "gcloud services enable artifactregistry.googleapis.com --project k8s-scale",
        ),
        (
            READ_QUOTA,
            preflight.QUOTA,
            "raise the limit (Read requests per minute per region of compute.googleapis.com): "
            "https://console.cloud.google.com/iam-admin/quotas?project=k8s-scale",
        ),
        (NO_SUCH_PROJECT, preflight.NO_PROJECT, "check `project` (k8s-scale) in [backends.gce]"),
        (REFRESH_REVOKED, preflight.CREDENTIALS, "gcloud auth login"),
    ],
    ids=["permission", "compute-off", "registry-off", "read-quota", "no-project", "revoked"],
)
def test_a_refusal_of_the_project_is_said_with_the_fix_its_words_support(
    stderr: str, kind: str, fix: str
) -> None:
    answer = preflight.answer_of(_failed(stderr), PROJECT)
    assert answer.kind == kind
    assert answer.fix is not None and fix in answer.fix, answer.fix
    assert answer.said.startswith("ERROR: (gcloud.")
    if kind != preflight.DISABLED:
        assert "services enable" not in answer.text  # the old hint, whatever refused


def test_gcloud_missing_is_said_as_such(tmp_path: Path) -> None:
    result = preflight._run(step(str(tmp_path / "gcloud"), "compute", "regions", "describe"))
    answer = preflight.answer_of(result, PROJECT)
    assert answer.kind == preflight.NO_GCLOUD
    assert answer.fix == "install the Google Cloud CLI and put gcloud on PATH"


# -- what the backend does with the answers, before anything is created ---------------------


def _backend(tmp_path: Path) -> GceBackend:
    checkout = tmp_path / "base-checkout"
    (checkout / SERVER_TARBALL).parent.mkdir(parents=True)
    (checkout / SERVER_TARBALL).write_text("release\n")
    data: dict[str, object] = {
        "project": PROJECT,
        "instance_prefix": "kubemark-5000",
        "base_checkout": str(checkout),
        "build_cache_dir": str(tmp_path / "cache"),
    }
    context = BackendContext(Section(data, "gce.toml", "backends.gce"), tmp_path / "run", 1800.0)
    return GceBackend(context, sleep=lambda _s: None)


def _created_nothing(fake: FakeProc) -> None:
    made = [line for line in fake.lines if " create" in line or "kube-up" in line or " mb " in line]
    assert not made, made


def test_every_gcloud_read_cut_off_is_an_infrastructure_failure_not_a_config_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A nightly's gce job in an outage (every gcloud call exits 1) exited 2, "cannot run
    this config", with "enable the API" hints: a config error every night of the outage."""
    fake = FakeProc.install(monkeypatch)
    fake.on("gcloud", code=1, stderr=NETWORK_CUT)
    fake.on("command -v cfssl", stdout="/usr/bin/cfssl\n/usr/bin/cfssljson\n")
    with pytest.raises(LaunchError) as caught:
        _backend(tmp_path).setup()
    reason = caught.value.reason
    assert reason.startswith(f"project {PROJECT} could not be read, so nothing was created: ")
    assert "no answer from Google Cloud" in reason and "Network is unreachable" in reason
    assert not any(fix in reason for fix in _FIXES), reason
    _created_nothing(fake)


@pytest.mark.parametrize(
    ("stderr", "fix"),
    [
        (PERMISSION_DENIED, "a role that holds compute.regions.get on project k8s-scale"),
        (COMPUTE_DISABLED, "gcloud services enable compute.googleapis.com --project k8s-scale"),
        (READ_QUOTA, "raise the limit (Read requests per minute per region"),
    ],
    ids=["permission", "api-off", "quota"],
)
def test_a_project_that_refuses_the_reads_is_a_config_error_with_the_fix(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, stderr: str, fix: str
) -> None:
    fake = FakeProc.install(monkeypatch)
    fake.on("gcloud", code=1, stderr=stderr)
    fake.on("command -v cfssl", stdout="/usr/bin/cfssl\n/usr/bin/cfssljson\n")
    with pytest.raises(ConfigError, match="cannot run this config") as caught:
        _backend(tmp_path).setup()
    assert fix in str(caught.value)
    _created_nothing(fake)


def test_an_org_policy_read_refused_is_said_and_does_not_stop_the_run() -> None:
    """Reading effective org policies is this check's alone: kube-up needs no such right."""

    def run(s: object) -> proc.CmdResult:
        return _failed(PERMISSION_DENIED.replace("compute.regions.get", "orgpolicy.policy.get"))

    settings = _backend_settings()
    found = preflight.policy_findings(settings, run)
    assert found and all(not f.ok and not f.known and not f.infra for f in found)
    ready = preflight.Ready(found, network=True, repository=True, bucket=True)
    preflight.refuse(PROJECT, ready)  # nothing raised: the run goes on


def _backend_settings() -> GceSettings:
    section = Section({"project": PROJECT}, "gce.toml", "backends.gce")
    return GceSettings.from_section(section, Path("run"))
