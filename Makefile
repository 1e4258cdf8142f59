# verity: `make check` runs a first fact-check, `make test` runs the whole test suite.
# Both create .venv and install whatever is missing first.

PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
CLAIM ?= The Eiffel Tower is in Paris.
# llama.cpp's default build targets the build machine's exact CPU and can crash elsewhere
# ("Illegal instruction"); these flags build for any x86-64 CPU with AVX2 and FMA.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
LLAMA_VERSION ?= 0.3.36
STAMP := $(VENV)/.installed

.PHONY: install browser check test lint typecheck unit bench clean

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch first and pinned: an unpinned torch pulls a CUDA build of several GB.
	$(BIN)/pip install --quiet -c constraints.txt torch
	$(BIN)/python -c "import llama_cpp" 2>/dev/null || \
		CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" FORCE_CMAKE=1 \
		$(BIN)/pip install --quiet "llama-cpp-python[server]==$(LLAMA_VERSION)"
	$(BIN)/pip install --quiet -c constraints.txt -e ".[dev,web,serve,service,ray]"
	touch $(STAMP)

# The web UI's tests drive a real headless Chromium: Debian's package, installed where it is
# missing (Playwright's own browser download needs a network the test machines lack).
browser:
	command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)

check: install
	$(BIN)/verity check "$(CLAIM)"

lint: install
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: install
	$(BIN)/mypy

unit: install
	$(BIN)/python -m pytest -m "not integration and not live"

test: install browser lint typecheck
	$(BIN)/python -m pytest

bench: install
	$(BIN)/python bench/core.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
