# The book's two commands: `make book` builds the website, `make test` runs every test.
# Both create .venv and install requirements.txt first (only Python 3.11 and make needed).

PYTHON ?= python3
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
# The site's third-party scripts (MathJax, RequireJS, the ipywidgets embed script), pinned in
# package.json and package-lock.json: npm installs them under _build/npm, and the book serves
# the copies in _build/vendor (see _ext/book_site.py). Nothing of theirs is committed.
NPM_DIR := _build/npm
VENDOR  := _build/vendor
VENDOR_STAMP := $(VENDOR)/.installed
HTML_MANAGER := $(NPM_DIR)/node_modules/@jupyter-widgets/html-manager/dist
# onnxruntime-web for the live models (tx/live.py): its WebAssembly build only, one thread.
ORT := $(NPM_DIR)/node_modules/onnxruntime-web
# tokenizers.js reads a Hugging Face tokenizer.json: the real model's subwords (tx.subwords).
TOKENIZERS := $(NPM_DIR)/node_modules/@huggingface/tokenizers
# The live models: the checkpoints exported to ONNX at build time (tx/export.py), served
# as _static/tx-live/NAME/ by _ext/book_site.py. Nothing generated is committed.
LIVE := _build/live
LIVE_STAMP := $(LIVE)/.exported
LIVE_CHECKPOINTS := tx/checkpoints/fr_en_small.safetensors tx/checkpoints/fr_en_real.safetensors

.PHONY: book test unit notebooks lab clean vendor chromium site-test lab-test live-models serve

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $@

## book: build the website into _build/html (executes every notebook)
book: $(STAMP) $(VENDOR_STAMP) $(LIVE_STAMP)
	rm -rf _build/html _build/jupyter_execute
	$(BIN)/python -m tx.exercises learner _build/learner --zip _build/learner-edition.zip
	$(JB)
	cp _build/learner-edition.zip _build/html/

## test: every test, each chapter run as few times as the checks need. The strict book build
## runs every chapter top to bottom with allow_errors false (and raise_on_error), the check nbval
## makes, so `make test` leaves nbval out; it builds the book beside the pytest run (-j2: the
## build runs one notebook at a time, pytest's workers use its idle core; threads that wait
## sleep, OMP_WAIT_POLICY), then runs the site's browser tests against that build and the
## learner edition in real JupyterLab. Timings: bench/README.md, "Test time".
test: $(STAMP) $(VENDOR_STAMP)
	OMP_WAIT_POLICY=PASSIVE $(MAKE) --no-print-directory -j2 -Otarget unit book
	$(MAKE) --no-print-directory site-test
	$(MAKE) --no-print-directory lab-test

## unit: tx's tests, two workers: --dist worksteal hands a worker that runs out of tests the
## pending ones of the other, so neither core idles behind a long test.
unit: $(STAMP)
	$(PARALLEL) $(BIN)/pytest tests -n $(WORKERS) --dist worksteal -q --ignore=tests/site --ignore=tests/lab

## notebooks: every chapter top to bottom under nbval, without the book build (loadscope: a
## notebook's cells share one kernel, so one worker runs them all)
notebooks: $(STAMP)
	$(PARALLEL) $(BIN)/pytest --nbval-lax chapters -n $(WORKERS) --dist loadscope -q

## vendor: install the site's scripts with npm and copy them to _build/vendor
vendor: $(VENDOR_STAMP)

$(VENDOR_STAMP): package.json package-lock.json
	rm -rf $(NPM_DIR) $(VENDOR)
	mkdir -p $(NPM_DIR) $(VENDOR)/widgets/modules
	cp package.json package-lock.json $(NPM_DIR)/
	cd $(NPM_DIR) && npm ci --ignore-scripts --no-audit --no-fund
	cp -R $(NPM_DIR)/node_modules/mathjax/es5 $(VENDOR)/mathjax
	cp $(NPM_DIR)/node_modules/mathjax/LICENSE $(VENDOR)/mathjax/
	cp $(NPM_DIR)/node_modules/requirejs/require.js $(VENDOR)/widgets/
	cp $(HTML_MANAGER)/embed-amd.js $(HTML_MANAGER)/*.woff2 $(HTML_MANAGER)/*.woff \
	   $(HTML_MANAGER)/*.ttf $(HTML_MANAGER)/*.eot $(HTML_MANAGER)/*.svg $(VENDOR)/widgets/
	mkdir -p $(VENDOR)/ort
	cp $(ORT)/dist/ort.wasm.min.js $(ORT)/dist/ort-wasm-simd-threaded.mjs $(ORT)/dist/ort-wasm-simd-threaded.wasm \
	   $(VENDOR)/ort/
	mkdir -p $(VENDOR)/tokenizers
	cp $(TOKENIZERS)/dist/tokenizers.min.mjs $(TOKENIZERS)/LICENSE $(VENDOR)/tokenizers/
	touch $@

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

## site-test: browser tests of the built site (_build/html) in headless Chromium
site-test: $(STAMP) chromium
	$(BIN)/pytest tests/site -q

## lab-test: every chapter of the learner edition in real JupyterLab (headless Chromium):
## Run All, then every control of every explorer (tests/lab)
lab-test: $(STAMP) chromium
	$(PARALLEL) $(BIN)/pytest tests/lab -n $(WORKERS) -q

## lab: JupyterLab on the learner edition in workbook/, in the same environment as the tests.
## The committed chapters are never opened, so JupyterLab's autosave cannot write into them;
## re-running keeps every notebook you changed (tx.exercises learner never overwrites one).
LAB_DIR := workbook
# JupyterLab refuses to start as root (containers, CI-like machines) without --allow-root.
LAB_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)
lab: $(STAMP)
	$(BIN)/python -m tx.exercises learner $(LAB_DIR)
	$(BIN)/jupyter lab --ServerApp.root_dir=$(LAB_DIR) $(LAB_ROOT) $(LAB_ARGS)

clean:
	rm -rf _build
