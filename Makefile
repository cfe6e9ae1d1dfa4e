# Top-level entry points. Every target works from a fresh clone: the ones that
# need the venv run scripts/setup.sh first (a few seconds when nothing changed).
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

ROOT := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
ARGS ?=

.PHONY: help setup deps build demo bench report test test-fast lint fix lock clean distclean reliability screenshot finetune

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

# The tuned embedded planner (issue 30): expert data -> LoRA training (CPU, fixed seed; 200 steps of 4 examples
# is what 2 idle cores train in ~80 min, measured 0.083 examples per CPU-second; the time budget stops it, with its
# checkpoint, if the machine is slower) -> GGUF LoRA adapter into monologue_llm/adapters/ (llm:=embedded_tuned).
# ARGS go to the training (e.g. ARGS='--mlp --max-steps 100'; later options win), DATA_ARGS to the data generator.
ifndef FINETUNE_OUT
FINETUNE_OUT := runs/tune/finetune-$(shell date +%Y%m%d-%H%M%S)
endif
DATA_ARGS ?=
finetune: setup ## data + LoRA training + GGUF export of the tuned planner (ARGS=... to train, DATA_ARGS=... to data; docs/llm.md)
	cd $(ROOT) && . scripts/env.sh && \
	  python -m monologue_eval.tune data --out $(FINETUNE_OUT)/data $(DATA_ARGS) && \
	  python -m monologue_eval.tune train --data $(FINETUNE_OUT)/data --out $(FINETUNE_OUT)/train \
	    --subset 560 --batch 8 --lr 1e-3 --warmup-steps 5 --mlp --save-every 10 --time-budget-min 60 $(ARGS) && \
	  python -m monologue_eval.tune export --adapter $(FINETUNE_OUT)/train/adapter \
	    --out src/monologue_llm/monologue_llm/adapters/gemma3-270m-planner-lora.gguf

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
