"""Every YAML in the repository parses; recipe configs parse with their recipe's own TrlParser (unknown keys are
errors), and the 7B configs name a model whose shipped config.json builds on the meta device."""

import importlib
import re
from pathlib import Path

import pytest
import torch
import yaml
from transformers import AutoConfig, AutoModelForCausalLM

from tests.conftest import REPO_ROOT
from tests.recipes.helpers import module_parser

IGNORED = {".venv", "artifacts", "runs", "results", ".git"}
ALL_YAML = sorted(p for p in REPO_ROOT.rglob("*.y*ml") if not IGNORED & set(p.relative_to(REPO_ROOT).parts))
RECIPE_CONFIGS = sorted((REPO_ROOT / "recipes" / "configs").rglob("*.yaml"))
SHIPPED_MODELS = {"Qwen/Qwen2.5-7B-Instruct": ("recipes/models/qwen2.5-7b-instruct.json", 7_615_616_512)}


def test_there_are_configs_for_every_method_and_profile():
    names = {(p.parent.name, p.stem) for p in RECIPE_CONFIGS}
    assert names >= {
        (profile, method)
        for profile in ("tiny", "7b", "tiny-code", "7b-code", "smol")
        for method in ("grpo", "ppo", "dpo", "ipo", "orpo", "pairs")
    }


@pytest.mark.parametrize("path", ALL_YAML, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_every_yaml_parses(path):
    assert isinstance(yaml.safe_load(path.read_text()), dict)


@pytest.mark.parametrize("path", RECIPE_CONFIGS, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_recipe_config_parses_with_its_recipe(path, monkeypatch):
    first_line = path.read_text().splitlines()[0]
    assert first_line.startswith("# make ") and f"recipes/configs/{path.parent.name}/{path.name}" in first_line
    # The script the first line names: recipes/<method>.py, or for IPO the DPO script with its own YAML
    module = importlib.import_module(re.search(r"python -m (recipes\.\w+)", first_line).group(1))
    assert module.__name__ == ("recipes.dpo" if path.stem == "ipo" else f"recipes.{path.stem}")
    # bf16 configs are validated as if on a machine that has bf16; here that means the CPU.
    monkeypatch.setattr(
        "sys.argv",
        ["x", "--config", str(path)]
        + (["--use_cpu", "true"] if "use_cpu" not in path.read_text() and path.stem != "pairs" else []),
    )
    parsed = module_parser(module).parse_args_and_config()
    assert parsed[0].profile == path.parent.name


@pytest.mark.parametrize(
    "path", sorted((REPO_ROOT / "recipes" / "configs").glob("7b*/*.yaml")), ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_7b_configs_build_their_model_on_meta_from_the_shipped_config(path):
    name = yaml.safe_load(path.read_text())["model_name_or_path"]
    config_file, expected = SHIPPED_MODELS[name]
    config = AutoConfig.from_pretrained(REPO_ROOT / config_file)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    assert sum(p.numel() for p in model.parameters()) == expected


def test_unknown_key_is_an_error(tmp_path, monkeypatch):
    bad = tmp_path / "dpo.yaml"
    bad.write_text(Path(REPO_ROOT / "recipes/configs/tiny/dpo.yaml").read_text() + "lora_rank: 8\n")
    monkeypatch.setattr("sys.argv", ["x", "--config", str(bad)])
    with pytest.raises(ValueError, match="lora_rank"):
        module_parser(importlib.import_module("recipes.dpo")).parse_args_and_config()


def test_pytest_turns_our_future_warnings_into_errors():
    import tomllib

    filters = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"][
        "filterwarnings"
    ]
    assert "error::FutureWarning:(core|recipes|rewards|eval|studies|tasks|tests)" in filters
    assert "error:`gradient_checkpointing` is deprecated:FutureWarning" in filters
