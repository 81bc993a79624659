"""Held-out accuracy during training, on real runs of the tiny recipes: the shipped GRPO config's before -> after
equals `make eval` on the start model and the adapter (same problems, same 4-bit base), no check fires on it nor on
the shipped PPO, DPO and ORPO runs, held-out evaluation (greedy and sampled) leaves training byte-identical, a proxy
reward the tiny model satisfies without answering correctly is named reward hacking (and drift from the start) with
its evidence, a reward that pays for length is named length drift, and one that pays for brevity entropy collapse.
The proxy and length pushes run in full precision (docs/test-suite.md): their subject is the verdict, not the 4-bit
path."""

import hashlib
import json

import pytest
import torch

import recipes.grpo as grpo
from core.runs.provenance import cpu
from eval.run import main as eval_main
from tests.conftest import FULL_PRECISION, REPO_ROOT, printed
from tests.durations import emulation
from tests.recipes.helpers import assert_heldout_block, run_recipe

CONFIG = "recipes/configs/tiny/grpo.yaml"
FIRST_RUNS = REPO_ROOT / "results" / "first-run" / "runs.json"  # the README's first run, by CPU class
HELDOUT = ("--heldout_task", "tiny", "--heldout_limit", "100")
# Four prompts' groups a step, not the config's eight, for the proxy push: at half the cost its reward still rose
# beyond its noise (trend [+0.37, +0.80]) while held-out accuracy fell 62% -> 0% (on the AMX Xeon, natively and with
# AVX2 kernels alike). The length push keeps eight: with four it had only begun (49 -> 58 tokens, 12% cut at the
# budget, against 89-96 and 84-98% with eight), and the brevity push too: with four its token entropy rose (0.028 ->
# 0.230 nats) and its check did not fire.
HALF_BATCH = ("--gradient_accumulation_steps", "4")
PROXY = '''
import re


def even_answer(completions, **kwargs):
    """1.0 when the completion's last number is even: a proxy that says nothing about being right."""
    scores = []
    for completion in completions:
        text = completion if isinstance(completion, str) else completion[-1]["content"]
        numbers = re.findall(r"\\d+", text)
        scores.append(1.0 if numbers and int(numbers[-1]) % 2 == 0 else 0.0)
    return scores
'''


def push(tmp_path, reward: str, steps: int, *flags: str) -> dict:
    """The verdict of a fast push (learning rate 2e-3, a row every 2 steps) of the shipped GRPO config towards
    `reward` alone, evaluated on held-out problems (and in the precision) that `flags` say."""
    out = tmp_path / "run"
    run_recipe(
        grpo,
        CONFIG,
        *("--reward_funcs", reward, "--output_dir", str(out)),
        *("--max_steps", str(steps), "--learning_rate", "2e-3", "--logging_steps", "2"),
        *flags,
    )
    return json.loads((out / "summary.json").read_text())["verdict"]


def eval_accuracy(tmp_path, name: str, *args: str) -> float:
    out = tmp_path / name
    eval_main(["--model", "artifacts/tiny/model", "--task", "tiny", *args, "--out", str(out)])
    return json.loads((out / "results.json").read_text())["accuracy"]


@pytest.mark.slow
def test_the_shipped_run_s_before_and_after_equal_make_eval_and_no_check_fires(shipped_grpo, tmp_path):
    out, said = shipped_grpo, printed(shipped_grpo)  # the run as the config has it: held-out on, 200 problems
    held = assert_heldout_block(out, said, 40)
    assert held["n"] == 200  # the config's setting, not the test's
    summary = json.loads((out / "summary.json").read_text())
    assert summary["verdict"]["checks"] == [] and "warning:" not in said
    limit = str(held["n"])
    assert eval_accuracy(tmp_path, "base", "--limit", limit, "--load_in_4bit") == held["before"]
    assert (
        eval_accuracy(tmp_path, "adapter", "--adapter", str(out), "--limit", limit, "--load_in_4bit") == held["after"]
    )
    assert held["after"] > held["before"]  # the shipped run learns, and the verdict can see it
    assert f"make eval MODEL=artifacts/tiny/model ADAPTER={out} TASK=tiny LIMIT={limit} ARGS=--load_in_4bit" in said
    # what a recorded run printed on this machine's CPU class with these threads and kernels, where there is one
    # (the last digits depend on all three: results/first-run/runs.json, which the README's first run reads)
    here = (cpu()["kernel_flags"], torch.get_num_threads(), emulation())
    for run in json.loads(FIRST_RUNS.read_text()):
        if (run["kernel_flags"], run["threads"], run["emulated"]) == here:
            assert f"  reward {run['reward']} (" in said and f"greedy: {run['heldout']} (steps" in said, run["class"]


@pytest.mark.slow
@pytest.mark.parametrize("method", ["ppo", "dpo", "orpo"])
def test_the_other_shipped_runs_show_the_block_and_trip_no_check(method, request):
    """`make ppo` as shipped (40 steps); `make dpo` and `make orpo` as shipped on the session's 48 prompts of pairs
    (one epoch; `make dpo` samples 320)."""
    out = request.getfixturevalue(f"shipped_{method}")
    said = printed(out)
    summary = json.loads((out / "summary.json").read_text())
    held = assert_heldout_block(out, said, summary["steps"])
    assert held["n"] == 200  # the config's setting, not the test's
    assert summary["verdict"]["checks"] == [] and "warning:" not in said


@pytest.mark.slow
def test_held_out_evaluation_leaves_training_byte_identical(tiny_world, tmp_path, capsys):
    """Greedy and sampled (heldout_k) evaluations between steps: the sampled ones draw from a random state of their
    own, so the trained adapter is the same byte for byte as without any held-out evaluation."""
    digests = []
    sampled = ["--heldout_k", "4", "--heldout_temperature", "1.0"]
    # two prompts' groups a step: the adapter's bytes are the claim, the batch's size does not bear on them
    steps = ["--max_steps", "3", "--gradient_accumulation_steps", "2", "--heldout_eval_steps", "1"]
    for name, heldout in (("on", ["--heldout_task", "tiny", "--heldout_limit", "8", *sampled]), ("off", [])):
        out = tmp_path / name
        run_recipe(grpo, CONFIG, *steps, "--output_dir", str(out), *heldout)
        digests.append(hashlib.sha256((out / "adapter_model.safetensors").read_bytes()).hexdigest())
    assert (tmp_path / "on" / "heldout" / "step-2.jsonl").is_file()  # evaluated between steps, not only at the ends
    assert digests[0] == digests[1]
    # sampled pass@1 beside greedy accuracy: 4 samples of each of the 8 problems, their mean in metrics.jsonl
    rows = [json.loads(line) for line in (tmp_path / "on" / "metrics.jsonl").read_text().splitlines()]
    evaluations = [row for row in rows if "heldout/pass@1" in row]
    assert [row["step"] for row in evaluations] == [0, 1, 2, 3]
    for row in evaluations:
        samples = [
            json.loads(line)
            for line in (tmp_path / "on" / "heldout" / f"step-{row['step']}-sampled.jsonl").read_text().splitlines()
        ]
        assert sorted((r["index"], r["sample"]) for r in samples) == [(i, s) for i in range(8) for s in range(4)]
        assert row["heldout/pass@1"] == sum(r["score"] for r in samples) / 32
    sampled_change = json.loads((tmp_path / "on" / "summary.json").read_text())["verdict"]["heldout"]["sampled"]
    assert sampled_change["k"] == 4 and sampled_change["before"] == evaluations[0]["heldout/pass@1"]
    assert f"sampled pass@1 (k=4): {sampled_change['before']:.1%} -> {sampled_change['after']:.1%}" in (
        capsys.readouterr().out
    )


@pytest.mark.slow
def test_a_proxy_reward_that_rises_while_held_out_falls_is_named_reward_hacking(
    tiny_world, tmp_path, capsys, monkeypatch
):
    (tmp_path / "proxy_rewards.py").write_text(PROXY)
    monkeypatch.syspath_prepend(str(tmp_path))
    verdict = push(tmp_path, "proxy_rewards.even_answer", 32, *HELDOUT, *FULL_PRECISION, *HALF_BATCH)  # 16 rows
    printed = capsys.readouterr().out
    assert verdict["trend"]["ci95"][0] > 0  # the proxy reward rose beyond its noise
    assert verdict["heldout"]["paired"]["ci95"][1] < 0  # while held-out accuracy fell
    # the push moved the policy far from its start too (0.84 nats/token on an AVX512-BF16 CPU): that check fires
    # beside it; so may the others where the proxy changed the answers' length or spread (length drift did there)
    names = [check["name"] for check in verdict["checks"]]
    assert names[:2] == ["reward hacking", "held-out fell"] and "drift from the start" in names
    assert "; rose: even_answer; held-out scored by math_accuracy while held-out accuracy -" in printed
    assert "  warning: reward hacking: the training reward rose +" in printed
    assert "while held-out accuracy -" in printed


@pytest.mark.slow
def test_a_reward_that_pays_for_length_is_named_length_drift(tiny_world, tmp_path, capsys):
    """A reward for characters: the policy stops ending its answers. The push is about the verdict, not the 4-bit
    path, so it runs in full precision, and long enough that the change has happened on every CPU: it comes
    suddenly, and where it comes depends on the CPU's last bits. In 4-bit, 24 steps left an AVX512-BF16 CPU at 93
    held-out tokens (92% cut at the budget) and an AVX2 one at 53 (none cut). In full precision, at 24 / 32 steps:
    67 / 96 tokens (34% / 98% cut) on AVX512-BF16, 74 / 89 (48% / 84%) with AVX2 kernels (docs/test-suite.md)."""
    verdict = push(
        tmp_path,
        "tests.recipes.reward_probes.longer",
        32,
        *("--heldout_task", "tiny", "--heldout_limit", "50"),
        *FULL_PRECISION,
    )
    printed = capsys.readouterr().out
    (length_before, length_after), (_, clipped_after) = verdict["drift"]["length"], verdict["drift"]["clipped"]
    assert length_after > length_before and clipped_after > 0.05  # longer, and cut at the budget
    assert "length drift" in [check["name"] for check in verdict["checks"]]
    assert f"  warning: length drift: held-out completions {length_before:.0f} -> {length_after:.0f} tokens" in printed
    assert f"{clipped_after:.0%} cut at the budget, while held-out accuracy " in printed


@pytest.mark.slow
def test_a_reward_that_pays_for_brevity_is_named_entropy_collapse(tiny_world, tmp_path, capsys):
    """A reward for saying less: the policy learns to stop at once, and is certain of it (on an AVX512-BF16 CPU
    held-out completions went from 49 tokens to none, and the token entropy, the stop measured where it is decided,
    from 0.028 to 0.001 nats): its outputs converged to one answer, and the check names it."""
    verdict = push(
        tmp_path, "tests.recipes.reward_probes.shorter", 32, "--heldout_task", "tiny", "--heldout_limit", "50"
    )
    printed = capsys.readouterr().out
    start, end = verdict["drift"]["entropy"]
    assert end < 0.25 * start and verdict["drift"]["length"][1] < verdict["drift"]["length"][0]
    assert "entropy collapse" in [check["name"] for check in verdict["checks"]]
    assert f"  warning: entropy collapse: token entropy {start:.3f} -> {end:.3f} nats (below 25% of its start)" in (
        printed
    )
