# One venv, one install, every check. `make test` is what CI runs; `make demo` shows the whole system.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export PATH := $(CURDIR)/.tools/bin:$(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: install tools lint test unit demo bench crds clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e . --group dev
	touch $(STAMP)

install: $(STAMP)

tools: $(STAMP)
	$(PY) -m localcluster.tools install

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

test: install tools lint
	$(PY) -m pytest

unit: install
	$(PY) -m pytest tests/unit -q

demo: install tools
	$(PY) -m localcluster.demo

# Every benchmark figure of docs/benchmarks.md and docs/elastic.md (about an hour on 2 cores).
bench: install tools
	$(PY) bench/webhook.py
	$(PY) bench/controller.py
	$(PY) bench/scale.py
	$(PY) bench/scale.py --jobs 1000 --replicas 100 --resync 20s
	$(PY) bench/elastic_trace.py --max-step 16 --min-growth 0.5
	$(PY) bench/elastic_plot.py --trace
	$(PY) bench/elastic_trace.py --max-step 16 --min-growth 0.5 \
		--trace bench/traces/philly-60-busy.json --record docs/elastic-trace-busy-run.json
	$(PY) bench/elastic_plot.py --trace --input docs/elastic-trace-busy-run.json \
		--output docs/elastic-trace-busy.png

crds: install
	$(VENV)/bin/vcjob crds --write charts/vcjob/files/crds

clean:
	rm -rf $(VENV) .tools .vcjob .mypy_cache .ruff_cache .pytest_cache
