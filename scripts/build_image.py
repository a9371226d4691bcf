"""Build the project's image here, without a Docker engine or a registry: `make image`.

    python scripts/build_image.py [--base-name NAME] [--tag TAG] [--target STAGE] [--archive TAR]

1. A Debian base made from Debian's own packages, once: `debootstrap --variant=minbase`
   of bookworm with Python 3.11 (python3, pip, venv, its headers, `python` as
   python-is-python3), committed with buildah as BASE_NAME. The marker
   EXTERNALLY-MANAGED is removed, as PEP 668 says a container image's distributor may:
   the Dockerfile installs with `pip` as it does on python:3.11-slim.
2. The Dockerfile built with `buildah bud --isolation chroot`, `--build-arg BASE=` that
   base (the Dockerfile's default stays python:3.11-slim for builders with a registry),
   for `--target` (default `procs`: what `bisector evaluate` needs for the procs backend).
3. The image saved as a docker-archive (`--archive`), which `scripts/real_cluster.py up
   --image` imports into containerd.

buildah keeps its images in its own store (/var/lib/containers/storage); a base already
there is reused (`--rebuild-base` makes it again). Exit 0 built, 1 a step failed, 2 bad input.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bisector import proc

ROOT = Path(__file__).resolve().parent.parent
BASE_NAME = "localhost/bisector-debian-base:bookworm"
SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
BASE_PACKAGES = (
    "python3",
    "python3-pip",
    "python3-venv",
    "python3-dev",
    "python-is-python3",
    "ca-certificates",
)
SOURCES = """\
deb {mirror} {suite} main
deb {mirror} {suite}-updates main
deb {security} {suite}-security main
"""
LONG_S = 3600.0
# Where the RUN steps see the host's CA bundle: a directory every Debian image has, empty
# (a mount point the build had to create would stay in the image as an empty file), and
# not over the image's own bundle, which its apt-get may rewrite (ca-certificates'
# postinst) while the build runs.
BUILD_CA_DIR = "/mnt"


def say(text: str) -> None:
    print(f"build-image: {text}", flush=True)


def image_exists(name: str) -> bool:
    return (
        proc.run(["buildah", "inspect", "--type", "image", name], check=False, timeout=120).code
        == 0
    )


def build_base(name: str, suite: str, mirror: str, work: Path) -> float:
    """debootstrap -> a tarball -> `buildah add` onto scratch -> commit. Returns seconds."""
    t = time.monotonic()
    rootfs = work / "rootfs"
    proc.run(
        [
            "debootstrap",
            "--variant=minbase",
            f"--include={','.join(BASE_PACKAGES)}",
            suite,
            str(rootfs),
            mirror,
        ],
        timeout=LONG_S,
    )
    security = mirror.replace("/debian", "/debian-security")
    (rootfs / "etc/apt/sources.list").write_text(
        SOURCES.format(mirror=mirror, security=security, suite=suite)
    )
    for marker in (rootfs / "usr/lib").glob("python3*/EXTERNALLY-MANAGED"):
        marker.unlink()
    shutil.rmtree(rootfs / "var/lib/apt/lists", ignore_errors=True)
    (rootfs / "var/lib/apt/lists/partial").mkdir(parents=True)
    shutil.rmtree(rootfs / "var/cache/apt/archives", ignore_errors=True)
    (rootfs / "var/cache/apt/archives/partial").mkdir(parents=True)
    tarball = work / "rootfs.tar"
    # /dev, /proc and /sys are the runtime's to provide: their mount points only.
    proc.run(
        [
            "tar",
            "-C",
            str(rootfs),
            "--numeric-owner",
            "--exclude=./dev/*",
            "--exclude=./proc/*",
            "--exclude=./sys/*",
            "-cf",
            str(tarball),
            ".",
        ],
        timeout=LONG_S,
    )
    container = proc.run(["buildah", "from", "scratch"], timeout=120).stdout.strip()
    try:
        proc.run(["buildah", "add", container, str(tarball), "/"], timeout=LONG_S)
        proc.run(
            [
                "buildah",
                "config",
                "--env",
                "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "--env",
                "LANG=C.UTF-8",
                "--cmd",
                "python3",
                "--label",
                f"org.opencontainers.image.description=Debian {suite} minbase "
                "with Python 3 (debootstrap; bisector's make image)",
                container,
            ],
            timeout=120,
        )
        proc.run(["buildah", "commit", "--rm", container, name], timeout=LONG_S)
    except BaseException:
        proc.run(["buildah", "rm", container], check=False, timeout=120)
        raise
    return time.monotonic() - t


def unmount_under(root: Path) -> None:
    table = Path("/proc/self/mountinfo").read_text().splitlines()
    points = [Path(line.split()[4]) for line in table]
    for point in sorted((p for p in points if root in p.parents), key=lambda p: -len(p.parts)):
        proc.run(["umount", "--lazy", str(point)], check=False, timeout=120)


def build_image(base: str, tag: str, target: str, ca_bundle: Path | None) -> float:
    """`buildah bud`. With `ca_bundle`, the RUN steps' pip trusts it (a bind mount named by
    the PIP_CERT build argument, not a layer: the image never holds it), for a host whose
    HTTPS goes through a proxy with its own CA (pip install from PyPI inside the build)."""
    t = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bisector-build-ca-") as ca_dir:
        mounts = []
        if ca_bundle is not None:
            shutil.copyfile(ca_bundle, Path(ca_dir) / "ca.crt")
            mounts = ["--volume", f"{ca_dir}:{BUILD_CA_DIR}:ro"]
            mounts += ["--build-arg", f"PIP_CERT={BUILD_CA_DIR}/ca.crt"]
        # --layers: a rebuild reuses the steps whose inputs did not change
        cmd = ["buildah", "bud", "--isolation", "chroot", "--layers", *mounts]
        cmd += ["--build-arg", f"BASE={base}", "--target", target, "--tag", tag]
        proc.run([*cmd, "--file", str(ROOT / "Dockerfile"), str(ROOT)], timeout=LONG_S)
    return time.monotonic() - t


def host_ca_bundle() -> Path | None:
    """The CA bundle this host's own HTTPS clients are told to trust (pip's PIP_CERT, or
    SSL_CERT_FILE), when there is one."""
    for name in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):
        value = os.environ.get(name)
        if value and Path(value).is_file():
            return Path(value)
    return None


def save_archive(tag: str, archive: Path) -> None:
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_name(archive.name + ".partial")
    partial.unlink(missing_ok=True)
    proc.run(["buildah", "push", tag, f"docker-archive:{partial}:{tag}"], timeout=LONG_S)
    partial.replace(archive)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--base-name", default=BASE_NAME)
    parser.add_argument("--rebuild-base", action="store_true")
    parser.add_argument("--suite", default=SUITE)
    parser.add_argument("--mirror", default=MIRROR)
    parser.add_argument("--tag", default="localhost/bisector:dev")
    parser.add_argument("--target", default="procs")
    parser.add_argument(
        "--ca-bundle",
        type=Path,
        default=None,
        help="CA bundle for the build's HTTPS (default: $PIP_CERT or $SSL_CERT_FILE)",
    )
    parser.add_argument("--no-host-ca", action="store_true", help="mount no CA bundle")
    parser.add_argument(
        "--archive", type=Path, default=None, help="save the image here as a docker-archive"
    )
    args = parser.parse_args(argv)
    missing = [t for t in ("buildah", "debootstrap", "tar") if shutil.which(t) is None]
    if missing:
        print(
            f"build-image: missing {', '.join(missing)}: apt-get install buildah debootstrap",
            file=sys.stderr,
        )
        return 2
    try:
        if args.rebuild_base or not image_exists(args.base_name):
            with tempfile.TemporaryDirectory(prefix="bisector-base-") as work:
                try:
                    secs = build_base(args.base_name, args.suite, args.mirror, Path(work))
                finally:
                    unmount_under(Path(work))  # debootstrap's /proc and /sys, if it was cut short
            say(f"base {args.base_name} made from Debian's packages in {secs:.0f} s")
        else:
            say(f"base {args.base_name} is in buildah's store (--rebuild-base to make it again)")
        ca_bundle = None if args.no_host_ca else (args.ca_bundle or host_ca_bundle())
        if ca_bundle is not None:
            say(f"the build's RUN steps trust {ca_bundle} (mounted, not kept)")
        secs = build_image(args.base_name, args.tag, args.target, ca_bundle)
        say(f"{args.tag} (target {args.target}) built in {secs:.0f} s")
        if args.archive is not None:
            save_archive(args.tag, args.archive)
            size = args.archive.stat().st_size / (1 << 20)
            say(f"saved as {args.archive} ({size:.0f} MiB)")
    except proc.CommandError as exc:
        print(f"build-image: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("build-image: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
