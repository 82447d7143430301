# make demo: the main job on the embedded default (the replay pool). make test: ruff + mypy + pytest
# without the end-to-end tier; make test-all: with it.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
REPLAY_DATA ?= ../shared/data/routerdc
BENCHMARKS ?= ../shared/data/benchmarks
REAL_OUTPUTS ?= ../shared/data
DEMO_ARGS ?=

.PHONY: install demo teams routing-demo serve-learns test test-all pytest-fast pytest-all test-cluster lint records coordination debates bench bench-litellm train compare evolve reliability real real-conductor conductor-records conductor-adaptive conductor-reachable real-pool real-pool-stop clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	CMAKE_ARGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF" $(BIN)/pip install -q -e ".[dev,coord,otel,ray,local,postgres,inspect,lm-eval]"
	touch $@

install: $(VENV)/.installed

# The demo evaluates the committed policy folders of these records sets (imported on first use)
# over the HTTP replay of their records; `make teams` fits the folders (seconds per set).
DEMO_RECORDS ?= gsm8k math humaneval date

demo: install $(foreach set,$(DEMO_RECORDS),records/$(set)/manifest.json)
	$(BIN)/consortium demo $(foreach set,$(DEMO_RECORDS),--records records/$(set)) --policies policies --out reports/demo.md $(DEMO_ARGS)

teams: install $(foreach set,$(DEMO_RECORDS),records/$(set)/manifest.json)
	set -e; for set in $(DEMO_RECORDS); do \
	  $(BIN)/consortium train coordinator --kind single --records records/$$set --out policies/$$set-single; \
	  $(BIN)/consortium train coordinator --kind vote --records records/$$set --out policies/$$set-vote; \
	  $(BIN)/consortium train coordinator --kind auto --records records/$$set --out policies/$$set-team; \
	done

# serve --learn over the HTTP replay of the demo's records sets: the train split as traffic, the
# adopted folder measured on the test split beside policies/<set>-team (docs/serve.md).
serve-learns: install $(foreach set,$(DEMO_RECORDS),records/$(set)/manifest.json)
	$(BIN)/python scripts/serve_learns.py --records records --policies policies --sets $(DEMO_RECORDS) --explore 1 --explore-on label --out reports/serve-learns.md

# The question-only router on the scores-only replay of RouterDC's data (docs/trinity.md).
routing-demo: install
	HF_HUB_OFFLINE=1 $(BIN)/consortium routing-demo --data $(REPLAY_DATA) --out reports/routing-demo.md $(DEMO_ARGS)

records/%/manifest.json: | install
	$(BIN)/consortium records import --data $(REAL_OUTPUTS) --out records --only $*

lint: install
	$(BIN)/ruff check src tests bench scripts
	$(BIN)/ruff format --check src tests bench scripts
	$(BIN)/mypy

# Two tiers: `make test` is every test but the end-to-end tier (marker e2e: the README and docs
# pages run top to bottom, `make demo` byte for byte, the live trained conductor); `make test-all`
# is both tiers (CI runs it). `make test-cluster` needs the Ray cluster and PostgreSQL. Where the
# CPU goes: CONSORTIUM_TEST_BUDGET=.bench/budget make test; python scripts/test_budget.py .bench/budget
TEST_ENV := CONSORTIUM_REPLAY_DATA=$(REPLAY_DATA) CONSORTIUM_BENCHMARKS=$(BENCHMARKS)
PYTEST := $(BIN)/pytest -q -n 2 --dist loadfile --durations=15

# Lint and the tests run side by side (the tests leave a core idle while they wait on servers);
# each one's output comes whole when it ends (--output-sync), and either one failing fails both.
test:
	bash scripts/system-deps.sh
	$(MAKE) --no-print-directory -j2 --output-sync=target lint pytest-fast

test-all:
	bash scripts/system-deps.sh
	$(MAKE) --no-print-directory -j2 --output-sync=target lint pytest-all

pytest-fast: install
	$(TEST_ENV) $(PYTEST) -m "not cluster and not e2e"

pytest-all: install
	$(TEST_ENV) $(PYTEST) -m "not cluster"

# A Ray head + two worker nodes (`ray start`) and a PostgreSQL server, on loopback: a few minutes.
test-cluster: install
	bash scripts/system-deps.sh
	$(TEST_ENV) $(BIN)/pytest -q -n 0 --durations=10 -m cluster

# Answer-aware coordinators and baselines on the records folders (run `make records` first).
COORD_SETS ?= gsm8k math humaneval date rb_arc_challenge rb_mbpp rb_winogrande
coordination: install
	$(BIN)/consortium coordinate $(foreach set,$(COORD_SETS),--records records/$(set)) --out reports/coordination --generations 25 --routers --transcript-text
	$(BIN)/consortium coordinate --records records/gsm8k --records records/math --out reports/coordination-optimizers --generations 15 --optimizer-table
	$(BIN)/consortium coordinate --records records/rb_arc_challenge --records records/rb_mbpp --records records/rb_winogrande --verdicts source --out reports/coordination-rb-source --generations 25 --routers

# FORD's recorded debates of real models (../shared/data/ford): every set, team and run as a
# records folder (records/, git-ignored) with their import table, then the policies of when to
# talk on the run of each set and team the report reads (records.debate_corpora.primary_folders).
comma := ,
space := $(subst ,, )
FORD_TEAMS_1 := copa-gpt35-davinci-run1 socialiqa-gpt35-davinci-run1 strategyqa-gpt35-davinci-run1 anli-gpt35-davinci-run1
FORD_REPORTED := $(addprefix ford-,$(FORD_TEAMS_1) ecare-gpt35-davinci-run1 piqa-gpt35-davinci-run3 ecare-gpt35-gpt4-run3 piqa-gpt35-gpt4-run3 ecare-gpt35-davinci-gpt4-run1 piqa-gpt35-davinci-gpt4-run1)
FORD_FOLDERS := $(addprefix ford-,$(FORD_TEAMS_1) $(foreach set,ecare piqa,$(foreach team,gpt35-davinci gpt35-gpt4,$(foreach run,run1 run2 run3,$(set)-$(team)-$(run)))) ecare-gpt35-davinci-gpt4-run1 piqa-gpt35-davinci-gpt4-run1)
debates: install
	$(BIN)/consortium records import --data $(REAL_OUTPUTS) --out records --only $(subst $(space),$(comma),$(FORD_FOLDERS)) --report reports/debates-import.md
	$(BIN)/consortium debates report $(foreach folder,$(FORD_REPORTED),--records records/$(folder)) --out reports/debates.md --http

# The recorded corpora in the records format (records/, git-ignored) and the import table.
records: install
	$(BIN)/consortium records import --data $(REAL_OUTPUTS) --out records --report reports/records-import.md

train: install
	HF_HUB_OFFLINE=1 $(BIN)/python scripts/trinity_report.py --data $(REPLAY_DATA)

compare: install
	HF_HUB_OFFLINE=1 $(BIN)/python scripts/trinity_report.py --data $(REPLAY_DATA) --compare

real-pool: install
	$(BIN)/consortium local start --pool local-pool.toml

real-pool-stop: install
	$(BIN)/consortium local stop

real: install
	HF_HUB_OFFLINE=1 $(BIN)/python scripts/real_report.py --benchmarks $(BENCHMARKS)

real-conductor: install
	HF_HUB_OFFLINE=1 $(BIN)/python scripts/conductor_report.py --benchmarks $(BENCHMARKS)

# SmolLM2 conducting the replay of the GSM8K records (reports/conductor-records-gsm8k.md): about
# 1 hour on 2 cores (warm start 41 min, GRPO 16, the validity measurements 5).
conductor-records: install records/gsm8k/manifest.json
	HF_HUB_OFFLINE=1 $(BIN)/python scripts/conductor_report.py --records records/gsm8k --sft-steps 40 --sft-batch 4 --grpo-steps 10 --held-out 20 --train-questions 200

# The adaptive conductor's claim (issue 39), reports/conductor-adaptive.md: a warm start, the
# workflow picked on train per set, SFT on those workflows with models written by name, greedy on
# 379 test questions. Takes about 2 hours on 2 cores (warm start 38 min, distillation 31, the
# evaluation 30; the picks, the sampled shapes and the served teams' run a few minutes each); the
# work folder resumes. The other runs of that issue: docs/conductor.md, their table.
conductor-adaptive: install
	HF_HUB_OFFLINE=1 $(BIN)/python scripts/conductor_adaptive.py --work .consortium/conductor-adaptive --out reports --worker-notes names --train-per-set 100 --sft-steps 64 --shape-questions 2 --shape-samples 4 --methods distil --distil-steps 100 --distil-ids names --lambdas 0.02 --test-per-set 100 --evaluate 'DISTIL λ=0.02'

conductor-reachable: install
	$(BIN)/python scripts/conductor_reachable.py

evolve: install
	$(BIN)/python scripts/evolve_report.py --data $(REPLAY_DATA)

bench: install .bench/litellm/bin/litellm
	$(BIN)/python bench/client_overhead.py --data $(REPLAY_DATA)
	$(BIN)/python bench/sandbox_throughput.py --humaneval $(BENCHMARKS)/humaneval/HumanEval.jsonl.gz
	HF_HUB_OFFLINE=1 $(BIN)/python bench/coordinator_latency.py --data $(REPLAY_DATA)
	$(BIN)/python bench/dag_efficiency.py --data $(REPLAY_DATA)
	$(BIN)/python bench/serve_load.py --data $(REPLAY_DATA)
	$(BIN)/python bench/serve_streaming.py --data $(REPLAY_DATA)
	$(BIN)/python bench/serve_vs_litellm.py --data $(REPLAY_DATA) --litellm .bench/litellm/bin/litellm

# LiteLLM's proxy pins packages that conflict with ours (rich 13): its own venv, beside ours.
.bench/litellm/bin/litellm: bench/litellm-requirements.txt
	$(PYTHON) -m venv .bench/litellm
	.bench/litellm/bin/pip install -q -r bench/litellm-requirements.txt

bench-litellm: install .bench/litellm/bin/litellm
	$(BIN)/python bench/serve_vs_litellm.py --data $(REPLAY_DATA) --litellm .bench/litellm/bin/litellm

reliability: install
	HF_HUB_OFFLINE=1 $(BIN)/python bench/reliability.py --data $(REPLAY_DATA) --calls 10000 --resumes 3 --conductor-resumes 1

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
