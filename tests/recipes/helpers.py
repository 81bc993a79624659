"""Shared by the recipe tests: run a recipe in-process or as a CLI, check what it saved."""

import json
import signal
import sys
import time
from importlib import import_module
from pathlib import Path

import pytest
import torch

from studies.processes import Run
from tests.conftest import NO_HELDOUT, REPO_ROOT, start_command


def run_recipe(module, config: str, *overrides: str, heldout: bool = False):
    """Parses exactly as the CLI does (TrlParser, YAML + overrides) and runs main() in this process. Held-out
    evaluation (in a training recipe) as the config has it with `heldout`, else only where the overrides ask for it."""
    from core.inputs.config import parse_config

    parser = module_parser(module)
    quiet = () if heldout else heldout_off(parser)
    argv = sys.argv
    sys.argv = [module.__name__, "--config", str(REPO_ROOT / config), *quiet, *overrides]
    try:
        return module.main(*parse_config(parser))
    finally:
        sys.argv = argv
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)


def module_parser(module):
    """The recipe's own TrlParser: main() is annotated with the dataclasses its entry point parses (and takes where
    their values came from last, with a default)."""
    import inspect

    from trl import TrlParser

    parameters = inspect.signature(module.main).parameters.values()
    return TrlParser(tuple(p.annotation for p in parameters if p.default is inspect.Parameter.empty))


def heldout_off(parser) -> tuple[str, ...]:
    """The flags that turn held-out evaluation off, for a recipe whose parser has them (every training recipe, not
    recipes.pairs)."""
    from core.evaluation.heldout import HeldoutArguments

    return NO_HELDOUT if HeldoutArguments in parser.dataclass_types else ()


def count_4bit(model) -> int:
    import bitsandbytes as bnb

    return sum(isinstance(m, bnb.nn.Linear4bit) for m in model.modules())


def assert_adapter_loads_and_generates(run_dir: Path, base: Path):
    """The saved adapter loads onto the 4-bit base and the result generates text."""
    from peft import PeftModel
    from trl import ModelConfig

    from core.evaluation.generation import generate
    from core.inputs.models import load_model, load_tokenizer

    model_args = ModelConfig(
        model_name_or_path=str(base), load_in_4bit=True, use_bnb_nested_quant=True, dtype="float32"
    )
    model = PeftModel.from_pretrained(load_model(model_args), run_dir)
    assert count_4bit(model) > 0
    assert any("lora_A" in n and p.abs().sum() > 0 for n, p in model.named_parameters())
    tokenizer = load_tokenizer(ModelConfig(model_name_or_path=str(run_dir)))
    text = generate(
        model,
        tokenizer,
        [[{"role": "user", "content": "Ana has 12 coins. Ana gets 30 more. How many coins does Ana have now?"}]],
        max_new_tokens=40,
    )[0][0]
    assert len(text.strip()) > 10


def metrics_steps(run_dir: Path) -> list[int]:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [row["step"] for row in rows if "loss" in row or "objective/scores" in row]  # training steps only


def cli(method: str, *args: str, env=None) -> Run:
    """`python -m recipes.<method>` as its own process (forked from the server that imported the libraries once,
    `studies/processes.py`), the held-out evaluation off, Ctrl-C at its default; `env`: variables added to this
    process's, which the recipe's code reads when it uses them. Its output: `communicate()`, or its `log`."""
    command = [
        sys.executable,
        "-m",
        f"recipes.{method}",
        *heldout_off(module_parser(import_module(f"recipes.{method}"))),
    ]
    return start_command([*command, *args], env=env)


def run_and_sigterm_after(proc: Run, checkpoint: Path, timeout: float = 600) -> str:
    """Sends SIGTERM once `checkpoint` is complete; returns the process output."""
    deadline = time.monotonic() + timeout
    while not (checkpoint / "trainer_state.json").exists():
        if proc.poll() is not None:
            raise AssertionError(f"run ended before {checkpoint.name}:\n{proc.communicate()[0][-3000:]}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"no {checkpoint} after {timeout}s")
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=timeout)
    return output


def tree_digest(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def lora_weights_changed(run_dir: Path) -> bool:
    from safetensors.torch import load_file

    weights = load_file(str(run_dir / "adapter_model.safetensors"))
    return any("lora_B" in k and torch.count_nonzero(v) > 0 for k, v in weights.items())


def assert_run_summary(run_dir: Path, method: str, printed: str, steps: int = 2, heldout: bool = False) -> dict:
    """The end-of-run summary: printed, and in summary.json with the values metrics.jsonl and cost.json hold; with
    `heldout`, the verdict's block too (held-out before -> after at steps 0 and the last, drift)."""
    from core.runs.metrics import REWARD_KEYS, first_last, reward_curve

    summary = json.loads((run_dir / "summary.json").read_text())
    first, last = first_last(reward_curve(run_dir, REWARD_KEYS[method]))
    assert first is not None
    assert (summary["method"], summary["steps"], summary["signal"]) == (method, steps, REWARD_KEYS[method])
    assert (summary["signal_first"], summary["signal_last"]) == (first, last)
    cost = json.loads((run_dir / "cost.json").read_text())
    assert summary["peak_memory_mb"] == cost["peak_memory_mb"] > 0 and summary["train_seconds"] > 0
    split = cost["time_split"]  # where the training seconds went: every one counted once
    assert summary["time_split"] == split and list(split) == ["generation", "rewards", "heldout", "forward_backward"]
    assert abs(sum(split.values()) - cost["train_seconds"]) < 1e-6 and split["forward_backward"] > 0
    assert (split["generation"] > 0) == (method in ("grpo", "ppo"))  # DPO/ORPO train on pairs, generate nothing
    assert (split["heldout"] > 0) == heldout
    assert f"  time     generation {split['generation']:.1f} s (" in printed
    assert (run_dir / "metrics.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"{method.upper()} finished: {steps} steps in " in printed
    assert f"{REWARD_KEYS[method]} {first:.3f} -> {last:.3f}" in printed
    assert "make eval MODEL=" in printed and f"ADAPTER={run_dir}" in printed and f"make plot RUN={run_dir}" in printed
    assert "[rank" not in printed  # a single process has no rank line
    # GRPO's share of groups without reward spread, always (not only when it trips the no-signal check)
    zero = [
        json.loads(line).get("frac_reward_zero_std") for line in (run_dir / "metrics.jsonl").read_text().splitlines()
    ]
    zero = [z for z in zero if z is not None]
    assert (summary["zero_spread_groups"] is not None) == (method == "grpo") == bool(zero)
    if zero:
        assert summary["zero_spread_groups"]["mean"] == pytest.approx(sum(zero) / len(zero))
        assert f"  groups   {sum(zero) / len(zero):.0%} with no reward spread (frac_reward_zero_std" in printed
    if heldout:
        assert_heldout_block(run_dir, printed, steps)
    return summary


def assert_heldout_block(run_dir: Path, printed: str, steps: int) -> dict:
    settings = json.loads((run_dir / "heldout" / "settings.json").read_text())
    held = json.loads((run_dir / "summary.json").read_text())["verdict"]["heldout"]
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    evaluations = [row for row in rows if "heldout/accuracy" in row]
    assert [row["step"] for row in evaluations] == [0, steps] and held["steps"] == [0, steps]
    assert (held["before"], held["after"]) == (evaluations[0]["heldout/accuracy"], evaluations[-1]["heldout/accuracy"])
    assert held["n"] == settings["n"] > 0
    for step in (0, steps):
        scores = [
            json.loads(line)["score"] for line in (run_dir / "heldout" / f"step-{step}.jsonl").read_text().splitlines()
        ]
        assert len(scores) == settings["n"] and all(s in (0.0, 1.0) for s in scores)
    assert (
        f"held-out {settings['task']}, {settings['n']} problems, greedy: {held['before']:.1%} -> {held['after']:.1%}"
        in printed
    )
    assert "  drift     KL from the start " in printed and f"LIMIT={settings['n']}" in printed
    # what held-out evaluation will cost, printed once the start model's evaluation has been timed
    took = evaluations[0]["heldout/seconds"]
    cost = f"held-out: {settings['n']} problems took {took:.1f} s at step 0; 1 more evaluation (step {steps})"
    assert cost in printed
    return held
