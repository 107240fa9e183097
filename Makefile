# The two commands the README promises: `make demo` and `make test`.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8000

.PHONY: setup demo test services lint

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e ".[dev,local]"
	touch $@

setup: $(VENV)/.installed

services:
	@bash scripts/services.sh

demo: setup services
	$(PY) manage.py migrate --noinput
	$(PY) manage.py loaddemo --runs 30
	PORT=$(PORT) bash scripts/demo.sh

test: setup services
	@bash scripts/chromium.sh
	$(VENV)/bin/pytest -q

lint: setup
	$(VENV)/bin/ruff check .
