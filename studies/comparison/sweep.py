"""`make sweep`: each method's learning rate from a small grid, chosen on the validation split (never the held-out
test); writes sweep.json and sweep.png."""

import json
from pathlib import Path

from core.evaluation.benchmarks import TASKS, load_task_data
from core.runs.provenance import commit, cpu
from studies.runner import (
    METHODS,
    PREFERENCE_METHODS,
    PROFILES,
    evaluate,
    precision_flags,
    recipe_config,
    sample_pairs,
    train_all,
)


def sweep(
    profile: str,
    prompts: int,
    out: Path,
    methods,
    grid: dict,
    validation: str,
    k: int,
    limit: int | None,
    load_in_4bit: bool = True,
) -> list[dict]:
    """Each method at each learning rate of its grid (seed 0, the comparison's budget, in 4-bit or full precision),
    scored on the validation split; the best validation sampled pass@1 per method is `chosen`. Writes sweep.json and
    sweep.png."""
    config = recipe_config(profile, "grpo")[1]
    task = PROFILES[profile]["task"]
    rows = load_task_data(TASKS[task], validation, limit)
    results = []
    measured = {"commit": commit(), **cpu()}  # rows of several sweeps can sit in one file: each says where it ran
    flags = precision_flags(load_in_4bit)
    # one set of pairs for every learning rate: the rates are compared on the same data, sampled once (sampling
    # again per rate cost a pairs run each and could differ by the CPU kernels' rounding)
    pairs_file = None
    if set(PREFERENCE_METHODS) & set(methods):
        (out / "sweep").mkdir(parents=True, exist_ok=True)
        pairs_file = sample_pairs(profile, prompts, out / "sweep", 0, flags=flags)
    for index in range(max(len(grid[m]) for m in methods)):
        rates = {m: grid[m][index] for m in methods if index < len(grid[m])}
        folder = out / "sweep" / f"grid-{index}"
        folder.mkdir(parents=True, exist_ok=True)
        runs = train_all(
            profile, prompts, folder, list(rates), 0, rates, checkpoints=0, flags=flags, pairs_file=pairs_file
        )
        for (method, _), run_dir in runs.items():
            metrics, _ = evaluate(
                config["model_name_or_path"],
                run_dir,
                task,
                rows,
                k,
                config["temperature"],
                greedy=False,
                load_in_4bit=load_in_4bit,
            )
            results.append(
                {
                    "method": method,
                    "learning_rate": rates[method],
                    "validation_sampled_pass1": metrics["sampled"],
                    "ci95": metrics["sampled_ci95"],
                    "validation_n": len(rows),
                    "k": k,
                    "measured": measured,
                }
            )
            print(
                f"[sweep] {method} lr {rates[method]:g}: validation sampled pass@1 {metrics['sampled']:.3f}",
                flush=True,
            )
    for method in methods:
        best = max((r for r in results if r["method"] == method), key=lambda r: r["validation_sampled_pass1"])
        for r in results:
            if r["method"] == method:
                r["chosen"] = r is best
    # A sweep of some methods keeps the earlier rows of the others (`make sweep ARGS="--methods ipo"`).
    path = out / "sweep.json"
    kept = [r for r in json.loads(path.read_text()) if r["method"] not in methods] if path.is_file() else []
    results = kept + results
    results.sort(key=lambda r: (METHODS.index(r["method"]), r["learning_rate"]))
    (out / "sweep.json").write_text(json.dumps(results, indent=2) + "\n")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for method in dict.fromkeys(r["method"] for r in results):
        rows_ = [r for r in results if r["method"] == method]
        ax.errorbar(
            [r["learning_rate"] for r in rows_],
            [r["validation_sampled_pass1"] for r in rows_],
            yerr=[
                [r["validation_sampled_pass1"] - r["ci95"][0] for r in rows_],
                [r["ci95"][1] - r["validation_sampled_pass1"] for r in rows_],
            ],
            marker="o",
            capsize=3,
            label=method,
        )
    ax.set_xscale("log")
    ax.set_xlabel("learning rate")
    ax.set_ylabel("validation sampled pass@1 (95% CI)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "sweep.png", dpi=100)
    plt.close(fig)
    return results
