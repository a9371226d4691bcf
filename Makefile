# Two entry points, each doing its own set-up on a fresh machine:
#   make demo   - bisect a synthetic Kubernetes history with the built-in kubemark simulator
#   make test   - lint, type-check and run the whole test suite
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

$(BIN)/bisector: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

.PHONY: setup demo test lint
setup: $(BIN)/bisector

demo: setup
	$(BIN)/bisector demo

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: lint
	$(BIN)/python -m pytest -n 2 -q
