# Every target depends on `install`, so on a fresh clone any one of them is the only command to type.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# A CPU build of torch where there is no GPU: torch==2.13.0 resolves to the CPU wheel on these machines;
# elsewhere pass e.g. TORCH="torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu".
TORCH ?= $(shell command -v nvidia-smi >/dev/null 2>&1 && echo "torch>=2.6,<2.15" || echo "torch==2.13.0")
TINY := artifacts/tiny
TINY_CODE := artifacts/tiny-code

PROFILE ?= tiny
CONFIG ?=
ARGS ?=
# The tiny profiles train on artifacts that `make tiny` / `make pairs` build; they are made when missing.
WORLD_DIR := $(if $(filter tiny,$(PROFILE)),$(TINY),$(if $(filter tiny-code,$(PROFILE)),$(TINY_CODE)))
TINY_WORLD := $(if $(WORLD_DIR),$(WORLD_DIR)/world.json)
TINY_PAIRS := $(if $(WORLD_DIR),$(WORLD_DIR)/pairs/train.jsonl)

.PHONY: install test lint tiny bench-rewards score grpo ppo dpo orpo pairs eval eval-compare reward-check compare \
	estimate bench-memory bench-gpu plot sweep
MODEL ?= $(TINY)/model
TASK ?= tiny
EVAL_FLAGS = --model $(MODEL) --task $(TASK) $(if $(ADAPTER),--adapter $(ADAPTER)) $(if $(DATA),--data $(DATA)) \
	$(if $(LIMIT),--limit $(LIMIT)) $(if $(K),--k $(K)) $(if $(OUT),--out $(OUT))

$(VENV)/.installed: requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(TORCH)
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

install: $(VENV)/.installed

tiny: install
	$(PY) -m recipes.tiny --out $(TINY)
	$(PY) -m recipes.tiny --world code --out $(TINY_CODE)

$(TINY)/world.json: | install
	$(PY) -m recipes.tiny --out $(TINY)

$(TINY_CODE)/world.json: | install
	$(PY) -m recipes.tiny --world code --out $(TINY_CODE)

$(TINY)/pairs/train.jsonl: | $(TINY)/world.json
	$(PY) -m recipes.pairs --config recipes/configs/tiny/pairs.yaml

$(TINY_CODE)/pairs/train.jsonl: | $(TINY_CODE)/world.json
	$(PY) -m recipes.pairs --config recipes/configs/tiny-code/pairs.yaml

# LAUNCH=<name of recipes/accelerate/*.yaml> [NPROC=n] runs the recipe under `accelerate launch`.
LAUNCHER = $(if $(LAUNCH),$(VENV)/bin/accelerate launch --config_file recipes/accelerate/$(LAUNCH).yaml \
	$(if $(NPROC),--num_processes $(NPROC)) -m,$(PY) -m)

grpo ppo pairs: install $(TINY_WORLD)
	$(LAUNCHER) recipes.$@ --config $(or $(CONFIG),recipes/configs/$(PROFILE)/$@.yaml) $(ARGS)

dpo orpo: install $(TINY_WORLD) $(TINY_PAIRS)
	$(LAUNCHER) recipes.$@ --config $(or $(CONFIG),recipes/configs/$(PROFILE)/$@.yaml) $(ARGS)

test: install
	$(PY) -m pytest

lint: install
	$(VENV)/bin/ruff check .

bench-rewards: install
	$(PY) -m rewards.bench

score: install
	$(PY) -m rewards.score $(FILE) --rewards $(REWARDS)

eval: install $(if $(filter $(TINY)/model,$(MODEL)),$(TINY)/world.json) \
	$(if $(filter $(TINY_CODE)/model,$(MODEL)),$(TINY_CODE)/world.json)
	$(PY) -m eval.run $(EVAL_FLAGS) $(ARGS)

# RUN="<run dir> [<run dir> ...]": metrics.png of one run, or the runs overlaid.
plot: install
	$(PY) -m eval.plot $(RUN)

eval-compare: install
	$(PY) -m eval.compare $(A) $(B)

reward-check: install $(TINY)/world.json
	$(PY) -m eval.reward_check $(ARGS)

# The four methods from the same start on the same prompts: results/compare/$(PROFILE)/ (summary, table, plots).
SEEDS ?= 3
compare: install $(TINY_WORLD)
	$(PY) -m eval.comparison --profile $(PROFILE) --seeds $(SEEDS) $(ARGS)

# Each method's learning rate from a small grid, chosen on the validation split: results/compare/$(PROFILE)/sweep.json
sweep: install $(TINY_WORLD)
	$(PY) -m eval.comparison --profile $(PROFILE) --sweep $(ARGS)

# The estimator against live tensors on the real recipes: 4 methods x 2 model sizes x checkpointing on/off, the 7B
# configs' settings, random-init models, ~8 min on 2 cores. ARGS=--publish writes results/memory/validation.json.
bench-memory: install
	$(PY) -m eval.memory_check $(ARGS)

# Memory per method from a model config alone: MODEL=<short name | config.json | hub id> [GPU_GB=24] [k=8] [SEQ=512]
GPU_GB ?= 24
estimate: install
	$(PY) -m eval.estimate --model $(if $(filter file,$(origin MODEL)),qwen2.5-7b,$(MODEL)) --gpu_gb $(GPU_GB) \
		$(if $(k),--k $(k)) $(if $(SEQ),--seq $(SEQ)) $(ARGS)

# One CUDA GPU, no hub: each method for a few steps on the 7B architecture with random 4-bit weights.
bench-gpu: install
	$(PY) -m eval.bench_gpu --model $(if $(filter file,$(origin MODEL)),qwen2.5-7b,$(MODEL)) $(ARGS)
