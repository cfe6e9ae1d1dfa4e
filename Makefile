# Top-level entry points. Every target works from a fresh clone: the ones that
# need the venv run scripts/setup.sh first (a few seconds when nothing changed).
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

ROOT := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
ARGS ?=

.PHONY: help setup deps build demo bench report test test-fast lint fix lock clean distclean reliability screenshot

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(ROOT)/Makefile | awk -F':.*## ' '{ printf "  make %-10s %s\n", $$1, $$2 }'
	@echo "  (make demo ARGS='...' passes arguments to monologue-demo, make bench ARGS='...' to monologue-bench)"
	@echo "  (make demo ARGS='graph:=running' runs the instruction on a graph already up, e.g. from monologue-up)"
	@echo "  (make reliability ARGS=--short runs the short versions; ARGS='--only R1,R7 --details' picks figures)"

setup: ## venv + pinned requirements + colcon build (idempotent)
	bash $(ROOT)/scripts/setup.sh

deps: ## venv + pinned requirements only
	bash $(ROOT)/scripts/setup.sh --deps-only

build: ## colcon build (incremental; sets up the venv first if needed)
	bash $(ROOT)/scripts/setup.sh --force-build

demo: setup ## run monologue-demo (ARGS=... passed through)
	cd $(ROOT) && . scripts/env.sh && monologue-demo $(ARGS)

bench: setup ## IM Table 1 / SC Table 2 / IM Table 3 / CAPE Tables I-II / S Tables I-II through the graph (ARGS="--suite saycan|im_kitchen|cape|statler|statler_cups"; docs/benchmark.md)
	cd $(ROOT) && . scripts/env.sh && monologue-bench $(ARGS)

report: setup ## rebuild every generated table of docs/benchmark.md and docs/reliability.md from results/ (ARGS=check: only compare)
	cd $(ROOT) && . scripts/env.sh && python -m monologue_eval.results.cli $(or $(ARGS),build)

reliability: setup ## reliability and security figures R1-R7 + bad input as one table (ARGS=--short: the short runs; docs/reliability.md)
	cd $(ROOT) && . scripts/env.sh && python -m monologue_eval.reliability $(ARGS)

test: setup ## lint, type-check and run all tests
	bash $(ROOT)/scripts/run_tests.sh $(ARGS)

test-fast: setup ## the developer loop: lint, type-check and the unit tests on 2 workers (no graphs, no LLM)
	bash $(ROOT)/scripts/run_tests.sh --fast $(ARGS)

screenshot: setup ## regenerate docs/images/monitor.png: the web monitor during a MuJoCo episode (ARGS='--seed N')
	cd $(ROOT) && . scripts/env.sh && python scripts/screenshot.py $(ARGS)

lint: deps ## ruff + mypy only
	bash $(ROOT)/scripts/run_tests.sh --lint-only

fix: deps ## apply ruff's automatic fixes to src/ and test/
	cd $(ROOT) && . scripts/env.sh && ruff check --fix $$(ls -d src test 2>/dev/null)

lock: ## re-pin every transitive dependency into requirements/lock.txt
	bash $(ROOT)/scripts/setup.sh --deps-only --write-lock

clean: ## remove colcon's build/ install/ log/ (keeps .venv)
	rm -rf $(ROOT)/build $(ROOT)/install $(ROOT)/log

distclean: clean ## clean + remove .venv and tool caches
	rm -rf $(ROOT)/.venv $(ROOT)/.pytest_cache $(ROOT)/.mypy_cache $(ROOT)/.ruff_cache $(ROOT)/.hypothesis
	find $(ROOT)/src $(ROOT)/test -name __pycache__ -type d -prune -exec rm -rf {} + 2>/dev/null || true
