# seqbook: the README's two commands are `make book` and `make test`.
# Each target creates .venv and installs requirements.txt on first use, so both
# work on a fresh clone with nothing but Python 3.11 and make.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
JB     := $(VENV)/bin/jupyter-book
STAMP  := $(VENV)/.installed

# Progress bars are for people at a keyboard; in built pages and CI logs they are noise.
export TQDM_DISABLE := 1
# Keep the chapters' kernels to the two cores that the budgets assume.
export OMP_NUM_THREADS ?= 2

.PHONY: book test unit notebooks check-notebooks nbval build-strict html-checks bench clean

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $(STAMP)

## make book: the executed HTML book in _build/html (fails on any cell error)
book: $(STAMP)
	$(JB) build . --all

## make test: everything CI runs (.ci/run calls this)
test: unit nbval build-strict html-checks

# 1. unit tests of the package + book-level checks (notebooks/ are the twins of book/,
#    equation labels cited in the code exist in the book, ...)
unit: $(STAMP)
	$(PY) -m pytest tests/

# 2. every chapter executes top to bottom; hidden assert cells make this a check of
#    the prose's claims
nbval: $(STAMP)
	$(PY) -m pytest --nbval-lax notebooks/

# 3. the book builds with no warning at all (nitpicky references, citations, glue)
build-strict: $(STAMP)
	$(JB) build . --all -W -n --keep-going

# 4. checks of the rendered HTML (Colab links, ...): need the build of step 3
html-checks: $(STAMP)
	$(PY) -m pytest -m built_html tests/

## make notebooks: regenerate notebooks/*.ipynb, the Colab twins of book/*.md
notebooks: $(STAMP)
	$(PY) tests/notebook_twins.py --write

bench: $(STAMP)
	$(PY) -m benchmarks

clean:
	rm -rf _build
