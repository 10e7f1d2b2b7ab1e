PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export HF_HUB_OFFLINE ?= 1

.PHONY: install test demo bench bench-scale eval eval-teacher clean model judge

install:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test,offline,mcp]'

# ruff checks the style first (a few seconds), then mypy checks the types beside the tests, which run in TEST_JOBS processes (pytest-xdist): one
# more than the cores, as many tests wait on subprocesses and servers. pytest first rewrites the
# test modules once, keeping their bytecode (PYTHONDONTWRITEBYTECODE emptied: where the
# environment sets it every worker would rewrite them again, about 10 s of CPU each).
# `make test TEST_JOBS=0` runs the tests in one process.
TEST_JOBS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))
test:
	@$(BIN)/ruff check memkit tests bench || exit 1; \
	$(BIN)/python -m mypy memkit > .mypy.log 2>&1 & types=$$!; \
	trap 'kill $$types 2>/dev/null; rm -f .mypy.log; exit 130' INT TERM; \
	export PYTHONDONTWRITEBYTECODE=; \
	$(BIN)/python -m pytest -q --collect-only > /dev/null 2>&1; \
	$(BIN)/python -m pytest -n $(TEST_JOBS) --dist worksteal; tests=$$?; \
	wait $$types; typed=$$?; cat .mypy.log; rm -f .mypy.log; \
	test $$tests -eq 0 -a $$typed -eq 0

demo:
	bash bench/demo.sh

bench:
	$(BIN)/pip install -q -e '.[bench]'
	$(BIN)/python bench/bench.py
	$(BIN)/python bench/bench_judge.py
	$(BIN)/python bench/bench_imports.py --vault bench/out/judge/vault-10k -- search --fast "what rice do I use"
	$(BIN)/python bench/bench_sessions.py
	$(BIN)/python bench/bench_http.py
	$(BIN)/python bench/bench_scale.py

# each figure at 1k, 10k, 100k and 1M entries (the 1M vault is generated once, ~5 minutes, and
# cached under bench/out/synth/): bench/SCALE.md
bench-scale:
	$(BIN)/python bench/bench_scale.py

# LoCoMo (its "judged" column is the second stage) and the everyday sets with the judge (the
# default) and without it (--no-judge: the static model and words alone).
eval:
	$(BIN)/python bench/eval.py
	$(BIN)/python bench/eval_everyday.py
	$(BIN)/python bench/eval_everyday.py --no-judge
	$(BIN)/python bench/eval_everyday.py --data bench/everyday-heldout.json
	$(BIN)/python bench/eval_everyday.py --data bench/everyday-heldout.json --no-judge

# The same two evaluations with the teacher transformer served on 127.0.0.1 as an embedding
# server (memkit.yaml's embedder:): what a person running one gets. Needs the `make model` venv.
eval-teacher:
	@url=$$(mktemp); $(MODEL_VENV)/bin/python bench/teacher_server.py $$url & pid=$$!; \
	for i in $$(seq 600); do [ -s $$url ] && break; sleep 0.2; done; \
	$(BIN)/python bench/eval.py --no-thresholds --model $$(cat $$url); \
	$(BIN)/python bench/eval_everyday.py --embedder $$(cat $$url); \
	$(BIN)/python bench/eval_everyday.py --embedder $$(cat $$url) --data bench/everyday-heldout.json; \
	kill $$pid; rm -f $$url

# memkit's default model (memkit/embeddings/models/memkit-m2v), rebuilt from its teacher and corpus; see
# bench/make_model.py and the model's README.md. Build tools go into a venv of their own, outside
# the repository (torch first, alone, so pip takes its CPU build); the corpus is Debian's
# wordnet-base, fortunes and fortunes-min (apt-get install them). Caches under
# MEMKIT_MODEL_BUILD (../model-build); MODEL_ARGS passes options (--help).
MODEL_VENV ?= ../model-venv
model:
	test -f /usr/share/wordnet/data.noun -a -f /usr/share/games/fortunes/cookie || \
	  { echo "corpus missing: apt-get install wordnet-base fortunes fortunes-min" >&2; exit 1; }
	test -x $(MODEL_VENV)/bin/python || $(PY) -m venv $(MODEL_VENV)
	$(MODEL_VENV)/bin/pip install -q torch==2.13.0
	$(MODEL_VENV)/bin/pip install -q -r bench/model-requirements.txt
	$(MODEL_VENV)/bin/python bench/make_model.py $(MODEL_ARGS)
	$(MODEL_VENV)/bin/python bench/make_judge.py

# memkit's judge alone (memkit/embeddings/models/memkit-judge): the teacher exported to int8 ONNX, about a
# minute on a plain CPU (bench/make_judge.py); the same build venv as `make model`.
judge:
	test -x $(MODEL_VENV)/bin/python || $(PY) -m venv $(MODEL_VENV)
	$(MODEL_VENV)/bin/pip install -q torch==2.13.0
	$(MODEL_VENV)/bin/pip install -q -r bench/model-requirements.txt
	$(MODEL_VENV)/bin/python bench/make_judge.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
