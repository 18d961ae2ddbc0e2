# seqbook: the README's two commands are `make book` and `make test`.
# Both work on a fresh clone with nothing but Python 3.11 and make: every environment
# and system tool they need is installed by a rule that runs whenever it is missing.

SHELL  := /bin/bash
.DEFAULT_GOAL := book
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
JB     := $(VENV)/bin/jupyter-book
STAMP  := $(VENV)/.installed
LOGS   := _build/logs
# what `make test` runs, side by side (see below)
CHECKS := lint unit nbval build-strict html-checks colab-check

# Progress bars are for people at a keyboard; in built pages and CI logs they are noise.
export TQDM_DISABLE := 1
# Chapters use one thread each (torch.set_num_threads(1)); the build runs one chapter
# per core, and `make test` runs its checks side by side, so more threads only contend.
export OMP_NUM_THREADS ?= 1
# Python keeps the bytecode it compiles (in __pycache__/, ignored by git) even where the
# shell says not to: dozens of processes (kernels, test workers, builds) import the same
# modules, and compiling them in each costs seconds of CPU a process.
unexport PYTHONDONTWRITEBYTECODE

# --- system tools -----------------------------------------------------------------
# Each system tool is a file with a rule that installs it (Debian's apt-get), and every
# target that needs the tool names that file as a prerequisite, so the install runs
# whenever the file is missing. The variables are defined here, above every rule:
# make expands a rule's prerequisites as it reads the rule, so a variable defined
# below it would be empty there and the install would silently never run.
# tests/test_makefile.py checks that `make -n` shows each install when its file is
# missing, and no install when it is there.
PY_INFO   := $(shell $(PYTHON) -c 'import sys, sysconfig; print(sysconfig.get_path("stdlib"), "%d.%d" % sys.version_info[:2])' 2>/dev/null)
# Debian's headless browser, driven by playwright in tests/test_browser.py
CHROMIUM  ?= /usr/bin/chromium
CHROMIUM_PACKAGE := chromium
# `python3 -m venv` needs ensurepip, which Debian ships apart from python3
ENSUREPIP ?= $(word 1,$(PY_INFO))/ensurepip/__init__.py
ENSUREPIP_PACKAGE := python$(word 2,$(PY_INFO))-venv
SYSTEM_TOOLS := CHROMIUM ENSUREPIP
export CHROMIUM

APT_GET := $(if $(filter 0,$(shell id -u)),,sudo )apt-get
APT_INSTALL := $(APT_GET) update -qq && DEBIAN_FRONTEND=noninteractive $(APT_GET) install -y -qq

MISSING_TOOLS = $(foreach tool,$(SYSTEM_TOOLS),$(if $(wildcard $($(tool))),,$(tool)))

.PHONY: book test plan unit lint nbval build-strict html-checks colab-venv colab-check \
        notebooks bench bench-build clean system-tools $(addprefix check-,$(CHECKS)) \
        check-nbval-run check-nbval-logged

# --- environments -----------------------------------------------------------------

$(ENSUREPIP):
	$(if $(PY_INFO),,$(error $(PYTHON) is not a working Python 3: set PYTHON=/path/to/python3.11))
	$(APT_INSTALL) $(ENSUREPIP_PACKAGE)
	@test -f $@ || { echo "installed $(ENSUREPIP_PACKAGE), but $@ is still missing"; exit 1; }

# Waits for the ensurepip install: two apt-gets at once would fight over dpkg's lock.
$(CHROMIUM): | $(ENSUREPIP)
	$(APT_INSTALL) $(CHROMIUM_PACKAGE)
	@test -x $@ || { echo "installed $(CHROMIUM_PACKAGE), but $@ is still missing (CHROMIUM=$@)"; exit 1; }

system-tools: | $(ENSUREPIP) $(CHROMIUM)

# The pinned environment of the book, the tests and CI.
# tools/install_environment.py installs with uv, configured as pip is (a third of pip's
# time), and with pip where uv cannot be used. Neither compiles every module to
# bytecode (half a minute): Python compiles (and keeps, see PYTHONDONTWRITEBYTECODE
# above) the modules that are imported, when they first are.
$(STAMP): requirements.txt pyproject.toml tools/install_environment.py | $(ENSUREPIP)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) tools/install_environment.py $(PY) requirements.txt
	touch $(STAMP)

# --- the book -----------------------------------------------------------------------

## make book: the executed HTML book in _build/html (fails on any cell error).
## Incremental: only chapters whose code, imported seqbook modules or requirements.txt
## changed are executed again (book/_ext/execution_cache.py), in parallel.
book: $(STAMP)
	$(JB) build . -n

## make notebooks: regenerate notebooks/*.ipynb, the Colab twins of book/*.md
notebooks: $(STAMP)
	$(PY) tests/notebook_twins.py --write

# --- make test: everything CI runs (.ci/run calls this) ------------------------------
# The checks run side by side (all of them, even after one fails), each with its output
# in _build/logs/<check>.log. nbval executes every chapter from scratch into an emptied
# cache, then the strict build renders those outputs (executing only what nbval could
# not store, a failed chapter), then the browser checks read the pages: that chain is
# the longest, so it runs at normal priority and the others (nice, at the lowest
# priority) take the CPU time it leaves: above all the core the build leaves idle.
NICE   := nice -n 19
CACHE  := _build/.jupyter_cache

test: plan
	@mkdir -p $(LOGS)
	@start=$$SECONDS; export MAKE_TEST_START=$$(date +%s); \
	  $(MAKE) --no-print-directory -k -j 8 $(addprefix check-,$(CHECKS)); \
	  status=$$?; echo "== make test: $$( ((status)) && echo FAILED || echo passed) in $$((SECONDS - start)) s"; \
	  exit $$status

# Says what make test is about to install before it starts.
plan:
	@echo "== make test runs: $(CHECKS) (logs in $(LOGS)/)"
	@echo "== make test installs first: $(strip \
	  $(foreach tool,$(MISSING_TOOLS),Debian's $($(tool)_PACKAGE) (for $($(tool))); ) \
	  $(shell test -f $(STAMP) -a $(STAMP) -nt requirements.txt -a $(STAMP) -nt pyproject.toml \
	    -a $(STAMP) -nt tools/install_environment.py || echo "the Python environment $(VENV) (requirements.txt);") \
	  the Colab rehearsal's environment $(COLAB_VENV) (torch and what Colab preinstalls))"

# $(call logged,NAME,COMMAND): run COMMAND, its output in _build/logs/NAME.log; say
# when it starts and ends (with pytest's summary line), and on failure show the log's end.
# Under make test, "at +N s" is when it started, counted from make test's start.
define logged
@mkdir -p $(LOGS); start=$$SECONDS; \
echo "== $(1): started$${MAKE_TEST_START:+ at +$$(( $$(date +%s) - MAKE_TEST_START )) s}"; \
if { $(2); } > $(LOGS)/$(1).log 2>&1; then \
  echo "== $(1): passed in $$((SECONDS - start)) s $$(grep -E '^=+ .*(passed|failed|error).* =+$$' $(LOGS)/$(1).log | tail -n 1)"; \
else status=$$?; \
  echo "== $(1): FAILED (exit $$status) after $$((SECONDS - start)) s; the end of $(LOGS)/$(1).log:"; \
  tail -n 100 $(LOGS)/$(1).log | sed 's/^/  | /'; exit $$status; \
fi
endef

check-lint: $(STAMP)
	$(call logged,lint,$(NICE) $(MAKE) --no-print-directory lint)
check-unit: $(STAMP)
	$(call logged,unit,$(NICE) $(MAKE) --no-print-directory unit)
# nbval's outcome is kept in a file, so that the build still runs (and reports its own
# problems) when a notebook fails; check-nbval then fails at the end.
check-nbval-run: $(STAMP)
	@rm -rf $(CACHE) $(LOGS)/nbval.failed
	@$(MAKE) --no-print-directory check-nbval-logged || touch $(LOGS)/nbval.failed
check-nbval-logged: $(STAMP)
	$(call logged,nbval,$(MAKE) --no-print-directory nbval NBVAL_CACHE=$(CACHE))
check-nbval: check-nbval-run
	@test ! -e $(LOGS)/nbval.failed
check-build-strict: check-nbval-run $(STAMP)
	$(call logged,build-strict,$(MAKE) --no-print-directory build-strict REUSE_NBVAL=1)
check-html-checks: check-build-strict $(STAMP) | $(CHROMIUM)
	$(call logged,html-checks,$(MAKE) --no-print-directory html-checks)
# Its install runs beside the book's (pip keeps one core busy, the other is free).
check-colab-check: | $(ENSUREPIP)
	$(call logged,colab-check,$(NICE) $(MAKE) --no-print-directory colab-check COLAB_CHAPTERS=--first)

# 1. unit tests of the package + book-level checks (notebooks/ are the twins of book/,
#    equation labels cited in the code exist in the book, ...), on every core
unit: $(STAMP)
	$(PY) -m pytest -n auto tests/

# 2. lint (ruff, configured in pyproject.toml); LINT_FAILS=0 reports without failing.
LINT_FAILS ?= 1
lint: $(STAMP)
	$(PY) -m ruff check . $(if $(filter 1,$(LINT_FAILS)),,|| echo "ruff found problems (not fatal: LINT_FAILS=0)")

# 3. every chapter executes top to bottom, as notebooks/ (what Colab opens); hidden
#    assert cells make this a check of the prose's claims. One notebook per worker.
#    With NBVAL_CACHE=DIR, each notebook that ran without an error is stored with its
#    outputs in the build's jupyter-cache DIR (book/_ext/nbval_cache.py), so that
#    make test's build executes no chapter a second time.
NBVAL_CACHE ?=
nbval: $(STAMP)
	PYTHONPATH=book/_ext $(PY) -m pytest -n auto --dist loadfile --nbval-lax -p nbval_cache \
	  $(if $(NBVAL_CACHE),--nbval-cache=$(NBVAL_CACHE)) notebooks/

# 4. the book builds with no warning at all (nitpicky references, citations, glue),
#    every chapter executed from scratch: no cache, no environment, no old page.
#    REUSE_NBVAL=1 (make test) keeps the cache that nbval has just filled from scratch.
REUSE_NBVAL ?= 0
#    The build's log is long; on failure its warnings are repeated at the end, where a
#    CI log's tail shows them.
build-strict: $(STAMP)
	rm -rf $(if $(filter 1,$(REUSE_NBVAL)),,$(CACHE)) _build/html _build/.doctrees \
	  _build/jupyter_execute
	mkdir -p _build
	set -o pipefail; $(JB) build . --all -n -W --keep-going 2>&1 | tee _build/build.log \
	  || { echo "== the build's warnings and errors:"; \
	       grep -E "WARNING|ERROR|Error|Traceback" _build/build.log | grep -v IPKernelApp; \
	       exit 1; }

# 5. the rendered HTML, statically and in a real browser (Debian's chromium, headless):
#    console errors, typeset equations, images, links, solutions, search, screenshots.
#    On every core: each worker drives its own browser.
#    Needs the build of step 4.
#    Only the files that hold such tests are collected (collecting all 4,000 tests in
#    every worker costs seconds each); tests/test_makefile.py checks that the list is
#    complete.
HTML_TESTS := tests/test_browser.py tests/test_built_html.py
html-checks: $(STAMP) | $(CHROMIUM)
	$(PY) -m pytest -n auto -m built_html $(HTML_TESTS)

## make colab-check: every notebook run as in Colab, in a clean environment holding
## only what Colab preinstalls that matters here; the install cell installs this
## checkout (SEQBOOK_PIP_SPEC) and must leave torch alone. `make test` rehearses the
## book's first chapter (COLAB_CHAPTERS=--first).
COLAB_VENV := _build/colab-venv
COLAB_CHAPTERS ?=
# Made anew for each rehearsal, and used by one kernel: --no-compile spares compiling
# all of torch for the few modules that kernel imports.
colab-venv: | $(ENSUREPIP)
	rm -rf $(COLAB_VENV)
	$(PYTHON) -m venv $(COLAB_VENV)
	$(COLAB_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(COLAB_VENV)/bin/python -m pip install --quiet --no-compile torch==2.13.0 numpy matplotlib tqdm ipykernel nbclient

colab-check: colab-venv
	$(COLAB_VENV)/bin/python tests/colab_rehearsal.py $(COLAB_CHAPTERS)

# --- benchmarks -----------------------------------------------------------------------

bench: $(STAMP)
	$(PY) -m benchmarks

## make bench-build: time `make book` on a scratch clone of this checkout: from scratch,
## with nothing changed, and after a prose edit, a chapter's code edit and a seqbook
## module edit (benchmarks/build.py)
bench-build: $(STAMP)
	$(PY) -m benchmarks --build

clean:
	rm -rf _build

# make print-VARIABLE: a variable's value (used by tests/test_makefile.py)
print-%:
	@echo '$($*)'
