# Every target depends on `install`, so on a fresh clone any one of them is the only command to type.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# A CPU build of torch where there is no GPU: torch==2.13.0 resolves to the CPU wheel on these machines;
# elsewhere pass e.g. TORCH="torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu".
TORCH ?= $(shell command -v nvidia-smi >/dev/null 2>&1 && echo "torch>=2.6,<2.15" || echo "torch==2.13.0")
TINY := artifacts/tiny

.PHONY: install test lint tiny bench-rewards score

$(VENV)/.installed: requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(TORCH)
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

install: $(VENV)/.installed

tiny: install
	$(PY) -m recipes.tiny --out $(TINY)

test: install
	$(PY) -m pytest

lint: install
	$(VENV)/bin/ruff check .

bench-rewards: install
	$(PY) -m rewards.bench

score: install
	$(PY) -m rewards.score $(FILE) --rewards $(REWARDS)
