# Two entry points, both from a fresh clone:
#   make demo   set everything up, run the offline quickstart
#   make test   set everything up, run lint, type checks and the test suite
# Both install exactly what requirements/dev.txt (the lock, with sha256 hashes) says.
# Maintenance: make lock (after editing dependencies), make lock-upgrade, make test-latest.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || echo python3)
VENV ?= .venv
PY := $(VENV)/bin/python
LOCK := requirements/dev.txt
PHOENIX_LOCK := requirements/phoenix.txt
# The wheels the lock names, downloaded once: the .venv is installed from here, offline, and
# so is the wheel test's virtualenv.
WHEELHOUSE ?= .wheelhouse
export REFCHECK_WHEELHOUSE := $(abspath $(WHEELHOUSE))
export LITELLM_LOCAL_MODEL_COST_MAP := True
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

# torch 2.13.0+cpu is not on PyPI: it comes from a local wheel folder where there is one (our
# machines: /opt/wheels), else from PyTorch's CPU index.
TORCH_WHEELS ?= $(firstword $(wildcard /opt/wheels))
TORCH_SOURCE := $(if $(TORCH_WHEELS),--find-links $(TORCH_WHEELS),--extra-index-url https://download.pytorch.org/whl/cpu)

# Labelled data: ../shared/data beside the checkout when it exists, else refcheck's default
# (the user's cache directory; `refcheck data download` fills it). An explicit
# REFCHECK_DATA_DIR in the environment wins.
SHARED_DATA := $(abspath ../shared/data)
ifneq ($(wildcard $(SHARED_DATA)),)
export REFCHECK_DATA_DIR ?= $(SHARED_DATA)
endif

.PHONY: setup system-deps demo test lint lock lock-upgrade test-latest bench bench-langchain \
	bench-checkers phoenix-venv node-app bench-collect

setup: $(VENV)/.installed

# The lock is for CPython 3.11 on x86_64 Linux (manylinux_2_28).
check-python = $(1) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || { \
	echo "requirements/*.txt are locked for Python 3.11: set PYTHON=python3.11" >&2; exit 1; }

# A changed lock rebuilds the .venv from scratch, as CI does, so nothing the lock dropped stays
# behind; a changed pyproject.toml alone only reinstalls the project. The last step installs
# the project with its dependencies from the wheelhouse, offline: it fails when pyproject.toml
# asks for something the lock lacks.
$(VENV)/.installed: $(LOCK) pyproject.toml
	@$(call check-python,$(PYTHON))
	@if [ ! -x $(PY) ] || [ -n "$(filter $(LOCK),$?)" ]; then \
		set -ex; rm -rf $(VENV); $(PYTHON) -m venv $(VENV); \
		$(PY) -m pip download -q --require-hashes --no-deps $(TORCH_SOURCE) \
			-d $(WHEELHOUSE) -r $(LOCK); \
		$(PY) -m pip install -q --require-hashes --no-deps --no-index \
			--find-links $(WHEELHOUSE) -r $(LOCK); \
	fi
	$(PY) -m pip install -q --no-index --find-links $(WHEELHOUSE) --no-build-isolation \
		-e '.[all,serve,dev]' || { echo "pyproject.toml needs packages $(LOCK) lacks: run make lock" >&2; exit 1; }
	touch $@

# Debian packages the tests use for real: Prometheus + promtool, headless Chromium, Node.js and
# npm (the LangChain.js app that exports its traces to `refcheck collect`).
system-deps:
	@missing=""; \
	command -v promtool >/dev/null || missing="$$missing prometheus"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v node >/dev/null || missing="$$missing nodejs"; \
	command -v npm >/dev/null || missing="$$missing npm"; \
	if [ -n "$$missing" ]; then \
		SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

# Arize Phoenix (a trace back end) for the OTLP end-to-end test, in its own virtualenv so its
# pins never constrain ours; locked in requirements/phoenix.txt. About 50 s on 2 cores.
PHOENIX_VENV ?= .venv-phoenix
phoenix-venv: $(PHOENIX_VENV)/.installed

$(PHOENIX_VENV)/.installed: $(PHOENIX_LOCK)
	@$(call check-python,$(PYTHON))
	rm -rf $(PHOENIX_VENV)
	$(PYTHON) -m venv $(PHOENIX_VENV)
	$(PHOENIX_VENV)/bin/python -m pip install -q --require-hashes --no-deps -r $(PHOENIX_LOCK)
	touch $@

# The LangChain.js test app's packages, exactly as its package-lock.json says (npm ci).
NODE_APP := tests/integrations/otlp/node_app
node-app: $(NODE_APP)/node_modules/.installed

$(NODE_APP)/node_modules/.installed: $(NODE_APP)/package-lock.json | system-deps
	cd $(NODE_APP) && npm ci --no-audit --no-fund
	touch $@

# uv resolves the locks; it runs from its own small virtualenv (pinned in requirements/uv.txt)
# so `make lock` works even when the .venv cannot be built from the current lock.
UV_VENV := .venv-uv
UV := $(UV_VENV)/bin/uv
$(UV_VENV)/.installed: requirements/uv.txt
	rm -rf $(UV_VENV)
	$(PYTHON) -m venv $(UV_VENV)
	$(UV_VENV)/bin/python -m pip install -q --require-hashes --no-deps -r requirements/uv.txt
	touch $@

# Every lock targets CPython 3.11 on manylinux_2_28 x86_64, whatever machine resolves it, and
# keeps the versions it already pins unless an input asks otherwise (UPGRADE=--upgrade moves
# everything to the newest the ranges allow): adding a dependency changes only what it needs.
# The lock files name no index or wheel folder; the Makefile passes those when installing.
UPGRADE ?=
UV_COMPILE = $(UV) pip compile -q --generate-hashes --python-version 3.11 \
	--python-platform x86_64-manylinux_2_28 --custom-compile-command "make lock" $(UPGRADE)

lock: $(UV_VENV)/.installed
	$(UV_COMPILE) $(TORCH_SOURCE) pyproject.toml --extra all --extra serve --extra dev requirements/tools.in \
		-c requirements/constraints.in -o $(LOCK)
	$(UV_COMPILE) requirements/phoenix.in -o $(PHOENIX_LOCK)
	$(UV_COMPILE) requirements/uv.in -o requirements/uv.txt

lock-upgrade:
	$(MAKE) lock UPGRADE=--upgrade

# The suite against the newest versions pyproject.toml's ranges allow (torch stays the
# 2.13.0 CPU build of requirements/constraints.in), in .venv-latest: drift found on purpose,
# not part of CI. Prints which versions differ from the lock first.
LATEST_VENV := .venv-latest
test-latest: $(UV_VENV)/.installed setup system-deps phoenix-venv node-app
	rm -rf $(LATEST_VENV)
	$(PYTHON) -m venv $(LATEST_VENV)
	$(UV) pip compile -q --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
		$(TORCH_SOURCE) pyproject.toml --extra all --extra serve --extra dev requirements/tools.in \
		-c requirements/constraints.in -o $(LATEST_VENV)/requirements.txt
	@echo "Newer than the lock:"; diff <(grep -o '^[^ ]*==[^ ]*' $(LOCK)) \
		<(grep -o '^[^ ]*==[^ ]*' $(LATEST_VENV)/requirements.txt) | grep '^>' || echo "  nothing"
	$(LATEST_VENV)/bin/python -m pip install -q --no-deps $(TORCH_SOURCE) \
		-r $(LATEST_VENV)/requirements.txt
	$(LATEST_VENV)/bin/python -m pip install -q --no-deps --no-build-isolation -e .
	$(LATEST_VENV)/bin/pytest -q -rs

demo: setup
	$(PY) examples/quickstart.py

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy refcheck_callbacks

test: setup system-deps phoenix-venv node-app lint
	$(VENV)/bin/pytest -q -rs

bench: setup
	$(PY) benchmarks/engine.py

# What the LangChain handler adds to a chain's invoke, beside OpenInference's tracer.
bench-langchain: setup
	$(PY) benchmarks/langchain_overhead.py

# What `refcheck collect` ingests and checks on this machine (see docs/collect.md).
bench-collect: setup
	$(PY) benchmarks/collect_throughput.py
	$(PY) benchmarks/collect_memory.py

# Checker quality: the embedded checker on every labelled set in $REFCHECK_DATA_DIR; writes
# bench-results/bench.json and bench-results/bench.html (see docs/bench.md).
bench-checkers: setup
	$(VENV)/bin/refcheck bench --dataset all --output-dir bench-results
