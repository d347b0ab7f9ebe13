# Two commands a newcomer needs: `make run` and `make test`.
VENV    := .venv
PYTHON  := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
PYTHON3 ?= python3

# Where python3 already has everything (as on a GPU box with CuPy and no
# network), the venv sees its packages through a .pth file (python3 may itself
# be a venv, which --system-site-packages would skip) and installs only this
# package; otherwise pip installs the dependencies, plus CuPy when an NVIDIA
# driver is present.
HAVE_ALL := $(shell $(PYTHON3) -c "import cupy, click, rich, numpy, pytest, setuptools" 2>/dev/null && echo yes)
HAVE_GPU := $(shell command -v nvidia-smi >/dev/null 2>&1 && echo yes)
ifeq ($(HAVE_ALL),yes)
  PIP_INSTALL := install -q --no-deps --no-build-isolation -e .
else ifeq ($(HAVE_GPU),yes)
  PIP_INSTALL := install -q -e .[test,gpu,report]
else
  PIP_INSTALL := install -q -e .[test,report]
endif

.PHONY: install run test test-gpu clean

$(STAMP): pyproject.toml Makefile
	$(PYTHON3) -m venv $(VENV)
ifeq ($(HAVE_ALL),yes)
	$(PYTHON3) -c "import site; print('\n'.join(site.getsitepackages()))" \
	  > "$$($(PYTHON) -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/python3-packages.pth"
endif
	$(PYTHON) -m pip $(PIP_INSTALL)
	touch $@

install: $(STAMP)

# Without a GPU the run is emu's, which cannot run the Python solutions: say so
# up front (--skip-python) rather than fail on them.
run: $(STAMP)
	$(VENV)/bin/harness run ssm_selective_scan $(if $(HAVE_GPU),,--skip-python)

# CPU tests on every core (pytest-xdist, one worker per core: BLAS threads on
# top would only spin). GPU tests that only check run side by side
# (compute-sanitizer and nvcc keep the CPU busier than the GPU); those that
# time run afterwards, one at a time, so that no timing shares the GPU.
test: $(STAMP)
	OPENBLAS_NUM_THREADS=1 $(PYTHON) -m pytest -q -n auto

test-gpu: $(STAMP)
	$(PYTHON) -m pytest -q -m "gpu and not timed" -n 6 --dist loadgroup
	$(PYTHON) -m pytest -q -m "gpu and timed"

clean:
	rm -rf $(VENV) .pytest_cache
