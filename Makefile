# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
# Both create the virtual environment at .venv (once) with every Python dependency, at the
# exact versions of constraints.txt (torch is PyTorch's CPU build, 2.13.0+cpu: set
# PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu where no local wheel has it);
# `make test` also installs the Debian packages the browser tests need.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.passlab-installed

.PHONY: demo test test-fast bench docs system-deps clean

$(STAMP): pyproject.toml constraints.txt Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e ".[notebook,onnx,test,torch]"
	# torchvision's pure-Python architectures for tests/corpus.py, outside site-packages
	# (pins: [tool.passlab] in pyproject.toml; why: tests/corpus.py's docstring)
	$(PY) -m pip install -q --no-deps --upgrade --target $(VENV)/passlab-torchvision \
	  $$($(PY) -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["tool"]["passlab"]["torchvision-target"])')
	touch $(STAMP)

# Debian's Chromium for the real-browser tests (never a browser a tool downloads) and
# graphviz's `dot` for server-side graph layout. Skipped when already present.
system-deps:
	@command -v chromium >/dev/null && command -v dot >/dev/null || { \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq && apt-get install -y -qq chromium graphviz >/dev/null; }

demo: $(STAMP)
	$(VENV)/bin/passlab demo

# The suite in $(TEST_WORKERS) xdist worker processes (tests/conftest.py schedules them: a
# module's tests share a worker, a corpus model's tests too; in collection order, which
# puts the browser tests last), then the tests marked `serial` (a time limit, a signal)
# alone. Fails when either part fails or runs nothing.
TEST_WORKERS ?= 2
test: $(STAMP) system-deps
	$(PY) -m pytest -ra --durations=25 -n $(TEST_WORKERS) --dist loadscope \
	  --no-loadscope-reorder -m "not serial"; \
	  parallel=$$?; $(PY) -m pytest -ra --durations=10 -m serial $$($(PY) tests/exclusive.py); \
	  serial=$$?; \
	  echo "make test: parallel part exit $$parallel, serial part exit $$serial"; \
	  test $$parallel -eq 0 && test $$serial -eq 0

test-fast: $(STAMP)
	$(PY) -m pytest -ra -m "not slow and not browser"

bench: $(STAMP)
	$(PY) benchmarks/run.py

# The documentation site (docs/, mkdocs.yml) into site/; a warning (a broken link or
# reference) fails it.
docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict

clean:
	rm -rf $(VENV) passlab-demo .pytest_cache site
