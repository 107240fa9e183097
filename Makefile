# The two commands the README promises: `make demo` and `make test`.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
# .env (see .env.example) is read with python-dotenv everywhere: the settings load
# it, and here `dotenv run --no-override` hands it to the scripts. The environment
# (and a make variable: `make demo DB_NAME=x`) wins over it, as in settings and compose.
ENV_FILE ?= .env
export ENV_FILE
WITH_ENV = $(if $(wildcard $(ENV_FILE)),$(VENV)/bin/dotenv -f $(ENV_FILE) run --no-override --,)

.PHONY: setup demo test services lint config lock

# The venv comes from the lock files in requirements/ (pinned; `make lock`
# regenerates them from pyproject.toml), installed by scripts/venv.sh with uv
# when it can be had (on PATH, or installed into the venv from PyPI), else pip.
# The demo needs only the runtime: the local model's (llama-cpp-python, a long
# build) is built by the demo in the background, while the product is served.
$(VENV)/.demo-installed: requirements/demo.lock pyproject.toml
	bash scripts/venv.sh install $(VENV) requirements/demo.lock
	touch $@

# llama.cpp is built for any x86-64 with AVX2, not for this CPU: its native
# build (0.3.36) segfaults on the first token on CPUs with AMX / AVX-512 FP16.
# Exported, so scripts/venv.sh and the demo's background build get it too.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

# Tests need everything, the local model included (llama-cpp-python built
# first, from no cache, so that CMAKE_ARGS above decide how).
$(VENV)/.installed: requirements/test.lock pyproject.toml
	bash scripts/venv.sh install $(VENV) requirements/test.lock llama-cpp-python
	touch $@ $(VENV)/.demo-installed

setup: $(VENV)/.installed
	@PY=$(PY) bash scripts/gettext.sh

# After a change to the dependencies in pyproject.toml (tests/test_locks.py
# fails until then); `make lock ARGS=--upgrade` moves every pin to the newest.
lock:
	bash scripts/venv.sh lock $(ARGS)

services:
	@$(WITH_ENV) bash scripts/services.sh

# Prints the settings make hands to the scripts (after .env).
config:
	@$(WITH_ENV) bash -c 'echo "DB_NAME=$${DB_NAME:-agentlab} DB_HOST=$${DB_HOST:-127.0.0.1} PORT=$${PORT:-8000}"'

demo: $(VENV)/.demo-installed
	@PY=$(PY) bash scripts/gettext.sh
	@$(WITH_ENV) bash scripts/services.sh
	@$(WITH_ENV) $(PY) scripts/demo.py

test: setup services
	@bash scripts/chromium.sh
	$(VENV)/bin/pytest -q

lint: setup
	$(VENV)/bin/ruff check .
