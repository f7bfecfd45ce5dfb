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
# Data sets (MNIST) are read from $(MINITORCH_DATA)/mnist when it is set (CI: ../shared/data). Made absolute
# here, because nbdev_test runs each notebook from nbs/.
ifdef MINITORCH_DATA
export MINITORCH_DATA := $(abspath $(MINITORCH_DATA))
endif
export PYTHONPATH := $(CURDIR)

E2E_STAMP := $(VENV)/.minitorch-e2e-installed
# The CUDA tools (cuda-compile, bench-gpu) live in their own environment: NVIDIA's CUDA 12 wheels are about 1 GB.
CUDA_VENV ?= .venv-cuda
CUDA_STAMP := $(CUDA_VENV)/.minitorch-cuda-installed
CHROMIUM := /usr/bin/chromium
# Debian's libjs-mathjax (MathJax 2.7, the version nbconvert's templates configure), copied into _site/.
MATHJAX := /usr/share/javascript/mathjax/MathJax.js
# The course's JupyterLab settings (jupyter/), installed where only the course environment's JupyterLab reads them.
LAB_OVERRIDES := $(VENV)/share/jupyter/lab/settings/overrides.json
LAB_PAGE_CONFIG := $(VENV)/etc/jupyter/labconfig/page_config.json

.PHONY: help venv lab-settings lab test sync pytest nbtest roundtrip learner-loop exercises check solution export clean-nbs hooks bench e2e html tour-images \
	cuda-compile bench-gpu bench-training browser-tools

help:
	@echo "make lab                 open the course in JupyterLab (LAB_FLAGS='--no-browser --port 8890' for headless)"
	@echo "make test                sync check, pytest, exercise round trip, learner loop (which runs every notebook)"
	@echo "make nbtest              every notebook with nbdev's test runner (NBTEST_FLAGS='--path nbs/5*.ipynb --flags slow')"
	@echo "make exercises DEST=dir  write the exercise edition to dir"
	@echo "make check TASK=0.1      run the checks of one exercise task; lists the functions still to implement"
	@echo "make learner-loop        run every notebook of fresh editions in kernels, untouched and with every solution typed in"
	@echo "make solution TASK=0.1   (exercise edition) show one task's solution; APPLY=1 puts it into the notebook"
	@echo "make export              export the notebooks into minitorch/ and clean them"
	@echo "make bench               time ours against NumPy / PyTorch, with the bars of issue 11 (BENCH_FLAGS='--quick --only matmul')"
	@echo "make bench-training      python -m minitorch.gpt, then the same training in PyTorch: times and losses (5 min)"
	@echo "make cuda-compile        compile every CUDA kernel for sm_75/80/90 with NVIDIA's compiler (no GPU needed)"
	@echo "make bench-gpu           time the CUDA backend against the fast CPU backend and PyTorch (needs a GPU)"
	@echo "make e2e                 run every notebook, flagged cells too, in JupyterLab in headless Chromium;"
	@echo "                         screenshots in _screenshots/ (E2E_ONLY=01_module,43 for some notebooks)"
	@echo "make html                execute the notebooks and render them to a static site in _site/ (local MathJax)"
	@echo "make tour-images         regenerate the README tour images in nbs/images/ (runs html and e2e)"

$(STAMP): setup.py settings.ini
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -e ".[dev]"
	@touch $@

$(LAB_OVERRIDES): jupyter/overrides.json $(STAMP)
	install -D -m 644 $< $@

$(LAB_PAGE_CONFIG): jupyter/page_config.json $(STAMP)
	install -D -m 644 $< $@

lab-settings: $(LAB_OVERRIDES) $(LAB_PAGE_CONFIG)

venv: $(STAMP) lab-settings

lab: venv
	$(BIN)/jupyter lab --notebook-dir=nbs $(LAB_ROOT) $(LAB_FLAGS)

test: venv
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory sync; \
	echo "== pytest, roundtrip and learner-loop side by side (each prints when it ends): the learner loop's solved"; \
	echo "   edition runs its notebooks one after another and pytest in one worker, so the round trip yields to them"; \
	$(MAKE) --no-print-directory -j3 --output-sync=target pytest roundtrip learner-loop NICE="nice -n 10" \
	  PYTEST_FLAGS="$(TEST_WORKERS)"; \
	echo "make test: all steps passed in $$(( $$(date +%s) - start )) s"

sync: $(STAMP)
	@echo "== sync: notebooks export exactly the committed package, and are clean"
	PATH=$(abspath $(BIN)):$$PATH bash .ci/sync_check.sh

# pytest runs on every core (at most 4 workers: each holds Numba's compiled kernels, and PyTorch where installed).
# In `make test`, beside the other steps that fill the cores, one worker: each worker compiles every kernel it
# meets (most of a cold run's time), so a second one would compile most of them again.
# At full depth (CI) pytest outlasts the other steps by far: two workers there.
PYTEST_FLAGS ?= -n auto --maxprocesses 4 --dist worksteal
TEST_WORKERS = $(if $(filter full,$(MINITORCH_TEST_DEPTH)),-n 2 --dist worksteal,-n 1)
pytest: venv
	@echo "== pytest tests/ (MINITORCH_TEST_DEPTH=$${MINITORCH_TEST_DEPTH:-quick})"
	$(BIN)/python -m pytest tests/ -q -p no:cacheprovider $(PYTEST_FLAGS)

nbtest: $(STAMP)
	@echo "== nbdev_test: every notebook, each in a fresh process, two at a time"
	$(BIN)/python tools/course/nbtest.py $(NBTEST_FLAGS)

roundtrip: $(STAMP)
	@echo "== exercise edition round trip"
	$(NICE) $(BIN)/python tools/course/roundtrip.py

learner-loop: $(STAMP)
	@echo "== learner loop: two fresh editions worked through in Jupyter kernels, as a learner does (untouched, solved)"
	$(BIN)/python tools/course/learner_loop.py

exercises: $(STAMP)
	@test -n "$(DEST)" || { echo "usage: make exercises DEST=path"; exit 2; }
	$(BIN)/python tools/course/exercises.py "$(DEST)"

check: $(STAMP)
	@test -n "$(TASK)" || { echo "usage: make check TASK=0.1 (tasks: $$($(BIN)/python tools/course/check.py --list))"; exit 2; }
	@$(BIN)/nbdev_export   # the tests import the package: export what the notebooks say now
	$(BIN)/python tools/course/check.py "$(TASK)"

solution: $(STAMP)
	@test -n "$(TASK)" || { echo "usage: make solution TASK=0.1"; exit 2; }
	$(BIN)/python tools/course/solution.py "$(TASK)" $(if $(APPLY),--apply)

export: $(STAMP)
	$(BIN)/nbdev_export
	$(BIN)/nbdev_clean

hooks: $(STAMP)
	$(BIN)/nbdev_install_hooks

bench: $(STAMP)
	@# OPENBLAS_CORETYPE/L2_SIZE (set on some machines here) slow NumPy down: unset them for a fair comparison
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $(BIN)/python tools/bench/benchmark.py $(BENCH_FLAGS)

bench-training: $(STAMP)
	$(BIN)/python tools/bench/gpt_training.py

$(CUDA_STAMP): setup.py settings.ini
	@test -x $(CUDA_VENV)/bin/python || $(PYTHON) -m venv $(CUDA_VENV)
	@# numba-cuda 0.30 registers np.row_stack, which NumPy 2.5 removed: with NumPy 2.5 no kernel compiles.
	@$(CUDA_VENV)/bin/python -m pip install -q -e . "numba-cuda[cu12]" "numpy<2.5" || { \
	  echo "make $(MAKECMDGOALS): could not install numba-cuda[cu12] (NVIDIA's CUDA 12 compiler wheels, about 1 GB)"; \
	  echo "into $(CUDA_VENV): these tools need them, and the package index must be reachable."; exit 1; }
	@touch $@

cuda-compile: $(CUDA_STAMP)
	@echo "== cuda-compile: every CUDA kernel compiled for real GPUs (sm_75, sm_80, sm_90), no GPU needed"
	NUMBA_ENABLE_CUDASIM=0 $(CUDA_VENV)/bin/python tools/bench/cuda_compile.py

bench-gpu: $(CUDA_STAMP)
	NUMBA_ENABLE_CUDASIM=0 $(CUDA_VENV)/bin/python tools/bench/bench_gpu.py $(BENCH_FLAGS)

# Playwright drives Debian's Chromium; it never downloads a browser of its own (no `playwright install`).
$(E2E_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e ".[e2e]"
	@touch $@

$(CHROMIUM):
	@if [ "$$(id -u)" = 0 ]; then \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; \
	else \
	  echo "make e2e and make html need Debian's chromium at $(CHROMIUM): run 'sudo apt-get install chromium' (not root, so not installing it)"; \
	  exit 1; \
	fi

$(MATHJAX):
	@if [ "$$(id -u)" = 0 ]; then \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q libjs-mathjax; \
	else \
	  echo "make html needs Debian's libjs-mathjax at $(dir $(MATHJAX)): run 'sudo apt-get install libjs-mathjax' (not root, so not installing it)"; \
	  exit 1; \
	fi

# What the browser checks need (make e2e, make html, and the browser tests in pytest): CI installs it first.
browser-tools: $(E2E_STAMP) $(CHROMIUM) $(MATHJAX)

# E2E_ONLY=01_module,43 runs only the notebooks whose names start with one of those prefixes.
e2e: $(E2E_STAMP) $(CHROMIUM) lab-settings
	@echo "== e2e: every notebook run in JupyterLab through a browser, flagged cells too unless E2E_SKIP_FLAGS says"
	$(BIN)/python tools/site/e2e.py
	$(BIN)/python tools/site/learner_demo.py 23_tensor_functions.ipynb

html: $(E2E_STAMP) $(CHROMIUM) $(MATHJAX)
	@echo "== html: execute the notebooks, render them to _site/, check a formula renders in Chromium"
	$(BIN)/python tools/site/html_site.py _site

tour-images: html e2e
	@echo "== tour images for README, from the executed course"
	$(BIN)/python tools/site/tour.py
