import json

import pytest
import torch
import yaml
from transformers import AutoTokenizer
from trl.experimental.utils import get_reward

import recipes.ppo as ppo
from rewards import REWARDS
from tests.conftest import FULL_PRECISION, NO_HELDOUT, REPO_ROOT
from tests.recipes.helpers import (
    assert_run_summary,
    cli,
    metrics_steps,
    run_and_sigterm_after,
    run_recipe,
    tree_digest,
)

CONFIG = "recipes/configs/tiny/ppo.yaml"


@pytest.mark.parametrize("world", ["tiny_world", "smol_world"])
def test_reward_adapter_puts_the_function_score_where_trl_reads_it(world, request):
    """On the tiny world, and on SmolLM2, whose pad token is its end of turn: TRL masks it inside the prompt too."""
    tokenizer = AutoTokenizer.from_pretrained(request.getfixturevalue(world) / "model")
    tokenizer.padding_side = "left"
    questions = ["Ana has 12 coins. Ana gets 30 more. How many coins does Ana have now?", "A box holds 5 pens?"]
    prompts = [
        tokenizer.apply_chat_template(
            [{"role": "system", "content": "Be brief."}, {"role": "user", "content": q}],
            add_generation_prompt=True,
            tokenize=True,
            return_dict=False,
        )
        for q in questions
    ]
    columns = {
        tuple(p): {"answer": gold, "prompts": q}
        for p, gold, q in zip(prompts, ["#### 42", "#### 9"], questions, strict=True)
    }
    model = ppo.RewardFunctionModel(tokenizer, [REWARDS["math_accuracy"]], [2.0], columns)
    responses = ["12+30. So the sum is 42.\n#### 42", "#### 7"]
    pad = tokenizer.pad_token_id
    context = max(len(p) for p in prompts)
    queries = [[pad] * (context - len(p)) + p for p in prompts]
    response_ids = [tokenizer(r, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id] for r in responses]
    width = max(len(r) for r in response_ids) + 3
    rows = [q + r + [pad] * (width - len(r)) for q, r in zip(queries, response_ids, strict=True)]
    _, scores, _ = get_reward(model, torch.tensor(rows), pad, context)  # TRL's own reader
    assert scores.tolist() == [2.0, 0.0]


@pytest.mark.slow
def test_sigterm_then_resume_continues_the_same_run(tiny_world, tmp_path, monkeypatch):
    # Without a stop token every generation runs to its full length, so each step draws the same amount of
    # randomness however the CPU kernels round (they are not bitwise reproducible from run to run: completions of two
    # uninterrupted runs differ by a few tokens from step 3 on, and an early stop then shifts the RNG stream). The RNG
    # check below then tests the resume, not the kernels.
    config = yaml.safe_load((REPO_ROOT / CONFIG).read_text())
    config.pop("stop_token")
    config_path = tmp_path / "ppo.yaml"
    config_path.write_text(yaml.safe_dump(config))
    common = [
        "--config",
        str(config_path),
        "--max_steps",
        "5",
        "--save_steps",
        "2",
        "--logging_steps",
        "1",
        "--reward_funcs",
        "tests.recipes.reward_probes.record_prompts",
        "--save_total_limit",
        "10",
        # the checkpoint at the end of the step, however slow the machine (the grace's interruption is
        # tests/recipes/test_bad_numbers.py's)
        "--stop_grace_seconds",
        "0",
        "--response_length",  # every generation runs to it (no stop token): short, so that 15 steps take seconds
        "16",
    ]
    straight_log, resumed_log = tmp_path / "straight.jsonl", tmp_path / "resumed.jsonl"
    # the uninterrupted run in this process (no signal is its subject): a new interpreter costs ~5 s of imports
    monkeypatch.setenv("PROMPT_LOG", str(straight_log))
    run_recipe(ppo, common[1], *common[2:], "--output_dir", str(tmp_path / "straight"))
    monkeypatch.delenv("PROMPT_LOG")

    run = tmp_path / "resumed"
    output = run_and_sigterm_after(
        cli("ppo", *common, "--output_dir", str(run), env={"PROMPT_LOG": str(resumed_log)}), run / "checkpoint-2"
    )
    assert "SIGTERM: saved checkpoint-" in output
    saved = {p.name: tree_digest(p) for p in run.glob("checkpoint-*")}
    last_saved = max(int(name.split("-")[1]) for name in saved)
    assert 2 <= last_saved < 5
    second = cli(
        "ppo",
        *common,
        "--output_dir",
        str(run),
        "--resume_from_checkpoint",
        "latest",
        env={"PROMPT_LOG": str(resumed_log)},
    )
    assert second.wait(timeout=900) == 0, second.log.read_text()[-3000:]

    straight_calls = [json.loads(line) for line in straight_log.read_text().splitlines()]
    resumed_calls = [json.loads(line) for line in resumed_log.read_text().splitlines()]
    resumed_calls = resumed_calls[:last_saved] + resumed_calls[-(5 - last_saved) :]
    assert [c["prompts"] for c in resumed_calls] == [c["prompts"] for c in straight_calls]
    assert [c["rng"] for c in resumed_calls] == [c["rng"] for c in straight_calls]
    final = json.loads((run / "checkpoint-5" / "trainer_state.json").read_text())
    assert final["global_step"] == 5 and final["max_steps"] == 5
    assert sorted(set(metrics_steps(run))) == [1, 2, 3, 4, 5]
    for name, digest in saved.items():
        assert tree_digest(run / name) == digest, f"{name} changed after resume"


@pytest.mark.slow  # the tiny code world: every rollout scored in the sandbox (GRPO's runs in make test-fast)
def test_two_steps_on_the_tiny_code_world_score_through_the_adapter_in_the_sandbox(tiny_code_world, tmp_path, capsys):
    out = tmp_path / "code-run"
    trainer = run_recipe(
        ppo, "recipes/configs/tiny-code/ppo.yaml", "--max_steps", "2", "--logging_steps", "1", "--output_dir", str(out)
    )
    assert trainer.state.global_step == 2
    scores = [
        json.loads(line)["objective/scores"]
        for line in (out / "metrics.jsonl").read_text().splitlines()
        if "objective/scores" in line
    ]
    assert len(scores) == 2 and all(0.0 <= s <= 1.1 for s in scores)  # code_tests + 0.1 x code_format
    spent = json.loads((out / "cost.json").read_text())["reward_time"]
    assert spent["code_tests"]["completions"] == 2 * 8 and spent["code_format"]["calls"] == 2
    assert_run_summary(out, "ppo", capsys.readouterr().out)


def test_the_critic_trains_at_its_own_learning_rate_when_given_one(tiny_world, tmp_path):
    """value_learning_rate moves the critic's LoRA and score head to optimizer groups of their own at that rate (the
    schedule scales both alike); the policy's adapter stays at learning_rate. Without it, one rate for both, as TRL."""
    trainer = run_recipe(
        ppo,
        "recipes/configs/tiny/ppo.yaml",
        *FULL_PRECISION,  # its subject is the optimizer's groups
        *("--max_steps", "1", "--learning_rate", "5e-4", "--value_learning_rate", "2e-3"),
        *("--lr_scheduler_type", "constant", "--output_dir", str(tmp_path / "run")),
        *NO_HELDOUT,
    )
    critic = {id(p) for p in trainer.model.value_model.parameters() if p.requires_grad}
    policy = {id(p) for p in trainer.model.policy.parameters() if p.requires_grad}
    rates = {}
    for group in trainer.optimizer.param_groups:
        owners = {"critic" if id(p) in critic else "policy" if id(p) in policy else "other" for p in group["params"]}
        assert len(owners) == 1, owners  # no group mixes the two
        rates.setdefault(owners.pop(), set()).add(group["lr"])
    assert rates == {"policy": {5e-4}, "critic": {2e-3}}
    trained = sum(len(g["params"]) for g in trainer.optimizer.param_groups)
    assert trained == len(critic) + len(policy)  # every trainable parameter, once
    with pytest.raises(SystemExit, match=r"value_learning_rate -1 \(from the command line\) must be > 0"):
        run_recipe(ppo, "recipes/configs/tiny/ppo.yaml", "--value_learning_rate", "-1", "--output_dir", str(tmp_path))
