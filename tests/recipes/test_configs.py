"""Every YAML in the repository parses; recipe configs parse with their recipe's own TrlParser (unknown keys are
errors), and the 7B configs name a model whose shipped config.json builds on the meta device."""

import importlib
import json
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


# Where each profile's prompts can be read offline: the shipped worlds' held-out splits, the benchmarks' fixtures.
PROFILE_ROWS = {
    "tiny": "tasks/worlds/tiny/data/test.jsonl",
    "tiny-code": "tasks/worlds/tiny-code/data/test.jsonl",
    "tiny-length": "tasks/worlds/tiny-length/data/test.jsonl",
    "smol": "tasks/worlds/smol/data/test.jsonl",
    "7b": "tests/fixtures/gsm8k_sample.jsonl",
    "7b-code": "tests/fixtures/mbpp_sample.jsonl",
    "7b-math": "tests/fixtures/math500_sample.jsonl",
}
PROMPTING = [p for p in RECIPE_CONFIGS if p.stem in ("grpo", "ppo", "pairs")]  # DPO/IPO/ORPO: make pairs' prompts


def config_prompt_arguments(path: Path, data: str):
    """The config's prompt settings, on local rows instead of its dataset."""
    from dataclasses import fields

    from core.inputs.arguments import PromptArguments

    config = yaml.safe_load(path.read_text())
    names = {f.name for f in fields(PromptArguments)} - {"dataset_name", "dataset_config", "dataset_train_split"}
    return PromptArguments(dataset_name=data, **{k: v for k, v in config.items() if k in names}), config


@pytest.mark.parametrize("path", PROMPTING, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_shipped_config_prompts_as_its_evaluation_task(path):
    """Training and `make eval` build a problem's prompt from one definition: the messages a shipped config trains
    (or samples pairs) with equal those of the task its profile is measured on, system prompt and instruction."""
    from core.evaluation.benchmarks import TASKS, prepare_row
    from core.inputs.data import load_data
    from core.inputs.prepare import prepare_prompts
    from core.inputs.prompts import row_messages
    from core.report.summary import PROFILE_TASKS

    data = str(REPO_ROOT / PROFILE_ROWS[path.parent.name])
    args, config = config_prompt_arguments(path, data)
    args.exclude_problems = None  # a hub set (the test below holds it); these rows are the evaluation's own
    prompted = prepare_prompts(args, config["reward_funcs"]).dataset  # the recipe's data step, as it trains
    task = TASKS[PROFILE_TASKS[path.parent.name]]
    source = load_data(data)
    assert len(prompted) == len(source) >= 3
    for trained, row in zip(prompted, source, strict=True):
        assert row_messages(trained, args) == task.messages(prepare_row(task, dict(row)))


def hard_coded(shown_asserts: str) -> str:
    """A completion that passes exactly the asserts it was shown and knows nothing else: each `assert f(args) ==
    expected` becomes a lookup from those arguments to that value."""
    import ast

    cases, name = [], None
    for line in shown_asserts.splitlines():
        test = ast.parse(line).body[0].test
        name = test.left.func.id
        arguments = ", ".join(ast.unparse(a) for a in test.left.args)
        cases.append(f"(({arguments},), {ast.unparse(test.comparators[0])})")
    return (
        f"```python\nCASES = [{', '.join(cases)}]\n\n\ndef {name}(*args):\n"
        "    return next(out for given, out in CASES if given == args)\n```"
    )


def test_a_hard_coded_mbpp_completion_no_longer_scores_full_marks_in_training():
    """The 7b-code configs show one assert and score the held-back two: a program that hard-codes what its prompt
    shows scores 0 there, where showing and scoring all three (MBPP's paper, `make eval TASK=mbpp`) gives it 1."""
    from core.inputs.prepare import prepare_prompts
    from rewards import REWARDS, call_reward

    path = REPO_ROOT / "recipes" / "configs" / "7b-code" / "grpo.yaml"
    args, config = config_prompt_arguments(path, str(REPO_ROOT / PROFILE_ROWS["7b-code"]))
    assert args.shown_tests == 1
    trained = prepare_prompts(args, config["reward_funcs"]).dataset
    everything = prepare_prompts(
        type(args)(**{**vars(args), "task": "mbpp", "shown_tests": None, "prompt_template": None}),
        config["reward_funcs"],
    ).dataset  # every test shown and scored, as make eval TASK=mbpp
    shown = [row["tests_shown"] for row in trained]
    cheats = [hard_coded(text) for text in shown]
    scored = call_reward(REWARDS["code_tests"], cheats, **{key: trained[key] for key in trained.column_names})
    assert scored == [0.0] * len(cheats)
    all_cheats = [hard_coded("\n".join(row["test_list"])) for row in everything]
    scored = call_reward(REWARDS["code_tests"], all_cheats, **{k: everything[k] for k in everything.column_names})
    assert scored == [1.0] * len(all_cheats)


def test_the_math_config_never_trains_on_a_problem_of_the_set_it_is_measured_on(tmp_path, capsys):
    """The 7b-math config names MATH-500 (make eval TASK=math500's hub set and split) as problems that never train;
    a training file holding some of them, whitespace changed, loses exactly those, and says so."""
    from core.evaluation.benchmarks import TASKS
    from core.inputs.prepare import prepare_prompts
    from core.report.summary import PROFILE_TASKS

    task = TASKS[PROFILE_TASKS["7b-math"]]
    path = REPO_ROOT / "recipes" / "configs" / "7b-math" / "grpo.yaml"
    args, config = config_prompt_arguments(path, "")
    assert config["exclude_problems"] == f"{task.hub_id}:{task.split}"
    evaluation = [json.loads(line) for line in (REPO_ROOT / PROFILE_ROWS["7b-math"]).read_text().splitlines()]
    others = [{"problem": f"What is {n} + {n}?", "answer": str(2 * n)} for n in range(20)]
    leaked = [{**row, "problem": "  " + row["problem"].replace(" ", "\n", 1)} for row in evaluation[:4]]
    training = tmp_path / "train.jsonl"
    training.write_text(
        "".join(json.dumps({"problem": r["problem"], "answer": r["answer"]}) + "\n" for r in others + leaked)
    )
    stand_in = tmp_path / "math500.jsonl"
    stand_in.write_text("".join(json.dumps(row) + "\n" for row in evaluation))
    args.dataset_name, args.exclude_problems = str(training), str(stand_in)
    kept = prepare_prompts(args, config["reward_funcs"]).dataset
    assert sorted(kept["problem"]) == sorted(r["problem"] for r in others)
    assert f"exclude_problems: 4 of 24 rows of {training} are problems of {stand_in}" in capsys.readouterr().out


@pytest.mark.parametrize("path", PROMPTING, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_prompting_config_names_its_task_and_repeats_none_of_it(path):
    from core.report.summary import PROFILE_TASKS

    config = yaml.safe_load(path.read_text())
    assert config["task"] == PROFILE_TASKS[path.parent.name]
    assert not {"prompt_column", "prompt_template", "system_prompt", "shown_tests"} & set(config)
