import json

from core.runs.provenance import commit, cpu
from eval import flips
from eval.run import main as eval_main
from tests.conftest import FIXTURES, run_as_make


def test_make_eval_on_the_tiny_model_writes_results_and_samples(tiny_world, tmp_path):
    out = tmp_path / "base"
    returncode, output = run_as_make("eval", "LIMIT=20", f"OUT={out}")
    assert returncode == 0, output[-4000:]
    assert "tiny: accuracy" in output
    results = json.loads((out / "results.json").read_text())
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert results["n"] == 20 and len(samples) == 20
    assert results["accuracy"] == sum(s["score"] for s in samples) / 20
    low, high = results["accuracy_ci95"]
    assert low <= results["accuracy"] <= high
    assert results["generation"]["greedy"] and results["template"]["user"] == "{question}"
    assert results["versions"]["trl"] == "1.12.0" and results["seconds"] > 0
    assert results["measured"] == {"commit": commit(), **cpu()} and results["measured"]["cpu"]
    assert results["sandbox_isolation"] == "root"
    assert {"prompt", "completion", "extracted", "gold", "score", "reason"} <= set(samples[0])


def test_one_verifier_one_number(tiny_world, tmp_path):
    """`make eval` on the whole held-out set reports the accuracy `make tiny` printed."""
    world = json.loads((tiny_world / "world.json").read_text())
    results = eval_main(["--model", str(tiny_world / "model"), "--task", "tiny", "--out", str(tmp_path / "all")])
    assert results["n"] == world["n_test"] == 200
    assert results["accuracy"] == world["held_out_accuracy"]


def test_sampling_reports_pass_at_k_and_compare_shows_flips(tiny_world, tmp_path, capsys):
    greedy = eval_main(
        ["--model", str(tiny_world / "model"), "--task", "tiny", "--limit", "12", "--out", str(tmp_path / "greedy")]
    )
    sampled = eval_main(
        [
            "--model",
            str(tiny_world / "model"),
            "--task",
            "tiny",
            "--limit",
            "12",
            "--k",
            "4",
            "--temperature",
            "1.0",
            "--out",
            str(tmp_path / "sampled"),
        ]
    )
    assert 0.0 <= sampled["pass@1"] <= sampled["pass@2"] <= sampled["pass@4"] <= 1.0
    assert sampled["generation"]["k"] == 4 and not sampled["generation"]["greedy"]
    changed = flips.main([str(tmp_path / "greedy" / "results.json"), str(tmp_path / "sampled" / "results.json")])
    a = [json.loads(line)["score"] for line in (tmp_path / "greedy" / "samples.jsonl").read_text().splitlines()]
    b = [json.loads(line) for line in (tmp_path / "sampled" / "samples.jsonl").read_text().splitlines()]
    b_first = [row["score"] for row in b if row["sample"] == 0]
    assert len(changed["a_right_b_wrong"]) == sum(x > y for x, y in zip(a, b_first, strict=True))
    assert len(changed["a_wrong_b_right"]) == sum(y > x for x, y in zip(a, b_first, strict=True))
    assert "flips on 12 shared problems" in capsys.readouterr().out
    assert greedy["accuracy"] == sum(a) / 12


def test_vllm_is_optional_and_asking_for_it_without_it_is_a_clear_error(tmp_path, monkeypatch):
    import importlib.util

    import pytest

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name == "vllm" else real_find_spec(name))
    with pytest.raises(SystemExit, match="vLLM is not installed"):
        eval_main(["--model", "m", "--task", "tiny", "--use_vllm", "--out", str(tmp_path)])


def test_unparseable_gold_answers_count_as_wrong_and_are_named(tiny_world, tmp_path):
    data = tmp_path / "math.jsonl"
    data.write_text(
        "".join(
            json.dumps({"problem": p, "answer": a}) + "\n"
            for p, a in [("Ana has 12 coins. Ana gets 30 more. How many?", "42"), ("Name it.", "not given")]
        )
    )
    results = eval_main(
        [
            "--model",
            str(tiny_world / "model"),
            "--task",
            "math500",
            "--data",
            str(data),
            "--max_new_tokens",
            "8",
            "--out",
            str(tmp_path / "out"),
        ]
    )
    assert results["n"] == 2
    assert results["unparseable_gold"] == {
        "count": 1,
        "scored_as": "wrong (0), counted in n",
        "examples": [{"index": 1, "gold": "not given"}],
    }
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["unparseable_gold"]["count"] == 1 and saved["accuracy"] <= 0.5


def test_eval_reads_humaneval_gzipped_as_distributed(tiny_world, tmp_path):
    """`make eval TASK=humaneval DATA=HumanEval.jsonl.gz`'s command in this process (the Makefile's flags have their
    own test, the first in this file); the programs still run in the sandbox."""
    import gzip

    data = tmp_path / "HumanEval.jsonl.gz"
    data.write_bytes(gzip.compress((FIXTURES / "humaneval_sample.jsonl").read_bytes()))
    out = tmp_path / "he"
    argv = ["--model", "artifacts/tiny/model", "--task", "humaneval", "--data", str(data), "--out", str(out)]
    eval_main([*argv, "--max_new_tokens", "16"])
    results = json.loads((out / "results.json").read_text())
    assert results["n"] == 3 and results["data"] == str(data) and results["sandbox_isolation"] == "root"
    assert [
        json.loads(line)["reason"].endswith(", ok") or "tests" in json.loads(line)["reason"]
        for line in (out / "samples.jsonl").read_text().splitlines()
    ] == [True] * 3


def test_a_completion_budget_that_leaves_no_room_says_what_to_change(tiny_world, tmp_path):
    """HumanEval's 512-token budget on the 512-position tiny model: the message names the budget and the fix."""
    import pytest

    from core.errors import UserError

    data = str(FIXTURES / "humaneval_sample.jsonl")
    base = ["--model", "artifacts/tiny/model", "--task", "humaneval", "--data", data, "--out", str(tmp_path / "x")]
    with pytest.raises(UserError) as no_room:
        eval_main(base)
    assert str(no_room.value) == (
        "max_new_tokens 512 (from the humaneval task's default) is at or beyond the model's 512 positions: the "
        "completion budget leaves no room for a prompt; give fewer than 512 tokens (with make eval "
        'ARGS="--max_new_tokens 256")'
    )
    with pytest.raises(UserError) as too_long:
        eval_main([*base, "--max_new_tokens", "500"])
    assert "3 prompt(s) longer than the 12 tokens the model has room for" in str(too_long.value)
    assert str(too_long.value).endswith(
        "shorten them, cut them with --truncate_long_prompts, or leave the prompts more room with a smaller "
        'completion budget than max_new_tokens 500 (make eval ARGS="--max_new_tokens N")'
    )
    for bad in (["--temperature", "-1"], ["--k", "4", "--temperature", "0"]):
        with pytest.raises(UserError, match="--temperature"):
            eval_main([*base, *bad])
    assert not (tmp_path / "x").exists()
