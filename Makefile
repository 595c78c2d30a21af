# Two commands: `make run` (set up everything and serve the demo) and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
HOST ?= 127.0.0.1
PORT ?= 8000
# A worker child above this resident memory (KB) is replaced after its task (2 GB).
WORKER_MAX_MEMORY_KB ?= 2097152

.PHONY: run test install install-test lint format bench fuzz worker migrate demo screenshots clean

# The local demo runs with DEBUG on (the settings' default is off, and then SECRET_KEY and
# FIELD_ENCRYPTION_KEY are required). A DEBUG=false in your environment wins.
run demo migrate worker bench: export DEBUG ?= true

$(VENV)/bin/python:
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is needed, found " + sys.version.split()[0]'
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip

$(VENV)/.installed: $(VENV)/bin/python pyproject.toml
	$(PIP) install -e .
	@touch $@

$(VENV)/.installed-test: $(VENV)/.installed pyproject.toml
	$(PIP) install -e '.[test]'
	@# irrCAC pins scipy==1.12 (numpy<2) although it runs on current ones: install it without its pins.
	$(PIP) install --no-deps 'irrCAC==0.4.4'
	@touch $@

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test

migrate: install
	$(PY) manage.py migrate --noinput
	$(PY) manage.py load_taxonomies

demo: migrate
	HOST=$(HOST) PORT=$(PORT) $(PY) manage.py seed_demo

run: demo
	$(PY) manage.py runserver $(HOST):$(PORT)

test: install-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/pytest

lint: install-test
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# A Celery worker with the beat scheduler embedded (-B: the periodic job reconciliation, see
# docs/jobs.md). Run one beat per installation: further workers use `celery -A annotator.celery worker`.
worker: install
	$(VENV)/bin/celery -A annotator.celery worker -B --loglevel INFO --max-memory-per-child $(WORKER_MAX_MEMORY_KB)

# The fuzz suite (tests/fuzz/) with many more generated inputs and a fresh seed each run; `make test`
# runs the same properties on a short seeded profile. FUZZ_EXAMPLES=N sets how many inputs per property.
fuzz: install-test
	FUZZ_PROFILE=fuzz $(VENV)/bin/pytest tests/fuzz -p no:cacheprovider

bench: install-test
	$(PY) bench/run_all.py

# README's screenshots from the demo's real pages; `make run` must be serving on HOST:PORT.
screenshots: install-test
	DEBUG=true $(PY) -m tests.e2e.readme_screenshots http://$(HOST):$(PORT) docs/screenshots

clean:
	rm -rf $(VENV) var staticfiles .pytest_cache .ruff_cache
