"""The twin's gsutil, docker, curl, make, ssh/scp and the downloads the scripts fetch.

* gsutil: buckets and objects (kube-up.sh stages the release tars in
  gs://kubernetes-staging-<hash>).
* docker: `build` in cluster/images/kubemark (needs the Dockerfile and the
  kubemark binary start-kubemark.sh copied there) records a local image that
  `gcloud docker -- push` pushes.
* curl: the three downloads of the 2017 scripts (easy-rsa.tar.gz, cfssl,
  cfssljson: the twin hands out stand-ins that write placeholder PEM files) and
  kube-up.sh's wait for its master (`https://<master ip>/api/v1/pods`).
* make: `quick-release` writes the 2017 output layout with the candidate's sim
  profile in its server tar; the image targets of cluster/images/kubemark run
  the real make with the real Makefile (whose docker and gcloud are the twin's).
* ssh/scp: nothing in the scripts calls them directly (gcloud does); any call
  is unmodelled.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

from bisector.twin import master
from bisector.twin.gcloud import parse, which_real
from bisector.twin.state import Home, Refused, Unmodelled

BIN = "_output/dockerized/bin/linux/amd64"
RELEASE_TARS = "_output/release-tars"


def gsutil(home: Home, argv: list[str]) -> int:
    args = argv[:]
    while args and args[0] in ("-m", "-q"):
        args.pop(0)
    if args[:1] == ["-h"]:
        args = args[2:]
    if not args:
        raise Unmodelled("gsutil without a command")
    cmd, rest = args[0], args[1:]
    if cmd == "version":
        print("gsutil version: 5.35 (twin)")
        return 0
    with home.locked() as state:
        buckets = state.kind("buckets")
        if cmd == "ls" and len(rest) == 1:
            bucket = rest[0].removeprefix("gs://").split("/")[0]
            if bucket not in buckets:
                raise Refused(f"BucketNotFoundException: 404 gs://{bucket} bucket does not exist.")
            for obj in sorted(buckets[bucket]["objects"]):
                print(f"gs://{bucket}/{obj}")
            return 0
        if cmd == "mb":
            bucket = rest[-1].removeprefix("gs://").rstrip("/")
            if bucket in buckets:
                raise Refused(f"ServiceException: 409 Bucket {bucket} already exists.")
            buckets[bucket] = {"name": bucket, "objects": {}}
            return 0
        if cmd == "cp" and len(rest) >= 2 and rest[-1].startswith("gs://"):
            bucket, _, prefix = rest[-1].removeprefix("gs://").partition("/")
            if bucket not in buckets:
                raise Refused(f"NotFoundException: 404 gs://{bucket} bucket does not exist.")
            for src in rest[:-1]:
                path = Path(src)
                if not path.is_file():
                    raise Refused(f"CommandException: No URLs matched: {src}")
                key = f"{prefix.rstrip('/')}/{path.name}".lstrip("/")
                buckets[bucket]["objects"][key] = path.stat().st_size
            return 0
        if cmd == "acl" and rest[:3] == ["ch", "-g", "all:R"]:
            for url in rest[3:]:
                bucket, _, key = url.removeprefix("gs://").partition("/")
                if key not in buckets.get(bucket, {}).get("objects", {}):
                    raise Refused(f"CommandException: No URLs matched: {url}")
            return 0
    raise Unmodelled("gsutil " + " ".join(args[:2]))


def docker(home: Home, argv: list[str]) -> int:
    if argv[:1] == ["version"]:
        print("27.0.0-twin")
        return 0
    if argv[:1] == ["build"]:
        args = parse([a for a in argv[1:] if a != "--pull"])
        tag = args.get("-t")
        if tag is None or args.words != ["."]:
            raise Unmodelled("docker " + " ".join(argv))
        for needed in ("Dockerfile", "kubemark"):
            if not Path(needed).is_file():
                raise Refused(f"COPY failed: stat {needed}: file does not exist")
        build = json.loads(Path("kubemark").read_text(encoding="utf-8"))
        with home.locked() as state:
            state.kind("images")[f"local/{tag}"] = {"name": f"local/{tag}", "build": build}
        print(f"Successfully tagged {tag}")
        return 0
    raise Unmodelled("docker " + " ".join(argv[:2]))


def unmodelled(name: str) -> Any:
    def tool(home: Home, argv: list[str]) -> int:
        raise Unmodelled(f"{name} " + " ".join(argv[:3]) + " (the scripts reach VMs via gcloud)")

    return tool


# -- curl and what it downloads -----------------------------------------------------------

EASYRSA_URL = "https://storage.googleapis.com/kubernetes-release/easy-rsa/easy-rsa.tar.gz"
CFSSL_URLS = {
    "https://pkg.cfssl.org/R1.2/cfssl_linux-amd64": "cfssl",
    "https://pkg.cfssl.org/R1.2/cfssljson_linux-amd64": "cfssljson",
}


def curl(home: Home, argv: list[str]) -> int:
    urls = [a for a in argv if a.startswith(("http://", "https://"))]
    if len(urls) != 1:
        raise Unmodelled("curl " + " ".join(argv))
    url = urls[0]
    if url == EASYRSA_URL and "-O" in argv:
        _write_easyrsa_tar(home, Path("easy-rsa.tar.gz"))
        return 0
    if url in CFSSL_URLS and "-o" in argv:
        out = Path(argv[argv.index("-o") + 1])
        out.write_text(shim_text(home, CFSSL_URLS[url]), encoding="utf-8")
        return 0
    api = re.fullmatch(r"https://([\d.]+)(/api/v1/pods)?", url)
    if api:
        with home.locked() as state:
            masters = [
                i for i in state.kind("instances").values()
                if i["networkInterfaces"][0]["accessConfigs"][0]["natIP"] == api.group(1)
            ]  # fmt: skip
        if not masters:
            print("curl: (28) Connection timed out after 5001 milliseconds", file=sys.stderr)
            return 28
        return 0
    raise Unmodelled(f"curl {url}")


def shim_text(home: Home, tool: str) -> str:
    return (
        "#!/bin/sh\n# bisector GCE twin\n"
        f'exec "{sys.executable}" -m bisector.twin --home "{home.path}" shim {tool} "$@"\n'
    )


def _write_easyrsa_tar(home: Home, path: Path) -> None:
    blob = shim_text(home, "easyrsa").encode("utf-8")
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("easy-rsa-master/easyrsa3/easyrsa")
        info.size, info.mode = len(blob), 0o755
        tar.addfile(info, io.BytesIO(blob))


def _pem(kind: str, name: str) -> str:
    return f"-----BEGIN {kind}-----\ntwin {name}\n-----END {kind}-----\n"


def easyrsa(home: Home, argv: list[str]) -> int:
    words = [a for a in argv if not a.startswith("--")]
    pki = Path("pki")
    if words == ["init-pki"]:
        for sub in ("private", "reqs", "issued"):
            (pki / sub).mkdir(parents=True, exist_ok=True)
        return 0
    if words == ["build-ca", "nopass"]:
        (pki / "ca.crt").write_text(_pem("CERTIFICATE", "ca"))
        (pki / "private" / "ca.key").write_text(_pem("PRIVATE KEY", "ca"))
        return 0
    if len(words) == 3 and words[0] in ("build-server-full", "build-client-full"):
        name = words[1]
        if not (pki / "ca.crt").is_file():
            raise Refused("easyrsa: no CA: run build-ca first")
        (pki / "issued" / f"{name}.crt").write_text(_pem("CERTIFICATE", name))
        (pki / "private" / f"{name}.key").write_text(_pem("PRIVATE KEY", name))
        return 0
    raise Unmodelled("easyrsa " + " ".join(argv))


def cfssl(home: Home, argv: list[str]) -> int:
    if argv[:1] != ["gencert"]:
        raise Unmodelled("cfssl " + " ".join(argv[:1]))
    request = sys.stdin.read() if argv[-1] == "-" else Path(argv[-1]).read_text()
    try:
        cn = json.loads(request).get("CN", "?")
    except ValueError:
        raise Refused("cfssl: failed to parse the CSR request") from None
    print(json.dumps({"cert": _pem("CERTIFICATE", cn), "key": _pem("PRIVATE KEY", cn),
                      "csr": _pem("CERTIFICATE REQUEST", cn)}))  # fmt: skip
    return 0


def cfssljson(home: Home, argv: list[str]) -> int:
    if argv[:1] != ["-bare"] or len(argv) < 2:
        raise Unmodelled("cfssljson " + " ".join(argv))
    data = json.loads(sys.stdin.read())
    name = argv[1]
    Path(f"{name}.pem").write_text(data["cert"])
    Path(f"{name}-key.pem").write_text(data["key"])
    Path(f"{name}.csr").write_text(data["csr"])
    return 0


# -- make ---------------------------------------------------------------------------------

IMAGE_TARGETS = ("gcloudpush", "build", "push")


def make(home: Home, argv: list[str]) -> int:
    targets = [a for a in argv if not a.startswith("-") and "=" not in a]
    cwd = Path.cwd()
    if targets == ["quick-release"] and (cwd / "build" / "release.sh").is_file():
        return _quick_release(home, cwd)
    if len(targets) == 1 and targets[0] in IMAGE_TARGETS and cwd.parts[-3:] == (
        "cluster", "images", "kubemark",
    ):  # fmt: skip
        real = which_real("make", home.bin)
        if real is None:
            raise Unmodelled("make: no real make on PATH to run cluster/images/kubemark/Makefile")
        return subprocess.run([real, *argv], check=False).returncode
    raise Unmodelled(f"make {' '.join(argv)} in {cwd} (the twin models quick-release and "
                     "the kubemark image targets)")  # fmt: skip


def _quick_release(home: Home, root: Path) -> int:
    """The files a 2017 `make quick-release` leaves (build/lib/release.sh, build/common.sh)."""
    commit = _git(root, "rev-parse", "HEAD")
    settings = home.settings()
    bad_by = [c for c in settings.get("bad_if_contains", []) if _contains(root, c)]
    profile = settings.get("bad_profile", {}) if bad_by else settings.get("good_profile", {})
    build = {"commit": commit, "bad_because_of": bad_by, "profile": profile}
    tars = root / RELEASE_TARS
    tars.mkdir(parents=True, exist_ok=True)
    master.write_server_tar(tars / master.SERVER_TAR, build)
    for name in ("kubernetes-salt.tar.gz", "kubernetes-manifests.tar.gz", "kubernetes.tar.gz",
                 "kubernetes-test.tar.gz", "kubernetes-client-linux-amd64.tar.gz",
                 "kubernetes-node-linux-amd64.tar.gz", "kubernetes-src.tar.gz"):  # fmt: skip
        _tiny_tar(tars / name, name)
    stage = root / "_output/release-stage/test/kubernetes/platforms/linux/amd64"
    stage.mkdir(parents=True, exist_ok=True)
    bins = root / BIN
    bins.mkdir(parents=True, exist_ok=True)
    for target in (bins / "kubemark", stage / "kubemark"):
        target.write_text(json.dumps(build) + "\n", encoding="utf-8")
        target.chmod(0o755)
    kubectl = bins / "kubectl"
    kubectl.write_text(shim_text(home, "kubectl"), encoding="utf-8")
    kubectl.chmod(0o755)
    print(f"+++ [twin] quick-release of {commit[:12]}: {'bad' if bad_by else 'good'} profile")
    return 0


def _tiny_tar(path: Path, name: str) -> None:
    blob = f"twin {name}\n".encode()
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo(f"kubernetes/{name}.txt")
        info.size = len(blob)
        tar.addfile(info, io.BytesIO(blob))


def _git(root: Path, *args: str) -> str:
    real = which_real("git", Path("/nonexistent"))
    if real is None:
        raise Unmodelled("git is not installed")
    done = subprocess.run([real, *args], cwd=root, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise Refused(f"make: git {' '.join(args)} failed in {root}: {done.stderr.strip()}")
    return done.stdout.strip()


def _contains(root: Path, commit: str) -> bool:
    real = which_real("git", Path("/nonexistent"))
    assert real is not None
    done = subprocess.run(
        [real, "merge-base", "--is-ancestor", commit, "HEAD"], cwd=root, capture_output=True,
        check=False, env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
    )  # fmt: skip
    if done.returncode not in (0, 1):
        raise Refused(f"twin: cannot tell whether {root} contains {commit}: {done.stderr!r}")
    return done.returncode == 0
