# make demo: the main job on the embedded default (the replay pool). make test: ruff + mypy + pytest.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
REPLAY_DATA ?= ../shared/data/routerdc
BENCHMARKS ?= ../shared/data/benchmarks
DEMO_ARGS ?=

.PHONY: install demo test lint bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[dev,coord]"
	touch $@

install: $(VENV)/.installed

demo: install
	$(BIN)/consortium demo --data $(REPLAY_DATA) --out reports/demo.md $(DEMO_ARGS)

lint: install
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

test: lint
	CONSORTIUM_REPLAY_DATA=$(REPLAY_DATA) CONSORTIUM_BENCHMARKS=$(BENCHMARKS) $(BIN)/pytest -q

bench: install
	$(BIN)/python bench/client_overhead.py --data $(REPLAY_DATA)
	$(BIN)/python bench/sandbox_throughput.py --humaneval $(BENCHMARKS)/humaneval/HumanEval.jsonl.gz

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
