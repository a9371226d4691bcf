"""The twin's gsutil, docker, curl, make, ssh/scp and the downloads the scripts fetch.

* gsutil: buckets and objects (kube-up.sh stages the release tars in
  gs://kubernetes-staging-<hash>), with uniform bucket-level access and public
  access prevention as the project's org policies (settings `org_policies`) and
  `gsutil mb -b` make them.
* docker: `build` in cluster/images/kubemark (needs the Dockerfile and the
  kubemark binary start-kubemark.sh copied there) records a local image that
  `gcloud docker -- push` pushes.
* curl: the three downloads of the 2017 scripts: easy-rsa.tar.gz (a stand-in
  writing placeholder PEM files), and cfssl/cfssljson from pkg.cfssl.org, which
  is gone (the page it answers with is saved, as curl -s -L does; the twin's bin
  holds stand-ins of cfssl and cfssljson, as a machine prepared as
  docs/gce-2026.md says has them on PATH); and kube-up.sh's wait for its master
  (`https://<master ip>/api/v1/pods`).
* make: `quick-release` writes the 2017 output layout with the candidate's sim
  profile in its server tar; the image targets of cluster/images/kubemark run
  the real make with the real Makefile (whose docker and gcloud are the twin's).
* ssh/scp: nothing in the scripts calls them directly (gcloud does); any call
  is unmodelled.
"""

from __future__ import annotations

import io
import json
import re
import sys
import tarfile
from pathlib import Path
from typing import Any

from bisector.twin import faults, master
from bisector.twin.gcloud import which_real
from bisector.twin.state import Home, Refused, Unmodelled

BIN = "_output/dockerized/bin/linux/amd64"
_GIT_TIMEOUT_S = 600.0  # a rev-parse or merge-base in a local repository
RELEASE_TARS = "_output/release-tars"


# gsutil's options, as `gsutil help <command>` of SDK 528 (gsutil 5.35) lists them: the
# ones that take a value, and flags. An option a command does not have is refused as gsutil
# refuses it (measured offline: `gsutil mb -Z gs://x`, `gsutil -Z ls`: exit 1).
_GSUTIL_TOP = ({"-h", "-o", "-i"}, {"-m", "-q", "-d", "-D", "-DD", "-u"})
_GSUTIL = {
    "mb": ({"-b", "-c", "-k", "-l", "-p", "--retention", "--pap", "--placement", "--rpo"},
           {"--autoclass"}),
    "cp": ({"-a", "-c", "-j", "-L", "-s", "-z", "-i"},
           {"-A", "-D", "-e", "-I", "-J", "-M", "-n", "-p", "-P", "-r", "-R", "-U", "-v"}),
    "ls": ({"-p"}, {"-a", "-b", "-d", "-e", "-l", "-L", "-r", "-R", "-h"}),
    "acl ch": ({"-u", "-g", "-p", "-d"}, {"-f", "-r", "-R"}),
    "version": (set(), {"-l"}),
}  # fmt: skip
# Bucket names (cloud.google.com/storage/docs/buckets#naming): 3-63 characters of lower case
# letters, digits, dashes, underscores and dots, starting and ending with a letter or digit.
_BUCKET = re.compile(r"[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]")
# Answers of Cloud Storage as gsutil prints them: an ACL change on an object of a bucket with
# uniform bucket-level access (issues: GoogleCloudPlatform/gsutil#980, googledatastudio/
# tooling#114: `acl ch` first gets the ACL), and a bucket with fine-grained ACLs where the org
# policy enforces uniform access (issue: terraform-large-data-sharing-golang-webapp#61).
UBLA_ACL = (
    "BadRequestException: 400 Cannot get legacy ACL for an object when uniform bucket-level "
    "access is enabled. Read more at https://cloud.google.com/storage/docs/"
    "uniform-bucket-level-access."
)
UBLA_CONSTRAINT = "constraints/storage.uniformBucketLevelAccess"
PAP_CONSTRAINT = "constraints/storage.publicAccessPrevention"


def _gsutil_options(name: str, argv: list[str]) -> tuple[dict[str, str], list[str]]:
    """(options, the rest) of a gsutil (sub)command, or gsutil's refusal."""
    valued, flags = _GSUTIL_TOP if name == "" else _GSUTIL[name]
    options: dict[str, str] = {}
    rest: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if name == "" and not token.startswith("-"):
            return options, argv[i:]
        if token.startswith("-") and token != "-":
            if token in valued and i + 1 < len(argv):
                options[token] = argv[i + 1]
                i += 2
                continue
            if token in flags:
                options[token] = ""
                i += 1
                continue
            if name == "":
                raise Refused(f"CommandException: option {token} not recognized")
            raise Refused(f"CommandException: Incorrect option(s) specified. Usage:\n\n"
                          f"  gsutil {name} ...")  # fmt: skip
        rest.append(token)
        i += 1
    return options, rest


def gsutil(home: Home, argv: list[str]) -> int:
    _, args = _gsutil_options("", argv)
    if not args:
        raise Unmodelled("gsutil without a command")
    cmd = " ".join(args[:2]) if args[:1] == ["acl"] else args[0]
    if cmd not in _GSUTIL:
        raise Unmodelled("gsutil " + " ".join(args[:2]))
    options, rest = _gsutil_options(cmd, args[len(cmd.split()) :])
    if cmd == "version":
        print("gsutil version: 5.35 (twin)")
        return 0
    with home.locked() as state:
        buckets = state.kind("buckets")
        policies = {f"constraints/{c}" for c in state.settings.get("org_policies", [])}
        if cmd == "ls" and len(rest) == 1:
            bucket = rest[0].removeprefix("gs://").split("/")[0]
            if bucket not in buckets:
                raise Refused(f"BucketNotFoundException: 404 gs://{bucket} bucket does not exist.")
            for obj in sorted(buckets[bucket]["objects"]):
                print(f"gs://{bucket}/{obj}")
            return 0
        if cmd == "mb" and len(rest) == 1:
            bucket = rest[0].removeprefix("gs://").rstrip("/")
            if not _BUCKET.fullmatch(bucket):
                raise Refused(f"Creating gs://{bucket}/...\nBadRequestException: 400 Invalid "
                              "bucket name: '" + bucket + "'")  # fmt: skip
            if bucket in buckets:
                raise Refused(f"Creating gs://{bucket}/...\nServiceException: 409 A Cloud Storage "
                              f"bucket named '{bucket}' already exists.")  # fmt: skip
            enforced = UBLA_CONSTRAINT in policies
            if options.get("-b") == "off" and enforced:
                raise Refused(f"Creating gs://{bucket}/...\nPreconditionException: 412 Request "
                              f"violates constraint '{UBLA_CONSTRAINT}'")  # fmt: skip
            ubla = options.get("-b") == "on" or enforced
            pap = "enforced" if PAP_CONSTRAINT in policies else options.get("--pap", "inherited")
            buckets[bucket] = {"name": bucket, "objects": {}, "ubla": ubla, "pap": pap,
                               "location": options.get("-l", "US").upper()}  # fmt: skip
            print(f"Creating gs://{bucket}/...", file=sys.stderr)
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
        if cmd == "acl ch" and options.get("-g") == "all:R" and len(options) == 1:
            for url in rest:
                bucket, _, key = url.removeprefix("gs://").partition("/")
                found = buckets.get(bucket, {})
                if key not in found.get("objects", {}):
                    raise Refused(f"CommandException: No URLs matched: {url}")
                if found.get("ubla"):
                    raise Refused(UBLA_ACL)
                if found.get("pap") == "enforced":
                    # wording not checked: public access prevention refuses allUsers.
                    raise Refused("PreconditionException: 412 Public access prevention is "
                                  f"enforced for gs://{bucket}.")  # fmt: skip
            return 0
    raise Unmodelled("gsutil " + " ".join(args[:3]))


def docker(home: Home, argv: list[str]) -> int:
    if argv[:1] == ["version"]:
        print("27.0.0-twin")
        return 0
    if argv[:1] == ["build"]:
        rest = [a for a in argv[1:] if a != "--pull"]
        tag = rest[rest.index("-t") + 1] if "-t" in rest[:-1] else None
        if tag is None or [a for a in rest if a not in ("-t", tag)] != ["."]:
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
CFSSL_GONE = (
    '<html>\n<head><title>522 Origin Connection Time-out</title></head>\n<body bgcolor="white">'
    "\n<center><h1>522 Origin Connection Time-out</h1></center>\n<hr><center>cloudflare-nginx"
    "</center>\n</body>\n</html>\n"
)
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
        # pkg.cfssl.org/R1.2 is gone (kubernetes #97929, cloudflare/cfssl#1165: since
        # 2021-01 it answers with Cloudflare's 522 page); `curl -s -L -o` without --fail
        # saves that page as the binary and exits 0 (hack/lib/util.sh ensure-cfssl).
        out = Path(argv[argv.index("-o") + 1])
        out.write_text(CFSSL_GONE, encoding="utf-8")
        return 0
    api = re.fullmatch(r"https://([\d.]+)(/api/v1/pods)?", url)
    if api:
        with home.locked() as state:
            masters = [
                i for i in state.kind("instances").values()
                if i["networkInterfaces"][0]["accessConfigs"][0]["natIP"] == api.group(1)
            ]  # fmt: skip
            healthy = [m for m in masters if not faults.unhealthy(state, m["name"])]
        if not healthy:
            print("curl: (28) Connection timed out after 5001 milliseconds", file=sys.stderr)
            return 28
        return 0
    raise Unmodelled(f"curl {url}")


def shim_text(home: Home, tool: str) -> str:
    return (
        "#!/bin/sh\n# bisector GCE twin\n"
        f'exec "{sys.executable}" -m bisector.twin '
        f'--home "{home.path}" shim {tool} "$@"\n'
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
        from bisector import proc  # only when a program runs: the other shims start faster

        # Through the one door: a timeout, and the make's group killed on one. The door
        # keeps what the make printed; the script that called this shim reads it here.
        done = proc.run([real, *argv], check=False)
        sys.stdout.write(done.stdout)
        sys.stderr.write(done.stderr)
        return done.code
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
    from bisector import proc

    real = which_real("git", Path("/nonexistent"))
    if real is None:
        raise Unmodelled("git is not installed")
    done = proc.run([real, *args], cwd=root, check=False, timeout=_GIT_TIMEOUT_S)
    if done.code != 0:
        raise Refused(f"make: git {' '.join(args)} failed in {root}: {done.stderr.strip()}")
    return done.stdout.strip()


def _contains(root: Path, commit: str) -> bool:
    from bisector import proc

    real = which_real("git", Path("/nonexistent"))
    assert real is not None
    done = proc.run(
        [real, "merge-base", "--is-ancestor", commit, "HEAD"], cwd=root, check=False,
        env={"GIT_TERMINAL_PROMPT": "0"}, timeout=_GIT_TIMEOUT_S,
    )  # fmt: skip
    if done.code not in (0, 1):
        raise Refused(f"twin: cannot tell whether {root} contains {commit}: {done.stderr!r}")
    return done.code == 0
