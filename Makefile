# Two commands: `make book` builds the rendered book, `make test` runs every check. Both set up .venv first.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
NOTEBOOKS := $(shell find chapters -name '*.ipynb' -not -path '*/.ipynb_checkpoints/*' | sort)
export OMP_NUM_THREADS := 1

.PHONY: book test check setup data browser lint unit notebooks store-notebooks store benchmarks clean reproduce \
	reproduce-smoke

book: setup data
	$(VENV)/bin/jupyter-book build . -W -n --keep-going
	@echo "open _build/html/index.html"

# -rs lists every skipped test with its reason in the summary.
PYTEST_OPTS := -rs

# The portability check (every computing chapter again, on a second CPU kernel path) and then the smoke
# reproduction (every sweep, chapter, book build and verdict diff at `smoke`) run in their own processes alongside
# the rest, on the second core; their reports follow the main one, and any of them failing fails the target. Each
# has a time limit, so a hang ends in a report of how far it got rather than in a silent stop: on a 2-core AMD EPYC
# (2026-12-07) the portability check took 3.7 min alone, the smoke reproduction 4.3 min beside the main run.
PORTABILITY_LIMIT ?= 25m
REPRODUCE_LIMIT ?= 20m
test: setup data browser lint
	@( PYTHONUNBUFFERED=1 timeout -k 30 $(PORTABILITY_LIMIT) $(PY) -m pytest $(PYTEST_OPTS) -v --durations=0 \
	     -p no:cacheprovider tests/book/test_portability.py > .portability.log 2>&1; echo $$? > .portability.rc; \
	   PYTHONUNBUFFERED=1 timeout -k 30 $(REPRODUCE_LIMIT) $(MAKE) --no-print-directory reproduce-smoke \
	     > .reproduce.log 2>&1; echo $$? > .reproduce.rc ) & \
	  second=$$!; \
	  $(PY) -m pytest $(PYTEST_OPTS) --nbval --nbval-current-env --ignore=tests/book/test_portability.py tests chapters; \
	  main=$$?; wait $$second; \
	  portability=$$(cat .portability.rc); reproduce=$$(cat .reproduce.rc); \
	  echo "== portability check (tests/book/test_portability.py)"; cat .portability.log; \
	  case $$portability in 124|137) echo "*** the portability check ran past $(PORTABILITY_LIMIT) and was stopped";; esac; \
	  echo "== make reproduce PRESET=smoke, from scratch"; cat .reproduce.log; \
	  case $$reproduce in 124|137) echo "*** the smoke reproduction ran past $(REPRODUCE_LIMIT) and was stopped";; esac; \
	  rm -f .portability.log .portability.rc .reproduce.log .reproduce.rc; \
	  test $$main = 0 && test $$portability = 0 && test $$reproduce = 0

# Rerun the whole book at one size preset: the plan and its cost on DEVICE, every missing run, every chapter into
# _build/reproduce/PRESET (the stored outputs are not touched), its HTML book, and the verdicts that changed.
# SCALE= is the former name of PRESET= and still works.
PRESET ?= $(SCALE)
DEVICE ?= auto
WORKERS ?= 1
reproduce: setup data
	@test -n "$(PRESET)" || { echo "usage: make reproduce PRESET=smoke|book|gpu|paper [DEVICE=auto|cpu|cuda] [WORKERS=1]"; exit 2; }
	$(PY) -m fibook reproduce --preset $(PRESET) --device $(DEVICE) --workers $(WORKERS)

# The smoke reproduction of `make test`: from scratch, in a temporary results store, verdict folder and tree.
reproduce-smoke: setup data
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; trap 'exit 143' INT TERM; \
	  FIBOOK_RESULTS=$$tmp/results FIBOOK_VERDICTS=$$tmp/verdicts $(PY) -m fibook reproduce --preset smoke \
	    --device cpu --tree $$tmp/tree --against data/verdicts/book.json

setup: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "needs $(PYTHON) (set PYTHON=... to use another interpreter)"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -e .
	touch $@

# Fashion-MNIST: Debian's package when apt is there, else torchvision's download.
data: setup
	@$(PY) -m fibook data 2>/dev/null || { \
	  if command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	    apt-get install -y -q dataset-fashion-mnist || { apt-get update -q && apt-get install -y -q dataset-fashion-mnist; }; \
	  elif command -v apt-get >/dev/null && command -v sudo >/dev/null; then \
	    sudo apt-get install -y -q dataset-fashion-mnist; \
	  else $(PY) -m fibook data --download; fi; \
	  $(PY) -m fibook data; }

# Chromium for the browser check of the rendered book: Debian's package, installed when root; otherwise the
# check is skipped (listed in the test summary) and this says which package to install.
browser:
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || { \
	  if command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	    apt-get install -y -q chromium || { apt-get update -q && apt-get install -y -q chromium; }; \
	  else echo "*** Chromium is not installed: the browser check of the rendered book will be SKIPPED."; \
	    echo "*** Install Debian's package 'chromium' (sudo apt-get install chromium) to run it."; fi; }

# Style, then the package's layers (the contracts in pyproject.toml: a back arrow or a circle fails).
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

unit: setup data
	$(PY) -m pytest $(PYTEST_OPTS) tests

# The quick inner loop: lint, the import contracts and every test but those marked slow or book (training, sweeps, clusters, chapters,
# the browser); `make test` stays the full gate.
check: setup lint
	$(PY) -m pytest $(PYTEST_OPTS) -q -p no:cacheprovider -m "not slow and not book" tests

notebooks: setup data
	$(PY) -m pytest $(PYTEST_OPTS) --nbval --nbval-current-env chapters

# Re-execute chapters and store their outputs (what nbval then compares against): every chapter, or one with
# `make store CHAPTER=chapters/part3_layerwise/two_steps.ipynb`.
STORE = $(VENV)/bin/jupyter nbconvert --to notebook --execute --inplace \
	  --ExecutePreprocessor.record_timing=False --ExecutePreprocessor.timeout=1200

store-notebooks: setup data
	$(STORE) $(NOTEBOOKS)

store: setup data
	@test -n "$(CHAPTER)" || { echo "usage: make store CHAPTER=chapters/PART/NAME.ipynb"; exit 2; }
	@test -f "$(CHAPTER)" || { echo "no notebook $(CHAPTER); the chapters are: $(NOTEBOOKS)"; exit 2; }
	$(STORE) $(CHAPTER)

benchmarks: setup data
	for b in benchmarks/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf _build .pytest_cache
