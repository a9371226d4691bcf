"""bisector.upload against the real GCS emulator."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions as gexc

from bisector import upload
from bisector.ci import gcs
from bisector.credentials import withheld, withheld_by_name
from bisector.errors import BisectorError
from bisector.upload import parse_destination, upload_run
from tests.helpers.gcs import ensure_bucket

BUCKET = "bisector-uploads"


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    logs = run / "evals" / "001-7043372d0551" / "logs"
    logs.mkdir(parents=True)
    (logs / "kube-apiserver.log").write_text("I0602 05:51:10.000001 7 wrap.go:42] x\n" * 50)
    (logs / "kube-apiserver.log.1.gz").write_bytes(gzip.compress(b"I0602 older lines\n"))
    (run / "evals" / "001-7043372d0551" / "scores.json").write_text('{"conflicts": 3}')
    (run / "journal.jsonl").write_text('{"type": "begin"}\n')
    (run / "report.json").write_text("{}")
    (run / "report.md").write_text("# report\n")
    (run / "report.html").write_text("<html></html>")
    # Never uploaded: a tool-owned git worktree and a symlink.
    (run / "worktrees" / "slot0").mkdir(parents=True)
    (run / "worktrees" / "slot0" / ".git").write_text("gitdir: /x\n")
    (run / "worktrees" / "slot0" / "Makefile").write_text("all:\n")
    (run / "link.log").symlink_to(logs / "kube-apiserver.log")
    return run


def _objects(client: Any, prefix: str) -> dict[str, bytes]:
    return {b.name: b.download_as_bytes() for b in client.list_blobs(BUCKET, prefix=prefix)}


def test_whole_run_then_only_what_changed(gcs_client: Any, run_dir: Path) -> None:
    ensure_bucket(gcs_client, BUCKET)
    first = upload_run(run_dir, f"gs://{BUCKET}/hunts/46851/")
    names = {
        "hunts/46851/evals/001-7043372d0551/logs/kube-apiserver.log",
        "hunts/46851/evals/001-7043372d0551/logs/kube-apiserver.log.1.gz",
        "hunts/46851/evals/001-7043372d0551/scores.json",
        "hunts/46851/journal.jsonl",
        "hunts/46851/report.json",
        "hunts/46851/report.md",
        "hunts/46851/report.html",
    }
    assert set(first.uploaded) == names
    assert first.skipped == []
    stored = _objects(gcs_client, "hunts/46851/")
    assert set(stored) == names
    assert stored["hunts/46851/report.md"] == b"# report\n"
    assert first.bytes_uploaded == sum(len(v) for v in stored.values())
    blob = gcs_client.bucket(BUCKET).get_blob("hunts/46851/report.html")
    assert blob.content_type == "text/html"

    # A new evaluation and a grown journal: only those are sent again.
    (run_dir / "evals" / "002-1444d252e17a" / "logs").mkdir(parents=True)
    (run_dir / "evals" / "002-1444d252e17a" / "logs" / "kube-apiserver.log").write_text("y\n")
    (run_dir / "journal.jsonl").write_text('{"type": "begin"}\n{"type": "measurement"}\n')
    second = upload_run(run_dir, f"gs://{BUCKET}/hunts/46851")
    assert set(second.uploaded) == {
        "hunts/46851/evals/002-1444d252e17a/logs/kube-apiserver.log",
        "hunts/46851/journal.jsonl",
    }
    assert len(second.skipped) == 6
    assert (
        _objects(gcs_client, "hunts/46851/journal.jsonl")["hunts/46851/journal.jsonl"].count(b"\n")
        == 2
    )


def test_only_some_paths(gcs_client: Any, run_dir: Path) -> None:
    ensure_bucket(gcs_client, BUCKET)
    result = upload_run(
        run_dir, f"gs://{BUCKET}/only", only=["evals/001-7043372d0551", Path("report.md")]
    )
    assert sorted(result.uploaded) == [
        "only/evals/001-7043372d0551/logs/kube-apiserver.log",
        "only/evals/001-7043372d0551/logs/kube-apiserver.log.1.gz",
        "only/evals/001-7043372d0551/scores.json",
        "only/report.md",
    ]
    with pytest.raises(BisectorError, match="does not exist"):
        upload_run(run_dir, f"gs://{BUCKET}/only", only=["report.pdf"])
    with pytest.raises(BisectorError, match="outside the run directory"):
        upload_run(run_dir, f"gs://{BUCKET}/only", only=["../elsewhere"])


def test_transient_upload_errors_are_retried(
    gcs_client: Any, run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ensure_bucket(gcs_client, BUCKET)
    monkeypatch.setattr(gcs, "BACKOFF_S", 0.0)
    real = gcs.retrying
    failures = [gexc.ServiceUnavailable("503"), gexc.InternalServerError("500")]  # type: ignore[no-untyped-call]

    def flaky_first(call: Any) -> Any:
        def once() -> Any:
            if failures:
                raise failures.pop(0)
            return call()

        return real(once)

    monkeypatch.setattr(upload, "retrying", flaky_first)
    result = upload_run(run_dir, f"gs://{BUCKET}/flaky", only=["report.md"])
    assert result.uploaded == ["flaky/report.md"]
    assert failures == []
    assert _objects(gcs_client, "flaky/") == {"flaky/report.md": b"# report\n"}


def test_bad_destinations_are_clear_errors(gcs_client: Any, run_dir: Path) -> None:
    assert parse_destination("gs://b") == ("b", "")
    assert parse_destination("gs://b/p/q/") == ("b", "p/q/")
    with pytest.raises(BisectorError, match="not gs://BUCKET/PREFIX"):
        upload_run(run_dir, "/tmp/x")
    with pytest.raises(BisectorError, match="gs://no-such-upload-bucket does not exist"):
        upload_run(run_dir, "gs://no-such-upload-bucket/p")
    with pytest.raises(BisectorError, match="does not exist; nothing to upload"):
        upload_run(run_dir / "nope", f"gs://{BUCKET}/p")


KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t
    server: https://35.1.2.3
  name: e2e
users:
- name: e2e-admin
  user:
    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t
    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQ==
"""
TOKEN_KUBECONFIG = "apiVersion: v1\nkind: Config\nusers:\n- name: a\n  user:\n    token: abc123\n"
PEM_KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\n"


def test_credentials_never_leave_the_machine(gcs_client: Any, run_dir: Path) -> None:
    ensure_bucket(gcs_client, BUCKET)
    secrets = {
        # by name, whatever they hold
        "gce/base-1.kubeconfig": KUBECONFIG,
        "kind/kubeconfig-slot0": KUBECONFIG,
        "kind/kubeconfig": "x",
        "keys/ca.key": "x",
        "keys/client.pem": "x",
        "token.txt": "x",
        "ssh/id_rsa": "x",
        "gce/application_default_credentials.json": "{}",
        # not something a reader needs
        "gce/base-1.yaml": "x",
        "scripts/launch.sh": "x",
        # by content, under names a reader would want
        "evals/002/launch.log": "bringing up\n" + PEM_KEY,
        "evals/002/collect.log": "$ kubectl config view --raw\n" + KUBECONFIG,
        "evals/002/teardown.log": TOKEN_KUBECONFIG,
        "evals/002/http.log": "curl -H 'Authorization: Bearer eyJhbGciOiJSUzI1NiIsImtp'\n",
        "evals/002/sa.json": '{"type": "service_account", "private_key": "-----BEGIN PRIVATE"}',
    }
    for name, text in secrets.items():
        (run_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (run_dir / name).write_text(text)
    (run_dir / "evals/002/logs").mkdir(parents=True)
    (run_dir / "evals/002/logs/kube-apiserver.log.gz").write_bytes(gzip.compress(PEM_KEY.encode()))
    secrets["evals/002/logs/kube-apiserver.log.gz"] = PEM_KEY
    # What a reader needs, including a log that merely mentions the words.
    readable = {
        "evals/002/build.log": "===== $ make\nclient-key-data is stored 0600; token: mentioned\n",
        "evals/002/scores.json": '{"conflicts": 4}',
    }
    for name, text in readable.items():
        (run_dir / name).write_text(text)

    result = upload_run(run_dir, f"gs://{BUCKET}/secret-test")

    stored = _objects(gcs_client, "secret-test/")
    assert {f"secret-test/{name}" for name in secrets}.isdisjoint(stored)
    for data in stored.values():
        text = data.decode(errors="replace")
        assert "PRIVATE KEY" not in text
        assert "client-key-data: " not in text
        assert "Bearer eyJ" not in text
    assert {f"secret-test/{name}" for name in readable} <= set(stored)
    assert "secret-test/report.html" in stored
    assert "secret-test/evals/001-7043372d0551/logs/kube-apiserver.log.1.gz" in stored
    withheld = dict(result.withheld)
    assert set(withheld) == set(secrets)
    assert withheld["gce/base-1.kubeconfig"] == "its name matches *.kubeconfig"
    assert withheld["evals/002/launch.log"] == "it holds a PEM private key"
    assert withheld["evals/002/collect.log"] == "it holds a kubeconfig client key"
    assert withheld["evals/002/teardown.log"] == "it holds a kubeconfig token"
    assert withheld["evals/002/http.log"] == "it holds a bearer token"
    assert withheld["gce/base-1.yaml"] == "not a log, journal, report or score file"


def _corrupt_gzips() -> dict[str, bytes]:
    """Gzip files that cannot be inflated whole, each failing its own way in isal."""
    whole = gzip.compress(PEM_KEY.encode() * 200, mtime=0)
    deflate = bytearray(whole)
    for i in (12, 13, 20):  # inside the first deflate block: "Invalid deflate block found"
        deflate[i] ^= 0xFF
    crc = bytearray(whole)
    crc[-8] ^= 0xFF  # the trailer's CRC32 no longer matches what inflates
    return {
        "invalid-deflate-block": bytes(deflate),  # isal's IsalError: not an OSError
        "truncated": whole[: len(whole) // 2],  # EOFError: an upload or copy that stopped
        "bad-crc": bytes(crc),
        "header-only": whole[:10],
        "garbage-after-magic": b"\x1f\x8b" + bytes(range(256)) * 4,
    }


@pytest.mark.parametrize("damage", sorted(_corrupt_gzips()))
def test_a_gzip_that_cannot_be_inflated_is_withheld_never_an_error(
    tmp_path: Path, damage: str
) -> None:
    """A .gz whose content cannot be read cannot be checked for credentials: withheld
    (fail closed). An invalid deflate block raised isal's IsalError, which is no OSError,
    so `withheld` let it out and the whole upload failed."""
    path = tmp_path / "kube-apiserver.log.gz"
    path.write_bytes(_corrupt_gzips()[damage])
    why = withheld(path)
    assert why is not None and why.startswith("cannot be checked for credentials"), why


def test_an_upload_with_a_corrupt_gzip_withholds_it_and_sends_the_rest(
    gcs_client: Any, run_dir: Path
) -> None:
    ensure_bucket(gcs_client, BUCKET)
    corrupt = _corrupt_gzips()
    logs = run_dir / "evals" / "002-aaaaaaaaaaaa" / "logs"
    logs.mkdir(parents=True)
    for damage, data in corrupt.items():
        (logs / f"{damage}.log.gz").write_bytes(data)
    result = upload_run(run_dir, f"gs://{BUCKET}/corrupt")
    withheld_paths = dict(result.withheld)
    for damage in corrupt:
        assert f"evals/002-aaaaaaaaaaaa/logs/{damage}.log.gz" in withheld_paths, damage
    stored = _objects(gcs_client, "corrupt/")
    assert not any(name.startswith("corrupt/evals/002-") for name in stored)
    assert "corrupt/report.md" in stored


def test_nightly_upload_withholds_a_corrupt_gzip_and_uploads_the_report(
    gcs_client: Any, tmp_path: Path
) -> None:
    """nightly's upload caught BisectorError only: the IsalError ended the nightly."""
    from bisector.nightly.config import load_nightly_config
    from bisector.nightly.runner import _upload
    from tests.helpers.nightly import nightly_config

    ensure_bucket(gcs_client, BUCKET)
    config = nightly_config(
        tmp_path / "nightly.toml",
        bucket=BUCKET,
        job="ci-job",
        repo=None,
        state=tmp_path / "state",
        upload=f"gs://{BUCKET}/nightly",
    )
    cfg = load_nightly_config(config)
    report_dir = tmp_path / "reports" / "ci-job" / "aaaa-bbbb"
    (report_dir / "logs").mkdir(parents=True)
    (report_dir / "nightly.md").write_text("# nightly\n")
    (report_dir / "logs" / "kube-apiserver.log.gz").write_bytes(
        _corrupt_gzips()["invalid-deflate-block"]
    )
    said: list[str] = []
    _upload(cfg, cfg.jobs[0], report_dir, said.append)
    assert said == [f"ci-job: report uploaded to gs://{BUCKET}/nightly/ci-job/aaaa-bbbb (1 files)"]
    stored = _objects(gcs_client, "nightly/")
    assert set(stored) == {"nightly/ci-job/aaaa-bbbb/nightly.md"}


@pytest.mark.parametrize(
    "name",
    [
        "TOKEN.txt",
        "Token.json",
        "Application_Default_Credentials.json",
        "BASE-1.KUBECONFIG",
        "KubeConfig",
        "ca.KEY",
        "Client.Pem",
        "ID_RSA",
        "Id_Ed25519.pub",
        "My-Service-Account-Key.json",
        ".NETRC",
        "store.P12",
    ],
)
def test_credential_names_are_matched_whatever_their_case(name: str) -> None:
    """A name that differs from the pattern only by case is the same file to a person
    (and on a case-insensitive file system): withheld."""
    assert withheld_by_name(name) is not None, name
