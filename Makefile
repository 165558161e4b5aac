# Set-up and the two jobs README.md documents. Works on a fresh machine with Python 3.11 + pip.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: check test docs bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# the CPU torch wheel that lies on disk; an unpinned torch would pull a multi-GB CUDA build
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[test,pep,dask,latex,docs]'
	touch $(STAMP)

# The main job: every encoded paper's checks on the built-in problems, with the two example plug-ins (zoo members
# too). Exit 1 means findings (a violated bound, a refuted claim, an inconsistent rate), never a crash; 2 bad usage,
# 3 a check failed: see README.
EXAMPLES := --plugin examples/li2020_fedavg/src/li2020_fedavg --plugin examples/stich2019_localsgd/src/stich2019_localsgd
check: $(STAMP)
	@mkdir -p results
	$(BIN)/fedtheory check --profile quick $(EXAMPLES) --out results/check-quick.json; status=$$?; \
	  if [ $$status -gt 1 ]; then exit $$status; fi

test: $(STAMP)
	$(BIN)/python -m pytest -q

# The documentation site: docs/_build/html/index.html. Warnings are errors, references on the public API nitpicky.
docs: $(STAMP)
	$(BIN)/sphinx-build -b html -W --keep-going -n -q docs docs/_build/html

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) results .pytest_cache docs/_build docs/notebooks docs/api/generated
