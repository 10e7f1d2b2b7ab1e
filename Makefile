PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export HF_HUB_OFFLINE ?= 1

.PHONY: install test demo bench eval clean

install:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test,offline,mcp]'

test:
	$(BIN)/python -m mypy memkit
	$(BIN)/python -m pytest

demo:
	bash bench/demo.sh

bench:
	$(BIN)/pip install -q -e '.[bench]'
	$(BIN)/python bench/bench.py

eval:
	$(BIN)/python bench/eval.py
	$(BIN)/python bench/eval_everyday.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
