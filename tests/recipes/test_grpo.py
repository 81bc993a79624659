import json
import re

import pytest

import core.inputs.prepare as prepare
import recipes.grpo as grpo
from core.errors import UserError
from tests.conftest import FULL_PRECISION
from tests.recipes.helpers import (
    assert_run_summary,
    cli,
    metrics_steps,
    run_and_sigterm_after,
    run_recipe,
    tree_digest,
)

CONFIG = "recipes/configs/tiny/grpo.yaml"


@pytest.mark.parametrize(
    "overrides,message",
    [
        (
            ["--per_device_train_batch_size", "12", "--gradient_accumulation_steps", "1"],
            "gradient_accumulation_steps 1, per_device_train_batch_size 12 (from the command line): "
            "generation_batch_size (12) must be divisible by "
            "num_generations (8)",
        ),
        (["--reward_funcs", "no_such_reward"], "unknown reward 'no_such_reward'"),
        (["--task", "math500"], "missing column(s) ['problem']"),  # MATH-500's prompt column, not in the tiny rows
        (["--use_vllm", "true"], "vLLM weight sync needs merged LoRA weights"),
        (["--reward_weights", "1.0", "2.0"], "reward_weights has 2 entries for 1 reward_funcs"),
        # a dotted-path reward's named parameter is a column the data must have
        (["--reward_funcs", "tests.recipes.reward_probes.needs_unit"], "missing column(s) ['unit']"),
        (["--reward_noise", "1.5"], "reward_noise 1.5 (the command line): a flip probability, in [0, 1]"),
    ],
)
def test_preflight_errors_come_before_any_model_is_loaded(tiny_world, tmp_path, overrides, message, monkeypatch):
    def no_loading(*args, **kwargs):
        raise AssertionError("a model was loaded before the pre-flight error")

    monkeypatch.setattr(prepare, "load_tokenizer", no_loading)  # the first load of anything from the model
    with pytest.raises((SystemExit, UserError), match=re.escape(message)):
        run_recipe(grpo, CONFIG, "--max_steps", "1", "--output_dir", str(tmp_path / "x"), *overrides)


def test_unknown_config_key_names_the_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("model_name_or_path: m\ndataset_name: d\nbf16: false\nuse_cpu: true\nnum_generationz: 4\n")
    with pytest.raises(SystemExit, match=r"bad.yaml.*num_generationz"):
        run_recipe(grpo, str(bad))


@pytest.mark.slow
def test_sigterm_then_resume_continues_the_same_run(tiny_world, tmp_path, monkeypatch):
    """Uninterrupted vs. killed-and-resumed: same steps, same prompts in the same order, nothing overwritten."""
    common = [
        "--config",
        CONFIG,
        "--max_steps",
        "5",
        "--save_steps",
        "2",
        "--logging_steps",
        "1",
        "--reward_funcs",
        "tests.recipes.reward_probes.record_prompts",
        "--per_device_train_batch_size",
        "16",
        "--gradient_accumulation_steps",
        "1",
        "--save_total_limit",
        "10",
    ]  # no rotation: every checkpoint must survive the resume
    straight_log, resumed_log = tmp_path / "straight.jsonl", tmp_path / "resumed.jsonl"
    # the uninterrupted run in this process (no signal is its subject): a new interpreter costs ~5 s of imports
    monkeypatch.setenv("PROMPT_LOG", str(straight_log))
    run_recipe(grpo, common[1], *common[2:], "--output_dir", str(tmp_path / "straight"))
    monkeypatch.delenv("PROMPT_LOG")

    run = tmp_path / "resumed"
    first = cli("grpo", *common, "--output_dir", str(run), env={"PROMPT_LOG": str(resumed_log)})
    output = run_and_sigterm_after(first, run / "checkpoint-2")
    assert "SIGTERM: saved checkpoint-" in output
    saved = {p.name: tree_digest(p) for p in run.glob("checkpoint-*")}
    assert 2 <= max(int(name.split("-")[1]) for name in saved) < 5
    second = cli(
        "grpo",
        *common,
        "--output_dir",
        str(run),
        "--resume_from_checkpoint",
        "latest",
        env={"PROMPT_LOG": str(resumed_log)},
    )
    assert second.wait(timeout=900) == 0, second.log.read_text()[-3000:]

    def calls(log):
        return [json.loads(line) for line in log.read_text().splitlines()]

    straight_calls, resumed_calls = calls(straight_log), calls(resumed_log)
    last_saved = max(int(name.split("-")[1]) for name in saved)
    # The killed run may have scored a step it never saved; the resumed run redoes exactly that step.
    resumed_calls = resumed_calls[:last_saved] + resumed_calls[-(5 - last_saved) :]
    assert [c["prompts"] for c in resumed_calls] == [c["prompts"] for c in straight_calls]
    # RNG restored: the generator is in the same state after each step's sampling. (The sampled texts themselves
    # can differ: 4-bit CPU kernels are not bitwise deterministic across processes.)
    assert [c["rng"] for c in resumed_calls] == [c["rng"] for c in straight_calls]
    assert sorted(set(metrics_steps(run))) == [1, 2, 3, 4, 5]
    assert json.loads((run / "checkpoint-5" / "trainer_state.json").read_text())["global_step"] == 5
    for name, digest in saved.items():
        assert tree_digest(run / name) == digest, f"{name} changed after resume"


def test_two_steps_on_the_tiny_code_world_score_in_the_sandbox(tiny_code_world, tmp_path, capsys):
    out = tmp_path / "code-run"
    trainer = run_recipe(
        grpo,
        "recipes/configs/tiny-code/grpo.yaml",
        *FULL_PRECISION,  # its subject is the sandbox's scores
        "--max_steps",
        "2",
        "--logging_steps",
        "1",
        "--output_dir",
        str(out),
    )
    assert trainer.state.global_step == 2
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if "reward" in line]
    # the sandbox scored every completion: code_tests' mean is a share of passed asserts, logged per step
    assert all(0.0 <= r["rewards/code_tests/mean"] <= 1.0 for r in rows) and len(rows) == 2
    assert any(r["rewards/code_tests/mean"] > 0 for r in rows)  # the warm start passes tests half the time
    spent = json.loads((out / "cost.json").read_text())["reward_time"]
    assert spent["code_tests"]["completions"] == 2 * 64 and spent["code_tests"]["seconds"] > 0
    assert_run_summary(out, "grpo", capsys.readouterr().out)


@pytest.mark.slow
def test_a_run_without_signal_says_so(tiny_world, tmp_path, capsys):
    """Two constant rewards: no spread in any group, the weighted reward never moves, no gradient. The summary says
    so in words with the likely causes, summary.json flags it, and each reward's own curve is reported."""
    out = tmp_path / "run"
    rewards = ["tests.recipes.reward_probes.always_zero", "tests.recipes.reward_probes.always_half"]
    run_recipe(
        grpo,
        CONFIG,
        "--max_steps",
        "2",
        "--logging_steps",
        "1",
        "--output_dir",
        str(out),
        "--reward_funcs",
        *rewards,
        "--reward_weights",
        "1.0",
        "1.0",
    )
    printed = capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    assert summary["no_signal"]["flag"] is True
    assert any("frac_reward_zero_std" in r for r in summary["no_signal"]["reasons"])
    assert any("grad_norm was 0" in r for r in summary["no_signal"]["reasons"])
    assert "warning: no training signal: " in printed and "likely causes: " in printed
    assert summary["rewards"] == {
        "always_zero": {"first": 0.0, "last": 0.0},
        "always_half": {"first": 0.5, "last": 0.5},
    }
    assert "    always_zero 0.000 -> 0.000\n    always_half 0.500 -> 0.500" in printed
    # the suggested evaluation is the run's own task: its data and rewards, not a built-in task
    assert summary["next"][0].endswith(f"DATA=artifacts/tiny/data/train.jsonl REWARDS={','.join(rewards)}")
    # ... and it says what that file is: the data it trained on, not a held-out set
    assert f"{summary['next'][0]}   # accuracy on the training data: no held-out set" in printed


def test_a_run_with_signal_is_not_flagged(tmp_path):
    from core.report.summary import no_signal

    rows = [
        {"step": s, "reward": r, "reward_std": 0.4, "frac_reward_zero_std": 0.5, "grad_norm": 0.1}
        for s, r in ((1, 0.5), (2, 0.6))
    ]
    assert no_signal(rows, "grpo") == []
    assert no_signal([{**r, "grad_norm": 0.0} for r in rows], "grpo") == [
        "grad_norm was 0 at all 2 logged steps: the adapter did not change"
    ]


@pytest.mark.slow
def test_a_broken_reward_ends_training_in_one_line_naming_it(tiny_world, tmp_path):
    proc = cli(
        "grpo",
        "--config",
        CONFIG,
        "--max_steps",
        "1",
        "--output_dir",
        str(tmp_path / "run"),
        "--reward_funcs",
        "tests.recipes.reward_probes.one_score_per_batch",
    )
    output, _ = proc.communicate(timeout=600)
    assert proc.returncode == 1 and "Traceback" not in output
    errors = [line for line in output.splitlines() if "error: " in line]
    assert errors == ["error: reward 'one_score_per_batch' returned 1 score(s) for 64 completion(s)"]
