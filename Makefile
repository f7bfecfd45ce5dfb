# minitorch: the course and the package. `make lab` opens the course, `make test` runs every test.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.minitorch-installed
LAB_FLAGS ?=
# JupyterLab refuses to start as root unless told; containers often run as root.
LAB_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)
DEST ?=
TASK ?=
export NUMBA_ENABLE_CUDASIM ?= 1
export PYTHONPATH := $(CURDIR)

.PHONY: help venv lab test sync pytest nbtest roundtrip exercises check export clean-nbs hooks bench

help:
	@echo "make lab                 open the course in JupyterLab (LAB_FLAGS='--no-browser --port 8890' for headless)"
	@echo "make test                sync check, pytest, notebook tests, exercise round trip"
	@echo "make exercises DEST=dir  write the exercise edition to dir"
	@echo "make check TASK=0.1      run the checks of one exercise task"
	@echo "make export              export the notebooks into minitorch/ and clean them"
	@echo "make bench               print speed ratios against NumPy / PyTorch"

$(STAMP): setup.py settings.ini
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -e ".[dev]"
	@touch $@

venv: $(STAMP)

lab: $(STAMP)
	$(BIN)/jupyter lab --notebook-dir=nbs $(LAB_ROOT) $(LAB_FLAGS)

test: $(STAMP)
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory sync; \
	$(MAKE) --no-print-directory pytest; \
	$(MAKE) --no-print-directory nbtest; \
	$(MAKE) --no-print-directory roundtrip; \
	echo "make test: all steps passed in $$(( $$(date +%s) - start )) s"

sync: $(STAMP)
	@echo "== sync: notebooks export exactly the committed package, and are clean"
	PATH=$(CURDIR)/$(BIN):$$PATH bash .ci/sync_check.sh

pytest: $(STAMP)
	@echo "== pytest tests/"
	$(BIN)/python -m pytest tests/ -q -p no:cacheprovider

nbtest: $(STAMP)
	@echo "== nbdev_test: every notebook"
	$(BIN)/nbdev_test --n_workers 2 --timing

roundtrip: $(STAMP)
	@echo "== exercise edition round trip"
	$(BIN)/python .ci/roundtrip.py

exercises: $(STAMP)
	@test -n "$(DEST)" || { echo "usage: make exercises DEST=path"; exit 2; }
	$(BIN)/python .ci/exercises.py "$(DEST)"

check: $(STAMP)
	@test -n "$(TASK)" || { echo "usage: make check TASK=0.1 (tasks: $$($(BIN)/python .ci/check.py --list))"; exit 2; }
	$(BIN)/python .ci/check.py "$(TASK)"

export: $(STAMP)
	$(BIN)/nbdev_export
	$(BIN)/nbdev_clean

hooks: $(STAMP)
	$(BIN)/nbdev_install_hooks

bench: $(STAMP)
	$(BIN)/python tests/benchmark.py
