# seqbook: the README's two commands are `make book` and `make test`.
# Each target creates .venv and installs requirements.txt on first use, so both
# work on a fresh clone with nothing but Python 3.11 and make.

SHELL  := /bin/bash
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
JB     := $(VENV)/bin/jupyter-book
STAMP  := $(VENV)/.installed

# Progress bars are for people at a keyboard; in built pages and CI logs they are noise.
export TQDM_DISABLE := 1
# Keep the chapters' kernels to the two cores that the budgets assume.
export OMP_NUM_THREADS ?= 2

.PHONY: book test unit notebooks nbval build-strict html-checks colab-check bench clean

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
#    The build's log is long; on failure its warnings are repeated at the end, where a
#    CI log's tail shows them.
build-strict: $(STAMP)
	mkdir -p _build
	set -o pipefail; $(JB) build . --all -W -n --keep-going 2>&1 | tee _build/build.log \
	  || { echo "== the build's warnings and errors:"; \
	       grep -E "WARNING|ERROR|Error|Traceback" _build/build.log | grep -v IPKernelApp; \
	       exit 1; }

# 4. the rendered HTML in a real browser (Debian's chromium, headless): console
#    errors, typeset equations, images, links, solutions, search, screenshots; and
#    one chapter run as Colab runs it. Both need the build of step 3.
html-checks: $(STAMP) $(CHROMIUM)
	$(PY) -m pytest -m built_html tests/
	$(MAKE) colab-check COLAB_CHAPTERS=sequences

CHROMIUM := /usr/bin/chromium
$(CHROMIUM):
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium

## make colab-check: every notebook run as in Colab, in a clean environment holding
## only what Colab preinstalls that matters here; the install cell installs this
## checkout (SEQBOOK_PIP_SPEC) and must leave torch alone.
COLAB_VENV := _build/colab-venv
COLAB_CHAPTERS ?=
colab-check:
	rm -rf $(COLAB_VENV)
	$(PYTHON) -m venv $(COLAB_VENV)
	$(COLAB_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(COLAB_VENV)/bin/python -m pip install --quiet torch==2.13.0 numpy matplotlib tqdm ipykernel nbclient
	$(COLAB_VENV)/bin/python tests/colab_rehearsal.py $(COLAB_CHAPTERS)

## make notebooks: regenerate notebooks/*.ipynb, the Colab twins of book/*.md
notebooks: $(STAMP)
	$(PY) tests/notebook_twins.py --write

bench: $(STAMP)
	$(PY) -m benchmarks

clean:
	rm -rf _build
