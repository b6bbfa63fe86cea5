# Two entry points the README promises: `make lab` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup lab test test-fast bench clean lint

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[lab,batch,test,dask,service,postgres,lti-test,lint]'
	touch $(STAMP)

setup: $(STAMP)

# Jupyter refuses to run as root unless told; a fresh container or VM often is root.
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)

# The venv's bin first on PATH: the lab's terminals inherit it, so `agtool-grade` runs there. A terminal
# is an interactive shell, not a login one (JupyterLab starts `$SHELL -l` when it has no terminal of its
# own, as under `make lab LAB_ARGS=--no-browser &`, and a login shell's /etc/profile resets PATH).
# The server's root is the checkout, so the file browser reaches agtool/tools.py (the one file the learner
# edits: served from labs/ alone, the contents API refused it); the lab opens on labs/. LAB_ARGS passes
# JupyterLab options, e.g. a headless or remote start:
#   make lab LAB_ARGS="--no-browser --ip=0.0.0.0 --port=8888 --IdentityProvider.token=<a secret>"
LAB_ARGS ?=
LAB_TERMINAL = --ServerApp.terminado_settings="shell_command=$$(command -v bash || echo /bin/sh) -i"
lab: $(STAMP)
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/jupyter lab --ServerApp.root_dir="$(CURDIR)" \
		--LabApp.default_url=/lab/tree/labs $(ALLOW_ROOT) $(LAB_TERMINAL) $(LAB_ARGS)

# Everything; the 25 slowest tests are printed at the end (CI's log keeps them). Two pytest-xdist workers,
# each taking whole files (a module's fixtures, such as the stability sweep's one grading of its corpus,
# are made once), in the order of tests/helpers.py's FILE_ORDER (--no-loadscope-reorder): the files that
# wait on hubs, browsers and slow imports run beside the ones that keep the cores busy.
test: $(STAMP) e2e-deps
	$(BIN)/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder --durations=25

# The fast tier while working: unit tests, doctests and a handful of real gradings, about
# 2 minutes on 2 cores (docs/development.md says what was measured). Left out: browser, hub and notebook
# runs, the hostile corpus, the sweeps marked slow, and the modules that build a wheel, start a cluster or a
# database, or grade by the dozen (batch, the engine client's restarts, slow imports, the walls, the
# service's hardening). `make test` runs everything before a commit.
FAST_SKIPS := --ignore=tests/e2e --ignore=tests/test_notebooks.py --ignore=tests/test_capstone.py \
	--ignore=tests/test_hostile.py --ignore=tests/test_batch_hostile.py \
	--ignore=tests/test_batch.py --ignore=tests/test_slow_imports.py --ignore=tests/test_refactoring.py \
	--ignore=tests/test_grading_walls.py --ignore=tests/test_domain_dimensions.py --ignore=tests/test_dask.py --ignore=tests/test_service_hardening.py \
	--ignore=tests/test_mutation.py --ignore=tests/test_mutation_reach.py --ignore=tests/test_packaging.py --ignore=tests/test_service.py \
	--ignore=tests/test_engine_client.py --ignore=tests/test_registry.py --ignore=tests/test_step_chains.py \
	--ignore=tests/test_lti_columns.py --ignore=tests/test_done_clone.py \
	-m "not e2e and not slow"

test-fast: $(STAMP)
	$(BIN)/python -m pytest -n 2 $(FAST_SKIPS)

# mypy as pyproject.toml's [tool.mypy] says: --strict on grader/engine, grader/checks, grader/spec.py and
# grader/report.py (its `files`), the default on what they import.
.PHONY: typecheck
typecheck: $(STAMP)
	$(BIN)/mypy

# Every gate on the code itself, in order: the lint, the format (checked, never rewritten) and mypy as above.
# CI runs it right after setup.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python benchmarks/bench.py

# Every single AST change of solutions/tools.py graded on two seeds (tests/mutation): the counts,
# the mutation score, the time and the gate, lists in build/mutation/. It fails on a mutant outside
# its own step's class that tests/mutation/debt.json does not list, and on a listed one now clean.
# Each mutant is graded on the steps whose probes reach its change (tests/mutation/reach.py).
# CI runs it before `make test` on one seed, MUTATION_ARGS="--seed-pair 11" (docs/development.md has the
# measured times): the stability sweep grades the planted defects and mistakes on more seeds.
.PHONY: mutation
MUTATION_ARGS ?=
mutation: $(STAMP)
	$(BIN)/python -m tests.mutation --gate --jobs 2 --out build/mutation $(MUTATION_ARGS)

# The proof behind the gate's reach: every mutant graded on every step and on the steps that reach it;
# fails on any difference of failed checks (build/mutation/reach-proof.json). Run on an idle machine:
# a load that pushes a slow mutant over a time limit is a difference of the load, not of the reach.
.PHONY: reach-proof
reach-proof: $(STAMP)
	$(BIN)/python -m tests.mutation --prove-reach --jobs 2 --out build/mutation

# The twin of the mutation gate: behaviour-preserving rewrites of the correct modules (the solution,
# tests/alt_styles, the composed part-two styles) graded on three seeds (tests/refactoring); it fails
# when any rewrite loses a point, naming the rewrite, the check and its message (build/refactoring/).
.PHONY: refactoring
REFACTORING_ARGS ?=
refactoring: $(STAMP)
	$(BIN)/python -m tests.refactoring --gate --jobs 2 --out build/refactoring $(REFACTORING_ARGS)

# Same code, same grade: the solution, tests/alt_styles, every planted defect and mistake graded on
# 20 seeds in the batch's worker pool; fails when a module's failed checks differ between seeds.
# The same as tests/test_stability.py (which `make test` runs), as one table in build/stability/.
.PHONY: stability
stability: $(STAMP)
	$(BIN)/python -m tests.mutation.stability --jobs 2 --out build/stability

clean:
	rm -rf $(VENV) build *.egg-info site

# The documentation site (docs/, mkdocs.yml) with warnings as errors; the docs
# extra is stamped like the others. CI runs it before `make test`.
DOCS_STAMP := $(VENV)/.docs-installed

.PHONY: docs
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

$(DOCS_STAMP): pyproject.toml $(STAMP)
	$(BIN)/pip install --quiet -e '.[docs]'
	touch $(DOCS_STAMP)

# What the end-to-end tests (tests/e2e) need beyond the test extra: the e2e
# extra (Playwright's Python driver, JupyterHub) and JupyterHub's proxy,
# configurable-http-proxy, from npm into .venv/node (gitignored, removed by
# `make clean`). Both are stamped, so a second `make test` installs nothing.
# The browser is Debian's /usr/bin/chromium, a system package that .ci/run
# installs; `playwright install` is never run (it downloads a browser). On a
# machine without chromium or npm the e2e tests skip, and under $$CI they fail.
E2E_STAMP := $(VENV)/.e2e-installed
CHP := $(VENV)/node/node_modules/.bin/configurable-http-proxy
# The accessibility rules the browser tests inject (tests/e2e/axe.py).
AXE := $(VENV)/node/node_modules/axe-core/axe.min.js

# The stand-in LMS with a course of three assignments, a hub and the grading service on this machine, to try
# LTI 1.3 (docs/lti.md, "Trying it on this machine: `make lti-demo`"): prints the URLs to open; Ctrl-C stops it.
.PHONY: lti-demo
lti-demo: e2e-deps
	$(BIN)/python tests/lti_demo.py

.PHONY: e2e-deps
e2e-deps: $(E2E_STAMP) $(CHP) $(AXE)

$(E2E_STAMP): pyproject.toml $(STAMP)
	$(BIN)/pip install --quiet -e '.[lab,batch,test,dask,e2e,service,postgres,lti-test]'
	touch $(E2E_STAMP)

# configurable-http-proxy 5 needs Node >= 20; Debian's own nodejs is 18, for which 4.x is the line.
$(CHP):
	@if command -v npm >/dev/null 2>&1; then \
		major=$$(node -p 'process.versions.node.split(".")[0]'); \
		if [ "$$major" -ge 20 ]; then version=5; else version=4; fi; \
		echo "npm install configurable-http-proxy@$$version into $(VENV)/node"; \
		npm install --silent --no-audit --no-fund --prefix $(VENV)/node "configurable-http-proxy@$$version"; \
	else \
		echo "npm not found: the JupyterHub e2e test will skip (apt-get install -y npm; .ci/run does it)"; \
	fi

# axe-core 4 (WCAG 2.1 AA rules), injected into pages by tests/e2e/axe.py; pinned to its major version.
$(AXE):
	@if command -v npm >/dev/null 2>&1; then \
		echo "npm install axe-core@4 into $(VENV)/node"; \
		npm install --silent --no-audit --no-fund --prefix $(VENV)/node "axe-core@4"; \
	else \
		echo "npm not found: the accessibility e2e tests will skip (apt-get install -y npm; .ci/run does it)"; \
	fi
