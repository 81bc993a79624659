"""`make export`: a run trained on the 4-bit base becomes an ordinary full-precision model folder with the adapter
merged, checked against the adapter on the run's held-out problems; the folder loads with plain transformers and
`make eval` on it gives the accuracy the check printed."""

import json

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

import recipes.export as export
from core.inputs.config import parse_config
from eval.run import main as eval_main
from tests.conftest import entry_point_error
from tests.recipes.helpers import module_parser

pytestmark = pytest.mark.slow  # exports of the shipped GRPO and DPO runs (trained once per test run), evaluated

# The check's problems: the first 24 of the run's 200 held-out ones (the run's own records of them beside it).
LIMIT = ("--limit", "24")


@pytest.fixture(scope="module")
def runs(shipped_grpo, shipped_dpo):
    """`make grpo` and `make dpo` as shipped, 4-bit base, held-out on 200 problems: the session's shared runs."""
    return {"grpo": shipped_grpo, "dpo": shipped_dpo}


def last_records(run) -> list[dict]:
    """The run's own last held-out evaluation (step-<last>.jsonl), per problem."""
    steps = json.loads((run / "summary.json").read_text())["steps"]
    return [json.loads(line) for line in (run / "heldout" / f"step-{steps}.jsonl").read_text().splitlines()]


def export_main(*argv: str) -> dict:
    import sys

    saved = sys.argv
    sys.argv = ["recipes.export", *argv]
    try:
        return export.main(*parse_config(module_parser(export)))
    finally:
        sys.argv = saved


@pytest.mark.parametrize("method", ["grpo", "dpo"])
def test_a_4bit_run_exports_merged_in_full_precision_checked_and_loadable_by_plain_transformers(
    method, runs, tiny_world, tmp_path, capsys
):
    run, out = runs[method], tmp_path / "model"
    record = export_main("--run", str(run), "--out", str(out), *LIMIT)
    printed = capsys.readouterr().out
    check = record["check"]
    assert check["passed"] and check["n"] == 24 and check["line"] in printed, printed
    assert "same answer on" in check["line"] and "(needs >= 98%)" in check["line"]
    assert record["precision"] == "float32"  # the tiny base is stored in fp32: merged and saved in it, not 4-bit
    # beside it, the run's own last held-out evaluation of the same 24 problems on the 4-bit base, as trained
    trained = [r for r in last_records(run) if r["index"] < 24]
    assert check["trained_precision"] == "4-bit NF4" and len(trained) == 24
    assert check["trained_accuracy"] == pytest.approx(sum(r["score"] for r in trained) / 24)

    config = json.loads((out / "config.json").read_text())
    assert "quantization_config" not in config
    for name in ("model.safetensors", "tokenizer.json", "generation_config.json", "README.md", "export.json"):
        assert (out / name).is_file(), name
    assert not (out / "adapter_config.json").exists() and not out.with_name("model.partial").exists()
    card = (out / "README.md").read_text()
    assert f"# {method.upper()} on " in card and str(run) in card and check["line"] in card
    merged, base = load_file(out / "model.safetensors"), load_file(tiny_world / "model" / "model.safetensors")
    changed = [k for k in base if "proj" in k and not torch.equal(merged[k], base[k])]
    assert changed and merged.keys() == base.keys()  # the adapter is in the weights, under the base's own names

    model = AutoModelForCausalLM.from_pretrained(out)  # no peft, no project code
    assert type(model).__name__ == "Qwen2ForCausalLM" and not hasattr(model, "peft_config")
    again = eval_main(["--model", str(out), "--task", "tiny", "--limit", "24", "--out", str(tmp_path / "eval")])
    assert again["accuracy"] == pytest.approx(check["merged_accuracy"])


def test_merged_into_the_dequantized_4bit_weights_the_export_is_the_model_as_trained(runs, tmp_path, capsys):
    """--merge_into dequantized: the adapter merged into the 4-bit weights it trained on, dequantized to fp32 (the
    tiny configs compute in fp32): the exported model answers the run's 200 held-out problems as the run did at its
    end (all of them: the same batches as the run's own evaluation)."""
    record = export_main("--run", str(runs["dpo"]), "--out", str(tmp_path / "model"), "--merge_into", "dequantized")
    check = record["check"]
    assert check["passed"] and record["merge_into"] == "dequantized" and "4-bit weights dequantized" in check["line"]
    assert check["merged_accuracy"] == check["trained_accuracy"]
    assert check["same_answers"] == 1.0 and len(last_records(runs["dpo"])) == check["n"] == 200


def test_export_refuses_in_one_line_before_a_model_loads(runs, tmp_path):
    taken = tmp_path / "taken"
    taken.mkdir()
    said = entry_point_error("recipes.export", "--run", str(runs["grpo"]), "--out", str(taken))
    assert said == f"error: out {taken} (from the command line) exists: choose another OUT, or remove it first"
    said = entry_point_error("recipes.export", "--run", str(tmp_path))
    assert said == f"error: {tmp_path}: no summary.json; a finished run's folder is needed (runs/<method>-...)"
    said = entry_point_error("recipes.export", "--run", str(runs["grpo"]), "--push_to_hub", "true")
    assert said == "error: push_to_hub needs hub_model_id (you/name): the hub repository to upload to"
    said = entry_point_error("recipes.export", "--run", str(runs["grpo"]), "--dtype", "int4")
    assert said == "error: dtype 'int4': one of auto, bfloat16, float16, float32"


def test_make_eval_loads_an_adapter_s_base_as_its_run_trained_and_says_what_it_loaded(
    runs, tiny_world, tmp_path, capsys
):
    """Without --load_in_4bit, `make eval ADAPTER=<a 4-bit run>` loads the base in 4-bit as the run trained (and
    gives the run's own last held-out number, on its 200 problems); the printed line and results.json say which
    precision it loaded."""
    run = runs["grpo"]
    trained = last_records(run)
    common = ["--model", str(tiny_world / "model"), "--adapter", str(run), "--task", "tiny"]
    as_trained = eval_main([*common, "--limit", "200", "--out", str(tmp_path / "a")])
    assert as_trained["generation"]["precision"] == "4-bit NF4, as the adapter trained"
    assert as_trained["accuracy"] == pytest.approx(sum(r["score"] for r in trained) / 200)
    full = eval_main([*common, *LIMIT, "--load_in_4bit", "false", "--out", str(tmp_path / "b")])
    assert full["generation"]["precision"] == "float32, not as the adapter trained (4-bit NF4)"
    printed = capsys.readouterr().out
    assert "greedy, 4-bit NF4, as the adapter trained) ->" in printed and "greedy, float32, not as" in printed
