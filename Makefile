# seqbook: `make book` builds the executed book into _build/html; `make test` runs every
# check CI runs (.ci/run). Both need only Python 3.11 and make: on Debian they install
# what is missing (python3-venv, chromium) with apt-get.

SHELL  := /bin/bash
PYTHON ?= python3
PY     := .venv/bin/python
JB     := .venv/bin/jupyter-book
ENV    := .venv/.installed
LOGS   := _build/logs
CHECKS := lint unit nbval strict html colab-check
APT    := $(if $(filter 0,$(shell id -u)),,sudo )apt-get
INSTALL_DEB := $(APT) update -qq && DEBIAN_FRONTEND=noninteractive $(APT) install -y -qq
# The book as printed: seeds not shifted, and a claim that does not hold fails the build
# (seqbook/claims.py; a reader's own run shows a note instead).
PRINTED := SEQBOOK_SEED_SHIFT=0 SEQBOOK_CLAIMS=strict

# Progress bars are noise in built pages and logs; chapters run one thread each, side by
# side; Python keeps the bytecode it compiles for the next process (pip compiles none).
export TQDM_DISABLE := 1
export OMP_NUM_THREADS ?= 1
# The chapters' kernels draw figures at twice their resolution (book/_ipython).
export IPYTHONDIR := $(CURDIR)/book/_ipython
unexport PYTHONDONTWRITEBYTECODE

.PHONY: book test notebooks claims bench clean $(CHECKS)

# The book as printed (seeds not shifted); only the outdated chapters execute (see tools/).
book: $(ENV)
	$(PRINTED) $(PY) tools/execution_cache.py
	$(PRINTED) $(JB) build . -n

# Python's venv module (Debian ships it apart, as python3-venv).
VENV_OK := _build/.python-venv
$(VENV_OK):
	$(PYTHON) -c 'import ensurepip' 2>/dev/null || { $(INSTALL_DEB) python3-venv; }
	mkdir -p $(@D) && touch $@

# The pinned environment, installed again when requirements.txt or pyproject.toml change.
# A recent pip first: the pip that venv bundles (23.2 with Python 3.11) takes twice the
# time and CPU to resolve and install the same pins (84 s against 48 s measured).
PIP := pip==26.3
$(ENV): requirements.txt pyproject.toml | $(VENV_OK)
	test -x $(PY) || $(PYTHON) -m venv .venv
	$(PY) -m pip install --quiet --upgrade $(PIP)
	$(PY) -m pip install --quiet --no-compile -r requirements.txt
	touch $@

/usr/bin/chromium:  # the headless browser of the html checks
	$(INSTALL_DEB) chromium

# The Colab edition notebooks/*.ipynb, from book/*.md and the printed numbers of the built
# book (make book first; a chapter not built keeps its twin's numbers).
notebooks: $(ENV)
	$(PY) tools/colab_edition.py --write

# The checks run side by side, all of them even when one fails, each with its output in
# _build/logs/<check>.log. The longest chain goes first: the strict build executes the
# chapters beside lint, unit and colab-check; nbval, the other execution of the book,
# starts when those chapters are executed and fills the CPU that the strict build's
# single-threaded Sphinx phase and the html checks leave (see check-nbval below).
test:
	@rm -rf $(LOGS) && mkdir -p $(LOGS)
	@$(MAKE) -k -j8 --no-print-directory $(CHECKS:%=check-%); status=$$?; \
	failed=$$(ls $(LOGS) | sed -n 's/\.failed$$//p' | xargs); \
	if [ $$status = 0 ] && [ -z "$$failed" ]; then echo "== make test: passed at $$(date +%T)"; \
	else for check in $$failed; do echo "== $$check: what failed (_build/logs/$$check.log)"; \
	  grep -sE "$(FAILURE_LINES)" $(LOGS)/$$check.log | cut -c1-300 | head -n 12 | sed 's/^/  | /'; \
	done; echo "== make test: FAILED at $$(date +%T): $${failed:-see above}"; exit 1; fi
# The lines of a failed check's log that name what failed, repeated at the very end of the
# output (CI may keep only its tail): pytest's summary, a chapter's error, make's own.
FAILURE_LINES := ^(FAILED|ERROR)|Error:|Error\b.*:|: error:|^E  |does not hold|Traceback|\*\*\*

# colab-check builds its own bare environment, so it starts while .venv is installed
$(filter-out check-colab-check,$(CHECKS:%=check-%)): $(ENV)
check-colab-check: $(VENV_OK)
check-%:
	@if [ $* = html ] && [ -e $(LOGS)/strict.failed ] && [ ! -e _build/html/index.html ]; then \
	  touch $(LOGS)/html.failed; echo "== html: not run: strict failed and built no pages"; \
	  exit 0; fi; \
	echo "== $*: started at $$(date +%T)"; start=$$SECONDS; \
	if $(NICE_$*) $(MAKE) --no-print-directory $* > $(LOGS)/$*.log 2>&1; \
	then times > $(LOGS)/$*.cpu; echo "== $*: passed in $$((SECONDS - start)) s ($(CPU_USED))"; \
	else touch $(LOGS)/$*.failed; echo "== $*: FAILED after $$((SECONDS - start)) s:"; \
	  tail -n 40 $(LOGS)/$*.log | sed 's/^/  | /'; fi
check-html: check-strict /usr/bin/chromium
# the CPU time a check's processes used (bash's `times`: its children's user and system
# time), the measure that adds up to the budget on a machine the checks share
CPU_USED = CPU $$(tail -n 1 $(LOGS)/$*.cpu | tr ms '  ' | awk '{printf "%.0f s", 60 * ($$1 + $$3) + $$2 + $$4}')
# Niceness alone did not order the checks: on a 2-core machine where every check started
# at once, nbval at nice 15 and unit at nice 10 still ended with the strict build's
# chapters (each took half the machine), and then Sphinx and the html checks ran alone on
# one core for 220 s. So nbval waits for the strict build's chapters (the marker below),
# then runs at the lowest priority beside the strict build's Sphinx phase and html checks,
# which end the run (what little niceness gives goes to them).
NICE_unit := nice -n 10
NICE_colab-check := nice -n 10
NICE_nbval := nice -n 19
STRICT_EXECUTED := $(LOGS)/strict.executed
check-nbval: wait-for-strict-chapters
.PHONY: wait-for-strict-chapters
wait-for-strict-chapters:  # the marker, or the strict check's end (passed or failed)
	@until [ -e $(STRICT_EXECUTED) ] || [ -e $(LOGS)/strict.cpu ] || [ -e $(LOGS)/strict.failed ]; \
	do sleep 2; done

lint: $(ENV)  ## ruff and mypy, configured in pyproject.toml
	$(PY) -m ruff check .
	$(PY) -m mypy

unit: $(ENV)  ## the package's tests and the book-level checks (notebooks/ in sync, ...)
	$(PY) -m pytest -n auto tests/

# Every chapter as a reader runs it, with other seeds; a claim that does not hold fails
# (the figures are drawn and checked in the strict build, whose stderr fails it: here
# the plotting code runs, but no figure is drawn). The longest chapters go first, by the
# strict build's times where it has run, so that the workers end together.
nbval: $(ENV)
	SEQBOOK_SEED_SHIFT=1 SEQBOOK_CLAIMS=strict SEQBOOK_FIGURE_CHECKS=0 SEQBOOK_DRAW_FIGURES=0 \
	  $(PY) -m pytest -n auto --dist loadfile --nbval-lax \
	  $$($(PY) tools/execution_cache.py --longest-first notebooks || echo notebooks)

# The book as printed, from scratch, with no warning (references, citations, glue).
strict: $(ENV)
	rm -rf _build/.jupyter_cache _build/.doctrees _build/html _build/jupyter_execute
	$(PRINTED) $(PY) tools/execution_cache.py
	@if [ -d $(LOGS) ]; then touch $(STRICT_EXECUTED); fi  # make test's nbval may start
	$(PRINTED) $(JB) build . --all -n -W --keep-going

html: $(ENV) | /usr/bin/chromium  ## the built pages and the Colab edition, statically and in chromium
	$(PY) -m pytest -n auto -m built_html tests/test_browser.py tests/test_built_html.py \
	  tests/test_colab_rendered.py

# Chapters as in Colab: a bare environment, where the first cell installs seqbook
# (COLAB_CHAPTERS: the first, or chapter names; empty: all of them).
COLAB := _build/colab-venv
COLAB_CHAPTERS ?= --first
colab-check: | $(VENV_OK)
	rm -rf $(COLAB) && $(PYTHON) -m venv $(COLAB)
	$(COLAB)/bin/python -m pip install --quiet --upgrade $(PIP)
	$(COLAB)/bin/python -m pip install --quiet --no-compile torch==2.13.0 numpy matplotlib \
	  tqdm ipykernel nbclient
	$(COLAB)/bin/python tests/colab_rehearsal.py $(COLAB_CHAPTERS)

# The claims ledger (not part of `make test`: every chapter 14 times, about an hour on 2
# cores): seqbook/claims.json and the page book/claims.md. CLAIMS_ARGS="--only ssm" etc.
claims: $(ENV)
	$(PY) tools/claims_ledger.py $(CLAIMS_ARGS)

bench: $(ENV)  ## seqbook against its reference implementations, and each chapter's time
	$(PY) -m benchmarks

clean:
	rm -rf _build
