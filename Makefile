# Two entry points, both from a fresh clone:
#   make demo   set everything up, run the offline quickstart
#   make test   set everything up, run lint, type checks and the test suite
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
export LITELLM_LOCAL_MODEL_COST_MAP := True
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: setup system-deps demo test lint bench bench-langchain bench-checkers phoenix-venv

setup: $(VENV)/.installed

# torch first, pinned: that takes the local CPU wheel instead of gigabytes of CUDA packages.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[all,dev]'
	touch $@

# Debian packages the tests use for real: Prometheus + promtool, headless Chromium.
system-deps:
	@missing=""; \
	command -v promtool >/dev/null || missing="$$missing prometheus"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	if [ -n "$$missing" ]; then \
		SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

# Arize Phoenix (a trace back end) for the OTLP end-to-end test, in its own virtualenv so its
# pins never constrain ours. Pinned: about 50 s to install on a 2-core machine.
PHOENIX_VENV ?= .venv-phoenix
PHOENIX_VERSION ?= 20.26.1
phoenix-venv: $(PHOENIX_VENV)/.installed

$(PHOENIX_VENV)/.installed:
	$(PYTHON) -m venv $(PHOENIX_VENV)
	$(PHOENIX_VENV)/bin/python -m pip install -q --upgrade pip
	$(PHOENIX_VENV)/bin/python -m pip install -q arize-phoenix==$(PHOENIX_VERSION)
	touch $@

demo: setup
	$(PY) examples/quickstart.py

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy refcheck_callbacks

test: setup system-deps phoenix-venv lint
	$(VENV)/bin/pytest -q

bench: setup
	$(PY) benchmarks/engine.py

# What the LangChain handler adds to a chain's invoke, beside OpenInference's tracer.
bench-langchain: setup
	$(PY) benchmarks/langchain_overhead.py

# Checker quality: the embedded checker on every set in ../shared/data; writes
# bench-results/bench.json and bench-results/bench.html (see docs/bench.md).
bench-checkers: setup
	$(VENV)/bin/refcheck bench --dataset all --output-dir bench-results
