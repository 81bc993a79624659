"""Data is checked before any model loads, in one place (core.inputs.data) that every recipe, make pairs, make eval and
make score use: each bad file ends in one line naming the file, the line or rows, and what is wrong."""

import json
import subprocess
import sys

import pytest

from core.errors import DataError
from core.inputs.data import load_data
from core.inputs.models import load_tokenizer
from core.inputs.prompts import fit_prompt_list
from tests.conftest import REPO_ROOT, entry_point_error

GOOD = {"question": "Ana has 12 coins. Ana gets 30 more. How many coins does Ana have now?", "answer": "#### 42"}
BAD_FILES = {
    "malformed.jsonl": (json.dumps(GOOD) + "\n" + json.dumps(GOOD) + '\n{"question": "x", "answer": \n').encode(),
    "empty.jsonl": b"\n\n",
    "latin1.jsonl": (json.dumps(GOOD) + "\n").encode()
    + '{"question": "caf\xe9", "answer": "#### 1"}\n'.encode("latin-1"),
    "null_gold.jsonl": "".join(json.dumps(r) + "\n" for r in [GOOD, {**GOOD, "answer": None}, GOOD]).encode(),
    "empty_prompts.jsonl": "".join(json.dumps({**GOOD, "question": q}) + "\n" for q in ("", " ", "")).encode(),
    "array.json": json.dumps([GOOD, GOOD]).encode(),
    "long.jsonl": "".join(
        json.dumps(r) + "\n" for r in [GOOD, {**GOOD, "question": "7" * 1000}, *[GOOD] * 6]
    ).encode(),
}
MESSAGES = {
    "malformed.jsonl": "malformed.jsonl, line 3: not JSON (Expecting value at column 29)",
    "empty.jsonl": "empty.jsonl: empty (no rows)",
    "latin1.jsonl": "latin1.jsonl, line 2: not UTF-8 text (byte 18 of the line is b'\\xe9'); save the file as UTF-8",
    "null_gold.jsonl": "null_gold.jsonl: 1 of 3 rows have a missing or empty value: row 2 (answer); fix them, or "
    "drop them with drop_incomplete_rows: true",
    "empty_prompts.jsonl": "empty_prompts.jsonl: 3 of 3 rows have a missing or empty value: row 1 (question), row 2 "
    "(question), row 3 (question)",
}


@pytest.fixture
def files(tmp_path):
    for name, data in BAD_FILES.items():
        (tmp_path / name).write_bytes(data)
    return tmp_path


@pytest.mark.parametrize("name", sorted(MESSAGES))
def test_load_data_names_the_file_and_the_line(files, name):
    with pytest.raises(DataError) as caught:
        load_data(str(files / name), required_columns=["question", "answer"])
    assert MESSAGES[name] in str(caught.value)


def test_a_json_array_loads_and_incomplete_rows_can_be_dropped(files, capsys):
    assert len(load_data(str(files / "array.json"), required_columns=["question", "answer"])) == 2
    kept = load_data(str(files / "null_gold.jsonl"), required_columns=["question", "answer"], drop_incomplete=True)
    assert len(kept) == 2 and None not in kept["answer"]
    assert "dropped 1 of 3 rows of" in capsys.readouterr().out


def test_long_prompts_are_refused_with_their_rows_or_cut_to_fit(tiny_world):
    from trl import ModelConfig

    tokenizer = load_tokenizer(ModelConfig(model_name_or_path=str(tiny_world / "model")))
    prompts = [[{"role": "user", "content": GOOD["question"]}], [{"role": "user", "content": "7" * 600}]]
    with pytest.raises(DataError, match=r"1 prompt\(s\) longer than the 400 tokens the model has room for: row 2 "):
        fit_prompt_list(prompts, tokenizer, 400, "d.jsonl")
    fitted = fit_prompt_list(prompts, tokenizer, 400, "d.jsonl", truncate=True)
    assert fitted[0] == prompts[0]

    def length(messages):
        return len(
            tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False)
        )

    overhead = length(prompts[1]) - 600  # the chat template's tokens; one token per digit
    assert length(fitted[1]) == 400 and fitted[1][0]["content"] == "7" * (400 - overhead)


@pytest.mark.slow
@pytest.mark.parametrize(
    "module,args",
    [
        ("recipes.grpo", ["--config", "recipes/configs/tiny/grpo.yaml", "--dataset_name", "FILE"]),
        ("recipes.ppo", ["--config", "recipes/configs/tiny/ppo.yaml", "--dataset_name", "FILE"]),
        ("recipes.pairs", ["--config", "recipes/configs/tiny/pairs.yaml", "--dataset_name", "FILE"]),
        ("eval.run", ["--model", "artifacts/tiny/model", "--data", "FILE", "--rewards", "math_accuracy"]),
    ],
    ids=["grpo", "ppo", "pairs", "eval"],
)
def test_every_entry_point_refuses_bad_data_in_one_line_before_a_model_loads(tiny_world, files, module, args):
    for name in ("malformed.jsonl", "null_gold.jsonl", "long.jsonl"):
        argv = [
            *[str(files / name) if a == "FILE" else a for a in args],
            *(
                ["--output_dir", str(files / "never")]
                if module.startswith("recipes.") and "pairs" not in module
                else ["--output", str(files / "never.jsonl")]
                if "pairs" in module
                else ["--out", str(files / "x")]
            ),
        ]
        last = entry_point_error(module, *argv)
        if name == "long.jsonl":  # the room left for the completion differs by recipe
            assert "long.jsonl: 1 prompt(s) longer than the " in last and "row 2 (1" in last, last
        else:
            assert MESSAGES[name] in last
        assert not (files / "never").exists() and not (files / "x").exists()


def test_make_score_checks_its_file_the_same_way(files):
    (files / "null_completion.jsonl").write_text(json.dumps({"completion": None, "answer": "#### 4"}) + "\n")
    (files / "scores.json").write_text(json.dumps([{"completion": "#### 42", "answer": "#### 42"}]))
    expected = {
        "latin1.jsonl": MESSAGES["latin1.jsonl"],
        "empty.jsonl": MESSAGES["empty.jsonl"],
        "null_completion.jsonl": "null_completion.jsonl, row 1: no value for ['completion'] (null or empty)",
    }
    for name, message in expected.items():
        result = subprocess.run(
            [sys.executable, "-m", "eval.score", str(files / name), "--rewards", "math_accuracy"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 1 and "Traceback" not in result.stderr
        assert message in result.stderr.strip().splitlines()[-1]
    array = subprocess.run(
        [sys.executable, "-m", "eval.score", str(files / "scores.json"), "--rewards", "math_accuracy"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert array.returncode == 0 and "math_accuracy: mean 1.000 over 1/1" in array.stdout


def test_a_null_gold_is_never_scored_correct():
    from rewards.math import math_accuracy

    assert math_accuracy(["None", "#### None", ""], answer=[None, None, None]) == [None, None, None]


@pytest.fixture
def pair_files(tmp_path):
    """Pairs files with no pair in them, in each format make pairs writes, and a Parquet file that is not one."""
    import datasets

    datasets.Dataset.from_list([]).to_parquet(str(tmp_path / "empty.parquet"))
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 not really")
    return tmp_path


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("empty.parquet", "empty.parquet: empty (no rows)"),
        ("empty.jsonl", "empty.jsonl: empty (no rows)"),
        ("broken.parquet", "broken.parquet: not a readable Parquet file ("),
    ],
)
@pytest.mark.parametrize("method", ["dpo", "orpo"])
def test_dpo_and_orpo_refuse_a_pairs_file_without_pairs_in_one_line(tiny_world, pair_files, method, name, message):
    import importlib

    from tests.recipes.helpers import run_recipe

    run = pair_files / "run"
    recipe = importlib.import_module(f"recipes.{method}")
    with pytest.raises(DataError) as refusal:
        run_recipe(
            recipe,
            f"recipes/configs/tiny/{method}.yaml",
            "--dataset_name",
            str(pair_files / name),
            "--output_dir",
            str(run),
        )
    assert message in str(refusal.value) and "\n" not in str(refusal.value)
    assert not run.exists()
