# Cricket for Python: developer targets. `make install` once, then the rest.
PY      ?= python3
VENV    := .venv
VPY     := $(VENV)/bin/python
PYTEST  := $(VPY) -m pytest
SPECS   := rpc_spec/cricket.x
BACKEND ?= sim

.PHONY: install test test-unit test-gpu stubs coverage lint bench demo clean

$(VPY):
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -e '.[dev]'
	$(VPY) -m cricket_client.native.build || echo "warning: the native libcuda.so.1 was not built (gcc and the Python headers, python3-dev, are needed); the Python client works without it" >&2

install: $(VPY)

# The whole suite on the sim backend (what CI runs).
test: $(VPY)
	CRICKET_TEST_BACKEND=sim $(PYTEST) -q -m "not gpu" tests

# The unit tests alone: no servers, no sockets (about half a minute).
test-unit: $(VPY)
	$(PYTEST) -q tests/unit

# The behaviour suite and the gpu-marked tests against the real cuda backend (GPU node).
test-gpu:
	CRICKET_TEST_BACKEND=cuda $(PY) -m pytest -q -p no:cacheprovider tests/behaviour tests/gpu

# Regenerate every generated module from rpc_spec/.
stubs: $(VPY)
	$(VPY) -m cricket_xdr rpc_spec/portmap.x -o cricket_xdr/portmap_rpc.py
	$(VPY) -m cricket_xdr rpc_spec/cricket.x -o rpc_spec/cricket_rpc.py
	$(VPY) -m cricket_xdr rpc_spec/checkpoint.x -o rpc_spec/checkpoint_rpc.py
	$(VPY) tools/gen_mirrors.py

# docs/coverage.md and the README's coverage line, from the client modules and cuda-bindings.
coverage: $(VPY)
	$(VPY) tools/gen_coverage.py

lint: $(VPY)
	$(VPY) -m ruff check .
	$(VPY) -m mypy --ignore-missing-imports cricket_xdr cricket_server cricket_client checkpoint bench

bench: $(VPY)
	$(VPY) -m bench

demo: $(VPY)
	$(VPY) examples/demo.py --backend $(BACKEND)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache cricket_client/native/_lib
