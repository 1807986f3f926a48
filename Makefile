# The book's two commands: `make book` builds the website, `make test` runs every test.
# Both create .venv and install the locked requirements first (only Python 3.11 and make needed).

PYTHON ?= python3
# Every process make starts may cache the bytecode of what it imports (__pycache__ beside
# each module, in .venv and in this folder, all ignored by git): .venv is installed without
# compiling it (uv compiles nothing unasked), and where PYTHONDONTWRITEBYTECODE is set (the
# project's machines set it) each of the hundred-odd Pythons a `make test` starts would
# otherwise compile PyTorch, matplotlib and Jupyter from source again: `import torch` 5.3
# CPU-s against 2.3.
unexport PYTHONDONTWRITEBYTECODE
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
JB     := $(BIN)/jupyter-book build . -W -n --keep-going
# pytest-xdist workers: the 2-core CI machine runs two test processes at a time, each
# with one thread; two threads per process on two cores make small tensor ops stall.
WORKERS ?= 2
# Threads that wait sleep rather than spin (OMP_WAIT_POLICY): chapter 10 trains on 2 threads, as
# the book's checkpoint was, and spinning threads beside the other worker stall both.
PARALLEL := OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE
# The site's third-party scripts (RequireJS, the ipywidgets embed script) and MathJax's fonts,
# pinned in package.json and package-lock.json: npm installs them under _build/npm, and the book
# serves the copies in _build/vendor (see _ext/book_site.py). MathJax itself runs from
# _build/npm in the build (_ext/static_math.py). Nothing of theirs is committed.
NPM_DIR := _build/npm
VENDOR  := _build/vendor
# (Renamed when what `make vendor` copies changes, so that an older _build/vendor is made again.)
VENDOR_STAMP := $(VENDOR)/.installed-fonts
HTML_MANAGER := $(NPM_DIR)/node_modules/@jupyter-widgets/html-manager/dist
# onnxruntime-web for the live models (tx/live.py): its WebAssembly build only, one thread. Its
# 14 MB binary is served gzip-compressed (3.7 MB, whatever the server), which tx-live.js unpacks.
ORT := $(NPM_DIR)/node_modules/onnxruntime-web
ORT_WASM_GZ := $(VENDOR)/ort/ort-wasm-simd-threaded.wasm.gz
# tokenizers.js reads a Hugging Face tokenizer.json: the real model's subwords (tx.subwords).
TOKENIZERS := $(NPM_DIR)/node_modules/@huggingface/tokenizers
# The live models: the checkpoints exported to ONNX at build time (tx/export.py), served
# as _static/tx-live/NAME/ by _ext/book_site.py. Nothing generated is committed.
LIVE := _build/live
LIVE_STAMP := $(LIVE)/.exported
LIVE_CHECKPOINTS := tx/checkpoints/fr_en_small.safetensors tx/checkpoints/fr_en_real.safetensors

.PHONY: book test unit book-once site-after-book unit-once lab-after-unit zip-after-book live-after-book notebooks lab clean vendor \
	chromium site-test zip-test lab-test live-models serve lock course chapter

# The environment is locked: requirements.lock holds every package's exact version and
# SHA-256 (generated from requirements.txt by `make lock`), for Linux x86-64 and Python 3.11,
# the machines CI runs on. There pip installs the lock with --require-hashes, and tx from this
# folder without dependencies (the lock has them all). Anywhere else (macOS, Windows, another
# Python) the lock cannot apply, and .venv gets requirements.txt, unlocked.
LOCKED := $(shell $(PYTHON) -c 'import sys, platform; print(int(sys.platform == "linux" and platform.machine() == "x86_64" and sys.version_info[:2] == (3, 11)))' 2>/dev/null)
# The lock names PyTorch's CPU build, torch==2.13.0+cpu, which PyPI does not have (its Linux
# torch brings several GB of CUDA libraries). It comes from wherever pip's own configuration
# finds it (a folder of wheels in its find-links, as on the project's machines, which reach
# only the package registries), else from PyTorch's CPU wheel index.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
TORCH_PIN := torch==2.13.0+cpu
# uv installs the lock (`uv pip install --require-hashes`): 7 s where pip took 82 on the CI's
# kind of machine (bench/README.md, "Eighth pass"). uv itself comes from requirements-uv.lock,
# with its hashes, by pip. uv reads no pip configuration: the folder where pip finds PyTorch's
# wheel is given to it as --find-links (pip's dry run reports the file), and PIP_INDEX_URL,
# where set, as its index.
UV := $(BIN)/uv pip install --python $(BIN)/python $(if $(PIP_INDEX_URL),--index-url $(PIP_INDEX_URL))
TORCH_FILE = $(BIN)/python -m pip install --dry-run --ignore-installed --no-index --no-deps --quiet \
	--report - "$(TORCH_PIN)" 2>/dev/null | $(BIN)/python -c \
	'import json, sys; print(json.load(sys.stdin)["install"][0]["download_info"]["url"])' 2>/dev/null

$(STAMP): requirements.lock requirements-uv.lock requirements.txt requirements-learner.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
ifeq ($(LOCKED),1)
	$(BIN)/python -m pip install --quiet --no-compile --require-hashes -r requirements-uv.lock
	torch_file=$$($(TORCH_FILE)); \
	case "$$torch_file" in \
	  file://*) torch_links=$$(dirname "$${torch_file#file://}");; \
	  *) torch_links=$(TORCH_INDEX)/torch/;; \
	esac; \
	echo "PyTorch's CPU wheel from $$torch_links"; \
	$(UV) --require-hashes --no-deps -r requirements.lock --find-links "$$torch_links"
	$(UV) --no-deps --no-build-isolation -e .
else
	@echo "requirements.lock is for Linux x86-64 and Python 3.11: installing requirements.txt, unlocked"
	$(BIN)/python -m pip install -r requirements.txt
endif
	touch $@

## lock: regenerate requirements.lock (from requirements.txt) and requirements-learner.lock
## (from requirements-learner.txt, held to the same versions). Versions already in a lock are
## kept; `make lock LOCK_ARGS=--upgrade` moves every package to its newest release,
## `LOCK_ARGS="--upgrade-package numpy"` one. Where pip has PyTorch's CPU wheel in a folder
## (the project's machines: /opt/wheels), pass it: `make lock TORCH_WHEELS=/opt/wheels`.
# uv, not pip-tools: `uv pip compile --python-version --python-platform` locks for the CI's
# Linux x86-64 and Python 3.11 from any machine (pip-compile can only lock for the Python and
# system that runs it), and it records every file's hash. It runs from a throwaway venv, so the
# tool never enters .venv, and is pinned, so the same inputs give the same lock.
UV_VERSION := 0.13.8
LOCK_TOOLS := _build/lock-tools
TORCH_WHEELS ?= $(TORCH_INDEX)/torch/
# pip download takes a wheel's platform tag only as named (no older manylinux for a newer one).
LOCK_PLATFORMS := manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 \
	manylinux_2_12_x86_64 manylinux2010_x86_64 manylinux_2_5_x86_64 manylinux1_x86_64
# rfc3987-syntax is left out of every lock: jsonschema imports it, where installed, only to check
# the format "iri", and building its grammar at import cost 2.9 s in every Python that imports
# jsonschema (nbformat, nbgrader, jupyter-book, JupyterLab: bench/README.md, "Partial credit,
# hidden tests, a seccomp filter"). The locks are complete otherwise, so they install with --no-deps.
LOCK_FLAGS = --generate-hashes --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
	--no-emit-package rfc3987-syntax \
	--find-links $(TORCH_WHEELS) --custom-compile-command "make lock" $(LOCK_ARGS)
lock:
	rm -rf $(LOCK_TOOLS)
	$(PYTHON) -m venv $(LOCK_TOOLS)
	$(LOCK_TOOLS)/bin/python -m pip install --quiet uv==$(UV_VERSION)
	# tx itself is installed from this folder, not from the lock
	$(LOCK_TOOLS)/bin/uv pip compile requirements.txt $(LOCK_FLAGS) --no-emit-package tx -o requirements.lock
	$(LOCK_TOOLS)/bin/uv pip compile requirements-learner.txt $(LOCK_FLAGS) -c requirements.lock -o requirements-learner.lock
	# uv itself, for `make`'s install, with its hashes
	echo "uv==$(UV_VERSION)" | $(LOCK_TOOLS)/bin/uv pip compile - $(LOCK_FLAGS) -o requirements-uv.lock
	# The learner's download, measured: its files for Linux x86-64 and Python 3.11, summed into
	# the lock for the learner's install.py to announce.
	$(LOCK_TOOLS)/bin/python -m pip download --quiet --no-deps --require-hashes --only-binary :all: \
	   $(foreach p,$(LOCK_PLATFORMS),--platform $(p)) --python-version 3.11 --implementation cp \
	   --find-links $(TORCH_WHEELS) -r requirements-learner.lock -d $(LOCK_TOOLS)/wheels
	$(LOCK_TOOLS)/bin/python learner/download_size.py requirements-learner.lock $(LOCK_TOOLS)/wheels
	rm -rf $(LOCK_TOOLS)

WHEEL_DIR := _build/wheel

## book: build the website into _build/html (executes every notebook). For a class graded with
## the course (teachers.md), `make book GRADED=1` builds it without the exercises' solutions, and
## `make book SOLUTIONS_AFTER=2026-12-15` leaves them out until that date: build again on or after it.
GRADED ?=
SOLUTIONS_AFTER ?=
# For _ext/graded_site.py, in the build and in the zip step, with one date for the whole build.
BUILD_DATE := $(shell date +%F)
GRADED_ENV = TX_GRADED='$(GRADED)' TX_SOLUTIONS_AFTER='$(SOLUTIONS_AFTER)' TX_BUILD_DATE=$(BUILD_DATE)
book: $(STAMP) $(VENDOR_STAMP) $(ORT_WASM_GZ) $(LIVE_STAMP)
	# a malformed GRADED or SOLUTIONS_AFTER stops here, before the notebooks run
	$(GRADED_ENV) $(BIN)/python _ext/graded_site.py > /dev/null
	# (and Sphinx's saved environment: a build that finds no source changed fails in sphinx-external-toc
	# on the appendix's numbers, which _ext/book_site.py sets after Sphinx counts)
	rm -rf _build/html _build/.doctrees _build/jupyter_execute $(WHEEL_DIR)
	# The learner zip carries tx as a wheel (checkpoints included), built offline by the venv's
	# setuptools from a copy of the package, so no build/ or egg-info lands in the book's folder.
	# (Without __pycache__: another process of `make test` may be writing bytecode there.)
	mkdir -p $(WHEEL_DIR)/src
	cp pyproject.toml README.md $(WHEEL_DIR)/src/
	$(BIN)/python -c 'import shutil, sys; shutil.copytree("tx", sys.argv[1], ignore=shutil.ignore_patterns("__pycache__"))' $(WHEEL_DIR)/src/tx
	$(BIN)/python -m pip wheel --quiet --no-deps --no-build-isolation --no-index $(WHEEL_DIR)/src -w $(WHEEL_DIR)
	$(BIN)/python -m tx.exercises learner _build/learner --zip _build/learner-edition.zip --wheel $(WHEEL_DIR)/tx-*.whl
	# Every chapter, run $(WORKERS) at a time into the build's emptied notebook cache, which the build reads
	$(BIN)/python _ext/execute_chapters.py --jobs $(WORKERS) chapters/*.ipynb
	$(GRADED_ENV) $(JB)
	cp _build/learner-edition.zip _build/html/
	# The book's own source, for a teacher's `make course` and a reader's `make lab` (teachers.md).
	# A graded site has none: the zip is everything git tracks, the chapters' solutions, the
	# checkers' tests' right answers (tests/test_exercises_*.py) and tx itself, and one stripped of
	# them would no longer be the folder a teacher builds the course from (its check needs them).
	case "$$($(GRADED_ENV) $(BIN)/python _ext/graded_site.py)" in \
	  shown) $(BIN)/python _ext/source_zip.py _build/html/book-source.zip;; \
	  hidden) echo "graded site: no book-source.zip";; \
	  *) exit 1;; \
	esac

## test: every test, each chapter run as few times as the checks need. The strict book build
## runs every chapter top to bottom with allow_errors false (and raise_on_error), the check nbval
## makes, so `make test` leaves nbval out. Two slots of work run side by side (-j2), so that
## both cores stay busy to the end: the build (its chapters two at a time) and the unit tests
## start together; three chapters of the learner edition in real JupyterLab follow the unit tests; the site's
## browser tests, the learner zip's set-up and the live models' page tests follow the build,
## each in whichever slot is free first.
## Threads that wait sleep (OMP_WAIT_POLICY). No screenshots (TX_SCREENSHOTS=0): they are for
## people to look at, and `make site-test` and `make lab-test` take them. Timings:
## bench/README.md, "Test time".
test: chromium
	$(MAKE) --no-print-directory -j2 $(STAMP) $(VENDOR_STAMP)
	TX_SCREENSHOTS=0 OMP_WAIT_POLICY=PASSIVE $(MAKE) --no-print-directory -j2 -Otarget site-after-book lab-after-unit zip-after-book live-after-book

# The slots' work, as make targets that -j2 starts in the order `test` names them, each as
# soon as its prerequisite is done and a slot is free. Fixed queues left a core idle at the
# end: which queue ends first depends on the CPU (bench/README.md, "Seventh pass" to "Tenth
# pass"), and the last minutes ran the zip's set-up or the live tests alone.
book-once: $(STAMP) $(VENDOR_STAMP)
	$(MAKE) --no-print-directory book

# The site's browser tests against the build, in one process, so that every test file shares
# one visit of each page at each width, each a tab of one browser context (Chromium itself
# uses more than one core): 439 CPU-s with the learner zip's set-up, where four workers, each
# opening every page, used about twice that ("Sixth pass", "Seventh pass").
site-after-book: book-once
	$(MAKE) --no-print-directory site-test SITE_ARGS="--ignore=$(ZIP_TESTS) --ignore=$(LIVE_TESTS)"

unit-once: $(STAMP)
	$(MAKE) --no-print-directory unit

# Three chapters in JupyterLab, not fifteen (tests/lab/test_jupyterlab.py, SAMPLE, says which and why).
lab-after-unit: unit-once
	$(MAKE) --no-print-directory lab-test LAB_ARGS="-m lab_sample"

# The learner zip's set-up (its pip install, about 100 CPU-s) and the live models' page tests
# (they open pages of their own, so they share little with the site tests' visits).
zip-after-book: book-once
	$(BIN)/pytest $(ZIP_TESTS) -q

live-after-book: book-once
	$(BIN)/pytest $(LIVE_TESTS) -q

## unit: ruff's lint (pyproject.toml's [tool.ruff]; under a second), then tx's tests, two workers:
## --dist worksteal hands a worker that runs out of tests the pending ones of the other, so
## neither core idles behind a long test.
LINTED := tx tests bench _ext learner
unit: $(STAMP)
	$(BIN)/ruff check $(LINTED)
	$(PARALLEL) $(BIN)/pytest tests -n $(WORKERS) --dist worksteal -q --ignore=tests/site --ignore=tests/lab

## notebooks: every chapter top to bottom under nbval, without the book build (loadscope: a
## notebook's cells share one kernel, so one worker runs them all)
notebooks: $(STAMP)
	$(PARALLEL) $(BIN)/pytest --nbval-lax chapters -n $(WORKERS) --dist loadscope -q

## vendor: install the site's scripts with npm and copy them to _build/vendor
vendor: $(VENDOR_STAMP) $(ORT_WASM_GZ)

$(VENDOR_STAMP): package.json package-lock.json
	rm -rf $(NPM_DIR) $(VENDOR)
	mkdir -p $(NPM_DIR) $(VENDOR)/widgets/modules
	cp package.json package-lock.json $(NPM_DIR)/
	cd $(NPM_DIR) && npm ci --ignore-scripts --no-audit --no-fund
	mkdir -p $(VENDOR)/mathjax
	cp -R $(NPM_DIR)/node_modules/mathjax/es5/output/chtml/fonts/woff-v2 $(VENDOR)/mathjax/fonts
	cp $(NPM_DIR)/node_modules/mathjax/LICENSE $(VENDOR)/mathjax/
	cp $(NPM_DIR)/node_modules/requirejs/require.js $(VENDOR)/widgets/
	cp $(HTML_MANAGER)/embed-amd.js $(HTML_MANAGER)/*.woff2 $(HTML_MANAGER)/*.woff \
	   $(HTML_MANAGER)/*.ttf $(HTML_MANAGER)/*.eot $(HTML_MANAGER)/*.svg $(VENDOR)/widgets/
	mkdir -p $(VENDOR)/ort
	cp $(ORT)/dist/ort.wasm.min.js $(ORT)/dist/ort-wasm-simd-threaded.mjs $(VENDOR)/ort/
	mkdir -p $(VENDOR)/tokenizers
	cp $(TOKENIZERS)/dist/tokenizers.min.mjs $(TOKENIZERS)/LICENSE $(VENDOR)/tokenizers/
	touch $@

# A rule of its own, so that a _build/vendor installed before the page read the compressed binary gets it.
$(ORT_WASM_GZ): $(VENDOR_STAMP)
	rm -f $(VENDOR)/ort/ort-wasm-simd-threaded.wasm
	gzip -9 -n -c $(ORT)/dist/ort-wasm-simd-threaded.wasm > $@.tmp
	mv $@.tmp $@

## live-models: export the live blocks' checkpoints to ONNX (python -m tx.export) into _build/live
live-models: $(LIVE_STAMP)

$(LIVE_STAMP): $(STAMP) $(LIVE_CHECKPOINTS) tx/export.py
	rm -rf $(LIVE)
	$(BIN)/python -m tx.export tx/checkpoints/fr_en_small.safetensors $(LIVE)/tx-live/fr_en_small
	# int8 weights: the real model's float32 graphs alone would be 10 MB, over a page's budget
	$(BIN)/python -m tx.export tx/checkpoints/fr_en_real.safetensors $(LIVE)/tx-live/fr_en_real --quantize int8
	touch $@

## serve: the built site on http://localhost:$(PORT)/ (the live models need a server, not file://)
PORT ?= 8000
serve:
	$(BIN)/python -m http.server $(PORT) --bind 127.0.0.1 --directory _build/html

## chromium: Debian's Chromium for the browser tests (CI runs as root)
chromium:
	command -v chromium || (apt-get update && apt-get install -y chromium)

## zip-test: the learner zip of the built site unzipped into an empty folder and set up by its
## own README, as a reader does (tests/site/test_learner_zip.py; `make site-test` runs it too)
ZIP_TESTS := tests/site/test_learner_zip.py
LIVE_TESTS := tests/site/test_live.py
zip-test: $(STAMP) chromium
	$(BIN)/pytest $(ZIP_TESTS) -q

## site-test: browser tests of the built site (_build/html) in headless Chromium, with
## screenshots of every page in _build/screenshots/ (one process: each page is opened once
## at each width; `SITE_ARGS="-n 2 --dist loadfile"` runs a test file per worker, each
## opening the pages it needs: bench/README.md, "Sixth pass", measured that slower)
site-test: $(STAMP) chromium
	$(BIN)/pytest tests/site -q $(SITE_ARGS)

## lab-test: every chapter of the learner edition in real JupyterLab (headless Chromium):
## Run All, then every control of every explorer (tests/lab); screenshots in _build/screenshots-lab/.
## Run it after changing a chapter: `make test` runs three chapters there (LAB_ARGS="-m lab_sample").
lab-test: $(STAMP) chromium
	$(PARALLEL) $(BIN)/pytest tests/lab -n $(WORKERS) -q $(LAB_ARGS)

## course: the exercises as an nbgrader course for teachers, in course/ (teachers.md), then
## checked by nbgrader: in a scratch copy it grades a class of made-up students (the solutions,
## the release untouched, half solved, and wrong, unparseable, empty, aliasing, checker-replacing,
## "Correct"-printing and runaway answers) and fails unless every exercise scores what a teacher
## gives. Running it again keeps your edits.
COURSE_DIR ?= course
course: $(STAMP)
	$(PARALLEL) $(BIN)/python -m tx.exercises course $(COURSE_DIR) --check

## chapter: what a change to one chapter needs, `make chapter N=06` (N=A1 for the appendix), a
## few minutes: the chapter's rules and its learner edition (tests/test_notebooks.py, test_figure_code.py,
## test_code_column.py and test_learner_edition.py, the tests whose ids name the chapter) with its
## exercise checkers' tests (tests/test_exercises_ch06.py), selected as chapters/README.md says;
## its nbgrader assignment written and graded (make course's check, this assignment only, in
## _build/chapter-course); then the notebook top to bottom in a fresh kernel, as `make book` runs
## it (_ext/execute_chapters.py, into a cache of its own, so the build's is left alone).
CHAPTER_IDS := $(sort $(foreach p,$(notdir $(wildcard chapters/*.ipynb)),$(firstword $(subst _, ,$(p)))))
# ch06 for N=06, a1 for N=A1: the course's assignment, and the checkers' test file.
ASSIGNMENT = $(if $(filter A%,$(N)),$(subst A,a,$(N)),ch$(N))
ifneq ($(filter chapter,$(MAKECMDGOALS)),)
ifneq ($(filter $(N),$(CHAPTER_IDS))-$(words $(N)),$(N)-1)
$(error make chapter needs N=, one chapter of $(CHAPTER_IDS) (make chapter N=06), not N="$(N)")
endif
endif
chapter: $(STAMP)
	$(PARALLEL) $(BIN)/pytest -q tests/test_notebooks.py tests/test_code_column.py tests/test_figure_code.py tests/test_learner_edition.py \
	   tests/test_exercises_$(ASSIGNMENT).py -k "$(N)_ or $(ASSIGNMENT)"
	rm -rf _build/chapter-course
	$(PARALLEL) $(BIN)/python -m tx.exercises course _build/chapter-course --only $(ASSIGNMENT) --check
	$(BIN)/python _ext/execute_chapters.py --jobs 1 --cache _build/chapter-cache chapters/$(N)_*.ipynb

## lab: JupyterLab on the learner edition in workbook/, in the same environment as the tests.
## The committed chapters are never opened, so JupyterLab's autosave cannot write into them;
## re-running keeps every notebook you changed (tx.exercises learner never overwrites one).
LAB_DIR := workbook
# JupyterLab refuses to start as root (containers, CI-like machines) without --allow-root.
LAB_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)
# A learner's JupyterLab: without nbgrader's teacher menus and server extensions (the course's
# tools share this environment) and without the "Jupyter news?" toast (learner/lab-config/;
# tests/lab starts JupyterLab with the same settings).
LAB_CONFIG := $(CURDIR)/learner/lab-config
lab: $(STAMP)
	$(BIN)/python -m tx.exercises learner $(LAB_DIR)
	JUPYTER_CONFIG_PATH=$(LAB_CONFIG) $(BIN)/jupyter lab --ServerApp.root_dir=$(LAB_DIR) $(LAB_ROOT) --LabServerApp.app_settings_dir=$(LAB_CONFIG)/settings $(LAB_ARGS)

clean:
	rm -rf _build
