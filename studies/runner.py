"""Training the comparison's and the studies' runs: each method in its own process through its recipe (forked from
one that imported the libraries once: studies.processes), on a budget of prompts or pairs, and what `--resume` keeps
of them; studies.scoring scores them."""

import json
import math
import shutil
import sys
import time
from pathlib import Path

import yaml

from core.inputs.data import pairs_cost
from core.runs.folder import read_jsonl
from studies.processes import run_command

METHODS = ("grpo", "ppo", "dpo", "ipo", "orpo")
PREFERENCE_METHODS = ("dpo", "ipo", "orpo")  # train one epoch on pairs sampled from the start model
# IPO is DPO's script with its own YAML (loss_type: [ipo]); its memory is DPO's (the same trainer and tensors).
SCRIPT = {"ipo": "dpo"}

PROFILES = {
    "tiny": {
        "task": "tiny",
        "prompts": 320,
        "eval_limit": None,
        "eval_k": 8,
        "model_name": "artifacts/tiny/model",
        "validation": "artifacts/tiny/data/validation.jsonl",
    },
    "tiny-code": {
        "task": "tiny-code",
        "prompts": 320,
        "eval_limit": None,
        "eval_k": 8,
        "model_name": "artifacts/tiny-code/model",
        "validation": "artifacts/tiny-code/data/validation.jsonl",
    },
    # the length world (studies/grid/length; GRPO only): the math world where a policy can choose its length
    "tiny-length": {
        "task": "tiny-length",
        "prompts": 320,
        "eval_limit": None,
        "eval_k": 8,
        "model_name": "artifacts/tiny-length/model",
        "validation": "artifacts/tiny-length/data/validation.jsonl",
    },
    # the real model offline (make smol, docs/smol.md): make grpo PROFILE=smol's 56 prompts; hours on 2 cores per seed.
    # Its table also says which of the tiny math world's claims hold on it (`checks`: the published tiny table).
    "smol": {
        "task": "smol",
        "prompts": 56,
        "eval_limit": 100,  # the first 100 held-out (and validation) problems, as make grpo PROFILE=smol scores
        "eval_k": 4,
        "model_name": "artifacts/smol/model",
        "validation": "artifacts/smol/data/validation.jsonl",
        "checks": "tiny",
        # no accuracy-against-compute curve: its 4 checkpoints x 5 methods a seed, each scored on validation, would
        # cost more than the table's own training and evaluation on 2 cores
        "checkpoints": 0,
        # make sweep: each learning rate checked at x 1/3, 1, 3 of `centres` on one seed (hours a point here). The
        # centres are the configs' rates before this sweep: the configs now train at the rate it chose, and the
        # command still checks the points sweep.json holds.
        "sweep": {
            "seeds": 1,
            "extend": 0,
            "key_points": 0,
            "centres": {"grpo": 2e-4, "ppo": 1e-4, "dpo": 5e-5, "ipo": 5e-5, "orpo": 5e-5},
        },
    },
    "7b": {
        "task": "gsm8k",
        "prompts": 512,
        "eval_limit": 500,
        "eval_k": 4,
        "model_name": "qwen2.5-7b",
        "validation": None,
    },
}

# The sweep's grid: learning rates around each method's working range on the tiny worlds.
SWEEP_GRID = {
    "grpo": [2e-4, 5e-4, 1e-3],
    "ppo": [2e-4, 5e-4, 1e-3],
    "dpo": [5e-5, 1e-4, 5e-4],
    "ipo": [5e-5, 1e-4, 5e-4],
    "orpo": [5e-5, 1e-4, 5e-4],
}

CHECKPOINTS = 4  # accuracy against compute: an adapter at every quarter of the budget
ADAPTER = "adapter_model.safetensors"


def recipe_config(profile: str, method: str) -> tuple[Path, dict]:
    path = Path("recipes/configs") / profile / f"{method}.yaml"
    if not path.is_file():
        raise SystemExit(f"--profile {profile}: no recipe config {path}")
    return path, yaml.safe_load(path.read_text())


def samples_per_step(method: str, config: dict) -> int:
    """Samples an optimizer step trains on: completions for GRPO (k per prompt) and PPO (one per prompt, over all its
    mini-batches), pairs for DPO/ORPO."""
    per_step = config.get("per_device_train_batch_size", 8) * config.get("gradient_accumulation_steps", 1)
    return per_step * config.get("num_mini_batches", 1) if method == "ppo" else per_step


def steps_for(method: str, config: dict, prompts: int) -> int:
    """Optimizer steps that show each of `prompts` prompts once (GRPO and PPO; DPO/ORPO run one epoch)."""
    group = config.get("num_generations", 8) if method == "grpo" else 1
    prompts_per_step = samples_per_step(method, config) // group
    return max(1, math.ceil(prompts / prompts_per_step))


def run(command: list[str], log: Path) -> tuple[float, float | None]:
    """Wall and CPU seconds of `command`, a process of its own (`studies.processes`), its output in `log`."""
    start = time.time()
    returncode, cpu = run_command(command, log)
    if returncode:
        raise SystemExit(
            f"{' '.join(command)} failed (exit {returncode}); see {log}:\n"
            + "\n".join(log.read_text().splitlines()[-15:])
        )
    return time.time() - start, cpu


def add_precision_argument(parser) -> None:
    """`--load_in_4bit true|false`, for the comparison and every study."""
    parser.add_argument(
        "--load_in_4bit",
        choices=["true", "false"],
        help="train, sample pairs and score in 4-bit NF4 (true) or full precision (default: the profile's configs)",
    )


def resolve_load_in_4bit(profile: str, flag: str | None) -> bool:
    """The precision `--load_in_4bit` asks for, or else the one the profile's configs train in."""
    return bool(recipe_config(profile, "grpo")[1].get("load_in_4bit")) if flag is None else flag == "true"


def precision_flags(load_in_4bit: bool) -> tuple[str, ...]:
    """The recipe flags that train (and sample) in full precision instead of the tiny configs' 4-bit NF4."""
    return () if load_in_4bit else ("--load_in_4bit", "false")


def sample_pairs(
    profile: str,
    prompts: int,
    out: Path,
    seed: int,
    adapter: Path | None = None,
    skip: int = 0,
    name: str = "",
    flags=(),
) -> Path:
    """`make pairs` on `prompts` training prompts after the first `skip`: k samples each at GRPO's k and temperature,
    from the starting model or with `adapter` on (on-policy pairs from the current policy), scored with the same
    rewards; the file DPO, IPO and ORPO train on. `flags` go to the pairs recipe (e.g. `precision_flags`)."""
    pairs_path = recipe_config(profile, "pairs")[0]
    grpo_config = recipe_config(profile, "grpo")[1]
    pairs_file = out / f"{name or 'pairs'}-seed{seed}.jsonl"
    command = [sys.executable, "-m", "recipes.pairs", "--config", str(pairs_path), "--max_prompts", str(prompts)]
    command += ["--num_samples", str(grpo_config.get("num_generations", 8)), "--seed", str(seed)]
    command += ["--temperature", str(grpo_config.get("temperature", 1.0)), "--output", str(pairs_file)]
    if skip:
        command += ["--skip_prompts", str(skip)]
    if adapter is not None:
        command += ["--adapter", str(adapter)]
    wall, cpu = run([*command, *flags], out / f"{name or 'pairs'}-seed{seed}.log")
    sampled = json.loads(pairs_cost(pairs_file).read_text())  # the recipe's own: prompts, completions, tokens
    cost = {"wall_seconds": wall, "cpu_seconds": cpu, **sampled}
    pairs_cost(pairs_file).write_text(json.dumps(cost, indent=2) + "\n")
    return pairs_file


def completions_generated(method: str, config: dict, steps: int) -> int:
    """Completions a run had sampled after `steps` optimizer steps: GRPO's and PPO's as they trained; DPO's, IPO's and
    ORPO's all before (the pairs' sampling, recorded beside the pairs file), whatever their step."""
    if method in PREFERENCE_METHODS:
        return json.loads(pairs_cost(Path(config["dataset_name"])).read_text())["completions_generated"]
    return samples_per_step(method, config) * steps


def recipe_command(
    profile: str,
    method: str,
    run_dir: Path,
    seed: int,
    prompts: int,
    pairs_file: Path | None = None,
    learning_rate: float | None = None,
    checkpoints: int = 0,
    flags=(),
) -> tuple[list[str], int]:
    """The recipe's command line for one run on the study's budget (each of `prompts` prompts once; one epoch of
    `pairs_file` for the preference methods), and its optimizer steps. `flags` come last, so they win."""
    path, config = recipe_config(profile, method)
    command = [sys.executable, "-m", f"recipes.{SCRIPT.get(method, method)}", "--config", str(path)]
    # held-out evaluation during training off: the studies score every adapter themselves, on more problems, and
    # the runs' own evaluations would only add their seconds to each method's time (a study's flags may turn it on)
    command += ["--output_dir", str(run_dir), "--logging_steps", "1", "--seed", str(seed), "--heldout_limit", "0"]
    if method in PREFERENCE_METHODS:
        steps = max(1, math.ceil(sum(1 for _ in open(pairs_file)) / samples_per_step(method, config)))
        command += ["--dataset_name", str(pairs_file), "--max_steps", "-1", "--num_train_epochs", "1"]
    else:
        overridden = {**config, **_numeric_flags(flags)}  # a study's num_generations or batch changes the steps
        steps = steps_for(method, overridden, prompts)
        command += ["--max_train_samples", str(prompts), "--max_steps", str(steps)]
    if learning_rate is not None:
        command += ["--learning_rate", str(learning_rate)]
    # every 1/checkpoints of the budget, all kept (the recipe YAMLs keep only the last few)
    if checkpoints:
        command += ["--save_strategy", "steps", "--save_steps", str(max(1, steps // checkpoints))]
        command += ["--save_total_limit", str(steps + 1)]
    else:
        command += ["--save_strategy", "no"]
    return command + list(flags), steps


def _numeric_flags(flags) -> dict:
    """`--key value` pairs among `flags` whose value is an integer (the keys that set a run's steps)."""
    flags = list(flags)
    return {
        key[2:]: int(value)
        for key, value in zip(flags, flags[1:], strict=False)
        if key.startswith("--") and value.lstrip("-").isdigit()
    }


def train_all(
    profile: str,
    prompts: int,
    out: Path,
    methods,
    seed: int = 0,
    learning_rates: dict | None = None,
    checkpoints: int = CHECKPOINTS,
    flags=(),
    pairs_file: Path | None = None,
    prompts_for: dict | None = None,
    resume: bool = False,
    method_flags: dict | None = None,
) -> dict:
    """Train every method once with `seed`, each in its own process; returns (method, seed) -> run folder. With
    `checkpoints`, each run saves its adapter at every 1/checkpoints of its budget (and their times). `flags` go to
    every recipe, the pairs' sampling included; `method_flags` (method -> flags) to that method's recipe only. The
    preference methods train on `pairs_file`, sampled here from `prompts` prompts when not given; `prompts_for`
    gives a method other than `prompts` training prompts (the comparison's same-completions budget: PPO on k x the
    prompts). With `resume`, a run that finished before (its summary.json written) is kept where `keepable`, and so
    are the pairs it trained on; any other is trained again from the start."""
    runs = {}
    if pairs_file is None and set(PREFERENCE_METHODS) & set(methods):
        kept = out / f"pairs-seed{seed}.jsonl"
        if resume and kept.is_file() and pairs_cost(kept).is_file():
            pairs_file = kept
        else:
            pairs_file = sample_pairs(profile, prompts, out, seed, flags=flags)
    for method in methods:
        run_dir = out / f"{method}-seed{seed}"
        if resume and (run_dir / "summary.json").is_file():
            if keepable(run_dir, out):
                print(f"[compare] {method} (seed {seed}): finished before, kept ({run_dir})", flush=True)
                runs[(method, seed)] = run_dir
                continue
            print(
                f"[compare] {method} (seed {seed}): finished before, but its adapter is gone (records only, as a "
                "clone has them) and its checkpoints or evaluation still need it: trained again",
                flush=True,
            )
        shutil.rmtree(run_dir, ignore_errors=True)  # the study's own run folder from an earlier `make compare`
        for prefix in ("eval_", "eval_matched_"):  # an earlier run's evaluations: never kept for a run trained again
            for suffix in (".json", ".jsonl"):
                (out / f"{prefix}{method}-seed{seed}{suffix}").unlink(missing_ok=True)
        rate = (learning_rates or {}).get(method)
        count = (prompts_for or {}).get(method, prompts)
        own = (*flags, *(method_flags or {}).get(method, ()))
        command, _ = recipe_command(profile, method, run_dir, seed, count, pairs_file, rate, checkpoints, own)
        print(f"[compare] training {method} (seed {seed}) ...", flush=True)
        seconds, _ = run(command, out / f"{method}-seed{seed}.log")
        print(f"[compare] {method} (seed {seed}) done in {seconds:.0f} s", flush=True)
        runs[(method, seed)] = run_dir
    return runs


def keepable(run_dir: Path, out: Path) -> bool:
    """Whether `--resume` may keep the finished run in `run_dir`: its adapter is there, or nothing the table still
    reads needs the weights (its held-out evaluation kept in `out`, and no checkpoints that curves and matched
    compute would score). A table spread over sessions commits records, not adapters: a run of a table with
    checkpoints is trained again in a clone rather than found without the weights it is scored from."""
    if (run_dir / ADAPTER).is_file():
        return True
    evaluated = all((out / f"eval_{run_dir.name}{suffix}").is_file() for suffix in (".json", ".jsonl"))
    return evaluated and not read_jsonl(run_dir / "checkpoints.jsonl")
