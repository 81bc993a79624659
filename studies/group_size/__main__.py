"""`make study-k`: how big should GRPO's group k be, with an exact reward and with a noisy one? GRPO with k in
{2, 4, 8, 16} crossed with reward noise in {0, 0.3} (`reward_noise`: each 0/1 training reward flipped with that
probability; held-out accuracy is scored with the clean reward), at equal completions per run (k x prompts = the
comparison's 2,560: every k generates as much) and, without noise, at equal prompts (320: cost grows with k).
Reported per cell: held-out sampled pass@1 and greedy accuracy against k=8 (the shipped k), the share of groups
whose k rewards were all equal (TRL's frac_reward_zero_std: no signal), seconds per step, peak memory, and the 7B
memory estimate at that k (studies.memory.estimate, the shipped 7B config).

Usage:
    make study-k                        # = python -m studies.group_size --profile tiny --seeds 3
    make study-k SEEDS=1                # a quick look
    make study-k PROFILE=7b             # the same grid on one GPU

Writes results/studies/group-size/: summary.json, settings.json, README.md (its answer generated from the numbers).
"""

import argparse
import json
from pathlib import Path

from core.errors import one_line_errors
from studies.comparison.runs import PROFILES
from studies.grid import DRIFT_PROBLEMS, Cell, against_reference, plot_against_drift, run_grid, table
from studies.memory.estimate import estimate_all

GROUP_SIZES = (2, 4, 8, 16)
NOISE = (0.0, 0.3)
COMPLETIONS = 2560  # the comparison's GRPO: 320 prompts x k=8
ZERO_SPREAD = "frac_reward_zero_std"


def cells(completions: int = COMPLETIONS) -> list[Cell]:
    grid = []
    for noise in NOISE:
        for k in GROUP_SIZES:
            grid.append(
                Cell(
                    f"k={k} noise={noise:g}",
                    "grpo",
                    ("--num_generations", str(k), "--reward_noise", str(noise)),
                    group=f"equal completions, noise {noise:g}",
                    reference=k == 8,
                    prompts=completions // k,
                    logged=(ZERO_SPREAD,),
                )
            )
    prompts = completions // 8
    for k in GROUP_SIZES:
        grid.append(
            Cell(
                f"k={k} prompts={prompts}",
                "grpo",
                ("--num_generations", str(k)),
                group="equal prompts, noise 0",
                reference=k == 8,
                prompts=prompts,
                logged=(ZERO_SPREAD,),
            )
        )
    return grid


def memory_at_7b() -> dict:
    """GRPO's estimated GB at 7B (the shipped 7b config) for each k."""
    return {k: estimate_all("qwen2.5-7b", "7b", k=k)[0]["grpo"]["total_gb"] for k in GROUP_SIZES}


def answer(summary: dict) -> list[str]:
    """Per group: the k with the highest held-out sampled pass@1, whether it beats k=8 beyond noise, the share of
    zero-spread groups by k, and the 7B memory by k."""
    lines = []
    for group in dict.fromkeys(c["group"] for c in summary["cells"]):
        own = [c for c in summary["cells"] if c["group"] == group]
        best = max(own, key=lambda c: c["sampled_pass1"])
        spread = ", ".join(
            f"{c['cell'].split()[0]} {c[ZERO_SPREAD]:.0%}" for c in own if c.get(ZERO_SPREAD) is not None
        )
        lines.append(
            f"- {group}: the highest held-out sampled pass@1 is {best['cell']}'s ({best['sampled_pass1']:.1%}); "
            f"groups with no reward spread: {spread or 'not logged'}."
        )
    lines += [f"- {s}" for s in against_reference(summary)]
    memory = summary.get("memory_7b_gb") or {}
    if memory:
        lines.append(
            "- GRPO at 7B (estimated, shipped 7b config): "
            + ", ".join(f"k={k} {gb:.2f} GB" for k, gb in memory.items())
            + "."
        )
    return lines


def write_readme(summary: dict, settings: dict, out: Path) -> str:
    columns = (("no-spread groups", ZERO_SPREAD, ".0%"), ("peak MB", "peak_memory_mb", ".0f"))
    text = "\n".join(
        [
            "# How big should GRPO's group be? (`make study-k`)",
            "",
            f"Measured at commit {settings['commit']} on {settings['cpu']} ({settings['cpus']} cores), "
            f"{settings['seconds']:.0f} s; profile `{settings['profile']}`, {settings['seeds']} seeds per cell, "
            f"{settings['eval_n']} held-out problems (greedy and {settings['eval_k']} samples at "
            f"T={settings['temperature']}), scored with the clean reward.",
            "",
            table(summary, columns),
            "",
            "What the numbers say (generated from summary.json; an order only where the seeds x problems interval "
            "excludes zero):",
            "",
            *answer(summary),
            "",
        ]
    )
    (out / "README.md").write_text(text)
    return text


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="tiny", choices=sorted(PROFILES))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--completions", type=int, default=COMPLETIONS, help="completions per run (k x prompts)")
    parser.add_argument("--eval_k", type=int, help="samples per held-out problem (the profile's)")
    parser.add_argument("--eval_limit", type=int, help="held-out problems (the profile's)")
    parser.add_argument("--drift_problems", type=int, default=DRIFT_PROBLEMS, help="held-out problems each run scores")
    parser.add_argument("--cells", nargs="+", help="run only these cells (names as in the table)")
    parser.add_argument("--out", help="default results/studies/group-size (tiny), -<profile> otherwise")
    one_line_errors()
    args = parser.parse_args(argv)
    profile = PROFILES[args.profile]
    out = Path(args.out or ("results/studies/group-size" + ("" if args.profile == "tiny" else f"-{args.profile}")))
    everything = cells(args.completions)
    grid = [c for c in everything if not args.cells or c.name in args.cells]
    if args.cells and len(grid) != len(args.cells):
        known = [c.name for c in everything]
        raise SystemExit(f"--cells: unknown {sorted(set(args.cells) - set(known))}; known: {known}")
    eval_k = args.eval_k or profile["eval_k"]
    summary, settings = run_grid(
        "group-size",
        args.profile,
        grid,
        args.seeds,
        args.completions // 8,
        out,
        eval_k,
        args.eval_limit,
        args.drift_problems,
    )
    summary["memory_7b_gb"] = memory_at_7b()
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    plot_against_drift(summary, out / "group-size.png")
    print(write_readme(summary, settings, out))


if __name__ == "__main__":
    main()
