"""A machine where `bisector doctor` finds everything: its tools answer through the fake proc."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bisector.backends.gce.steps import REGISTRY_HOSTS
from tests.helpers.fake_proc import FakeProc


def all_present(fake: FakeProc) -> FakeProc:
    fake.on("git --version", stdout="git version 2.43.0\n")
    fake.on("gcloud --version", stdout="Google Cloud SDK 480.0.0\n")
    fake.on("gcloud auth list", stdout="me@example.com\n")
    fake.on("gcloud config get-value project", stdout="my-project\n")
    fake.on("gcloud version --format=json",
            stdout='{"Google Cloud SDK": "528.0.0", "alpha": "2025.06.20", "beta": "2025.06.20", '
            '"core": "2025.06.20"}')  # fmt: skip
    fake.on("kind version", stdout="kind v0.23.0 go1.22 linux/amd64\n")
    return fake


def gce_home(
    monkeypatch: pytest.MonkeyPatch,
    home: Path,
    *,
    key: bool = True,
    helpers: tuple[str, ...] = REGISTRY_HOSTS,
) -> None:
    """A home with the gcloud ssh key and `gcloud auth configure-docker` done."""
    (home / ".ssh").mkdir(parents=True)
    if key:
        (home / ".ssh" / "google_compute_engine").write_text("key\n")
        (home / ".ssh" / "google_compute_engine.pub").write_text("pub\n")
    (home / ".docker").mkdir()
    config = {"credHelpers": dict.fromkeys(helpers, "gcloud")}
    (home / ".docker" / "config.json").write_text(json.dumps(config))
    bin_dir = home / "bin"
    bin_dir.mkdir()
    helper = bin_dir / "docker-credential-gcloud"
    helper.write_text("#!/bin/sh\nexit 0\n")
    helper.chmod(0o755)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("DOCKER_CONFIG", raising=False)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
