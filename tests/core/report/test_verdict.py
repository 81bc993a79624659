"""The run's verdict from a run folder's records: the paired before -> after, the trend and its interval, and each
check firing on its own evidence and staying silent otherwise (the thresholds of core/report/verdict.py)."""

import json

import pytest

from core.report.verdict import CLIPPED, ENTROPY_FLOOR, KL_LIMIT, LENGTH_CHANGE, checks, describe, trend, verdict

QUIET = {"length": [50.0, 52.0], "clipped": [0.0, 0.0], "entropy": [0.03, 0.03], "kl": 0.01}
RISING = {"change": 0.3, "ci95": [0.1, 0.5], "n": 8}
FLAT = {"change": 0.0, "ci95": [-0.1, 0.1], "n": 8}
UP = {"mean": 0.15, "ci95": [0.07, 0.23]}
NOT_UP = {"mean": -0.02, "ci95": [-0.08, 0.04]}
DOWN = {"mean": -0.2, "ci95": [-0.3, -0.1]}


def names(found) -> list[str]:
    return [check["name"] for check in found]


def test_trend_interval_separates_a_rise_from_noise():
    rising = trend([(s, 0.5 + 0.01 * s + (0.01 if s % 2 else -0.01)) for s in range(5, 45, 5)])
    assert rising["ci95"][0] > 0 and rising["change"] == pytest.approx(0.35, abs=0.02)
    noisy = trend([(s, 0.6 + (0.1 if s % 10 else -0.1)) for s in range(5, 45, 5)])
    assert noisy["ci95"][0] < 0 < noisy["ci95"][1]
    assert trend([(1, 0.5), (2, 0.6)]) is None  # two points give no interval


@pytest.mark.parametrize(
    ("method", "signal", "paired", "drift", "fired"),
    [
        ("grpo", RISING, UP, QUIET, []),  # the reward rose and held-out rose with it: a run that learned
        ("grpo", FLAT, NOT_UP, QUIET, []),
        ("grpo", RISING, NOT_UP, QUIET, ["reward hacking"]),
        ("ppo", RISING, NOT_UP, QUIET, ["reward hacking"]),
        ("dpo", RISING, NOT_UP, QUIET, []),  # DPO's signal is a pair margin, not a task reward
        ("grpo", FLAT, UP, QUIET | {"length": [50.0, 50.0 * (1 + LENGTH_CHANGE) + 1]}, ["length drift"]),
        ("grpo", FLAT, UP, QUIET | {"length": [50.0, 50.0 * (1 - LENGTH_CHANGE) - 1]}, ["length drift"]),
        ("grpo", FLAT, UP, QUIET | {"clipped": [0.0, CLIPPED + 0.01]}, ["length drift"]),
        ("grpo", FLAT, UP, QUIET | {"kl": KL_LIMIT * 1.5}, ["drift from the start"]),
        ("grpo", FLAT, UP, QUIET | {"entropy": [0.03, 0.03 * ENTROPY_FLOOR * 0.9]}, ["entropy collapse"]),
        ("grpo", FLAT, UP, QUIET | {"entropy": [0.03, 0.03 * ENTROPY_FLOOR * 1.1]}, []),
        ("grpo", FLAT, DOWN, QUIET, ["held-out fell"]),
        ("dpo", RISING, DOWN, QUIET, ["held-out fell"]),  # any method, whatever its signal did
        ("ppo", RISING, DOWN, QUIET, ["reward hacking", "held-out fell"]),
    ],
)
def test_each_check_fires_on_its_evidence_only(method, signal, paired, drift, fired):
    found = checks(method, signal, paired, drift, trained=True)
    assert names(found) == fired
    assert all(check["evidence"] and check["fix"] for check in found)


@pytest.mark.parametrize(
    ("method", "rewards", "trained_on", "scored_by", "fired"),
    [
        # the verifier that scores held-out is what rose on the training prompts: it pays for nothing else
        ("grpo", {"math_accuracy": RISING}, ["math_accuracy"], "math_accuracy", "no held-out gain"),
        ("ppo", {}, ["math_accuracy"], "math_accuracy", "no held-out gain"),  # PPO logs no reward apart
        (
            "grpo",
            {"code_tests": RISING, "code_format": FLAT},
            ["code_tests", "code_format"],
            "code_tests",
            "no held-out gain",
        ),
        # a reward other than the verifier rose: that is what the policy learned to collect
        (
            "grpo",
            {"code_tests": FLAT, "code_format": RISING},
            ["code_tests", "code_format"],
            "code_tests",
            "reward hacking",
        ),
        (
            "grpo",
            {"math_accuracy": RISING, "length": RISING},
            ["math_accuracy", "length"],
            "math_accuracy",
            "reward hacking",
        ),
        ("ppo", {}, ["code_tests", "code_format"], "code_tests", "reward hacking"),  # which one rose is not known
        ("grpo", {"even_answer": RISING}, ["even_answer"], "math_accuracy", "reward hacking"),
        # a user's reward, trained and scoring its own held-out rows, logged by its function's name
        ("grpo", {"even_answer": RISING}, ["my_rewards.even_answer"], "my_rewards.even_answer", "no held-out gain"),
    ],
)
def test_a_rise_of_the_held_out_verifier_itself_is_no_gain_not_reward_hacking(
    method, rewards, trained_on, scored_by, fired
):
    found = checks(method, RISING, NOT_UP, QUIET, True, rewards, trained_on, {scored_by})
    assert names(found) == [fired]
    if fired == "reward hacking":
        risen = [n for n, t in rewards.items() if t is RISING]
        said = f"; rose: {', '.join(risen)}" if risen else f"; trained on {', '.join(trained_on)}"
        assert f"{said}; held-out scored by {scored_by} while held-out accuracy" in found[0]["evidence"]
    else:
        assert "the verifier that scores the held-out problems" in found[0]["evidence"]
    # without knowing what scores held-out, a rise that did not carry stays a warning of reward hacking
    assert names(checks(method, RISING, NOT_UP, QUIET, True, rewards, trained_on)) == ["reward hacking"]


def write_run(out, before: list[float], after: list[float], steps=(0, 40), rewards=(0.5, 0.6, 0.7, 0.8)):
    (out / "heldout").mkdir(parents=True)
    rows = [{"step": 10 * (i + 1), "reward": r} for i, r in enumerate(rewards)]
    for step, scores in zip(steps, (before, after), strict=True):
        (out / "heldout" / f"step-{step}.jsonl").write_text(
            "".join(json.dumps({"index": i, "score": s}) + "\n" for i, s in enumerate(scores))
        )
        rows.append(
            {"step": step, "heldout/accuracy": sum(scores) / len(scores), **{f"heldout/{k}": 0.0 for k in ("kl",)}}
            | {"heldout/length": 50.0, "heldout/clipped": 0.0, "heldout/entropy": 0.03}
        )
    return rows


def test_verdict_pairs_the_same_problems_and_flags_a_rise_that_did_not_carry(tmp_path):
    before = [1.0, 0.0, 1.0, 0.0] * 25
    after = [1.0, 0.0, 0.0, 0.0] * 25  # held-out fell while the reward rose
    result = verdict(tmp_path, write_run(tmp_path, before, after), "grpo", "reward")
    held = result["heldout"]
    assert (held["before"], held["after"], held["n"]) == (0.5, 0.25, 100)
    assert held["paired"]["mean"] == pytest.approx(-0.25) and held["paired"]["ci95"][1] < 0
    assert names(result["checks"]) == ["reward hacking", "held-out fell"]
    text = describe(result, "tiny")
    assert "held-out tiny, 100 problems, greedy: 50.0% -> 25.0% (-25.0% [" in text
    assert "warning: reward hacking: the training reward rose +0.300" in text


def test_the_run_s_held_out_settings_and_logged_rewards_name_a_rise_of_its_verifier(tmp_path):
    """A run that trained math_accuracy and is scored by it on held-out `tiny`: its rise is no held-out gain; with
    a second reward that rose and a held-out task scored by its own rewards, the same numbers are reward hacking."""
    before, after = [1.0, 0.0, 1.0, 0.0] * 25, [1.0, 0.0, 1.0, 0.0] * 25
    rows = write_run(tmp_path, before, after)
    (tmp_path / "heldout" / "settings.json").write_text(json.dumps({"task": "tiny"}))
    rows += [{"step": r["step"], "rewards/math_accuracy/mean": r["reward"]} for r in rows if "reward" in r]
    assert names(verdict(tmp_path, rows, "grpo", "reward")["checks"]) == ["no held-out gain"]
    assert names(verdict(tmp_path, rows, "grpo", "reward", ["math_accuracy"])["checks"]) == ["no held-out gain"]
    rows += [{"step": r["step"], "rewards/even/mean": r["reward"]} for r in rows if "reward" in r]
    assert names(verdict(tmp_path, rows, "grpo", "reward")["checks"]) == ["reward hacking"]
    (tmp_path / "heldout" / "settings.json").write_text(json.dumps({"task": "rewards:even", "rewards": ["even"]}))
    assert names(verdict(tmp_path, rows, "grpo", "reward")["checks"]) == ["reward hacking"]


def test_no_heldout_no_verdict_block_but_the_trend(tmp_path):
    rows = [{"step": s, "reward": 0.5} for s in (5, 10, 15)]
    result = verdict(tmp_path, rows, "grpo", "reward")
    assert result["heldout"] is None and result["checks"] == []
    assert describe(result, None).startswith("  trend     reward +0.000 over the run")
