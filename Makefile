# The book's two commands: `make book` builds the website, `make test` runs every test.
# Both create .venv and install requirements.txt first (only Python 3.11 and make needed).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
JB     := $(BIN)/jupyter-book build . -W -n --keep-going
# pytest-xdist workers: the 2-core CI machine runs two notebooks at a time.
WORKERS ?= 2

.PHONY: book test unit notebooks learner site lab learner-edition clean

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $@

## book: build the website into _build/html (executes every notebook)
book: $(STAMP)
	rm -rf _build/html _build/jupyter_execute
	$(BIN)/python -m tx.exercises learner _build/learner --zip _build/learner-edition.zip
	$(JB)
	cp _build/learner-edition.zip _build/html/

## test: unit tests, notebooks (nbval), learner edition, then the strict book build
test: $(STAMP) unit notebooks book

unit: $(STAMP)
	$(BIN)/pytest tests -n $(WORKERS) -q

notebooks: $(STAMP)
	$(BIN)/pytest --nbval-lax chapters -n $(WORKERS) --dist loadscope -q -p no:randomly

## lab: open the chapters in JupyterLab, in the same environment as the tests
lab: $(STAMP)
	$(BIN)/jupyter lab chapters

clean:
	rm -rf _build
