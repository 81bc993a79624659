"""`make study-k`: how big should GRPO's group k be, with an exact reward and with a noisy one? GRPO with k in
{2, 4, 8, 16} crossed with reward noise in {0, 0.3} (`reward_noise`: each 0/1 training reward flipped with that
probability; held-out accuracy is scored with the clean reward), at equal completions per run (k x prompts = 1,024:
every k generates as much) and, without noise, at equal prompts (128, k=8's: cost grows with k).
Reported per cell: held-out sampled pass@1 and greedy accuracy against k=8 (the shipped k), the share of groups
whose k rewards were all equal (TRL's frac_reward_zero_std: no signal), seconds per step, peak memory, and the 7B
memory estimate at that k (studies.memory.estimate, the shipped 7B config).

Usage:
    make study-k                        # = python -m studies.grid.group_size --profile tiny --seeds 3
    make study-k SEEDS=1                # a quick look
    make study-k PROFILE=7b             # the same grid on one GPU

Writes results/studies/group-size/: summary.json, settings.json, README.md (its answer generated from the numbers),
group-size.png.
"""

from studies.comparison.versus import points
from studies.grid.engine import Cell, parse_study, publish, run_study, study_arguments
from studies.grid.report import (
    WHAT_THE_NUMBERS_SAY,
    against_reference,
    on_one_gpu,
    plot_against_drift,
    provenance,
    seed_spread,
    table,
)
from studies.memory.estimate import estimate_all

GROUP_SIZES = (2, 4, 8, 16)
NOISE = (0.0, 0.3)
COMPLETIONS = 1024  # k x prompts in every run: 128 prompts at the shipped k=8 (the comparison's GRPO: 2,560)
ZERO_SPREAD = "frac_reward_zero_std"


def cells(completions: int = COMPLETIONS) -> list[Cell]:
    """k x noise at equal completions (each against k=8 at its noise level), and k at equal prompts (the prompts
    k=8 sees at equal completions, so k=8 there is the same run as `k=8 noise=0`, its reference)."""
    grid = []
    for noise in NOISE:
        reference = f"k=8 noise={noise:g}"
        for k in GROUP_SIZES:
            name = f"k={k} noise={noise:g}"
            grid.append(
                Cell(
                    name,
                    "grpo",
                    ("--num_generations", str(k), "--reward_noise", str(noise)),
                    f"equal completions, noise {noise:g}",
                    None if name == reference else reference,
                    completions // k,
                    (ZERO_SPREAD,),
                )
            )
    prompts = completions // 8
    for k in (k for k in GROUP_SIZES if k != 8):
        grid.append(
            Cell(
                f"k={k} prompts={prompts}",
                "grpo",
                ("--num_generations", str(k)),
                "equal prompts, noise 0",
                "k=8 noise=0",
                prompts,
                (ZERO_SPREAD,),
            )
        )
    return grid


def memory_at_7b() -> dict:
    """GRPO's estimated GB at 7B (the shipped 7b config, studies.memory.estimate) two ways: with one group of k
    completions per micro-batch (micro-batch = k, so activations grow with k), keyed by k as in summary.json; and as
    shipped, where TRL's generation batch is per_device_train_batch_size x steps_per_generation whatever k is, so k
    changes the prompts per batch, not the memory."""
    shipped, settings = estimate_all("qwen2.5-7b", "7b")
    per_k = {str(k): estimate_all("qwen2.5-7b", "7b", k=k)[0]["grpo"]["total_gb"] for k in GROUP_SIZES}
    return {
        "one_group_per_micro_batch": per_k,
        "shipped": shipped["grpo"]["total_gb"],
        "shipped_micro_batch": settings["grpo"].micro_batch,
    }


def told_apart(own: list[dict]) -> str:
    """The cells of a group told apart from their reference in sampled pass@1, with the points; or that none is."""
    apart = [c for c in own if (c.get("sampled_vs_reference") or {}).get("claimed")]
    if not apart:
        return f"no k told apart from {own[0]['reference_cell'] or own[0]['cell']}"
    return (
        ", ".join(
            f"{c['cell'].split()[0]} {points(c['sampled_vs_reference']['mean'], c['sampled_vs_reference']['ci95'])}"
            for c in apart
        )
        + f" points against {apart[0]['reference_cell']}"
    )


def groups(summary: dict) -> dict[str, list[dict]]:
    return {
        g: [c for c in summary["cells"] if c["group"] == g]
        for g in dict.fromkeys(c["group"] for c in summary["cells"])
    }


def answer(summary: dict) -> list[str]:
    """Per group: the mean held-out sampled pass@1 by k, which k are told apart from k=8, the share of zero-spread
    groups by k; then every comparison, the seeds that disagree, and the 7B memory by k."""
    lines = []
    for group, own in groups(summary).items():
        means = ", ".join(f"{c['cell'].split()[0]} {c['sampled_pass1']:.1%}" for c in own)
        spread = ", ".join(
            f"{c['cell'].split()[0]} {c[ZERO_SPREAD]:.0%}" for c in own if c.get(ZERO_SPREAD) is not None
        )
        lines.append(
            f"- {group}: sampled pass@1 {means}; beyond noise: {told_apart(own)}. Groups with no reward spread: "
            f"{spread or 'not logged'}."
        )
    lines += [f"- {s}" for s in against_reference(summary)]
    lines += [f"- {s}" for s in seed_spread(summary)]
    memory = summary.get("memory_7b_gb")
    if memory:
        lines.append(
            "- GRPO at 7B (estimated from the shipped 7b config), one group of k per micro-batch: "
            + ", ".join(f"k={k} {gb:.2f} GB" for k, gb in memory["one_group_per_micro_batch"].items())
            + f". As shipped (micro-batch {memory['shipped_micro_batch']}, a fixed generation batch), k changes the "
            f"prompts per batch, not the memory: {memory['shipped']:.2f} GB at any k."
        )
    return lines


def headline(summary: dict) -> str:
    """One sentence: per group, which k are told apart from k=8 in sampled pass@1; the zero-spread share at the
    smallest and largest k without noise; the 7B memory of k=16 against k=8 with one group per micro-batch."""
    parts = [f"{group}: {told_apart(own)}" for group, own in groups(summary).items()]
    clean = [
        c for c in summary["cells"] if c["group"] == "equal completions, noise 0" and c.get(ZERO_SPREAD) is not None
    ]
    if len(clean) > 1:
        parts.append(
            f"groups with no reward spread {clean[0][ZERO_SPREAD]:.0%} at {clean[0]['cell'].split()[0]} -> "
            f"{clean[-1][ZERO_SPREAD]:.0%} at {clean[-1]['cell'].split()[0]}"
        )
    memory = (summary.get("memory_7b_gb") or {}).get("one_group_per_micro_batch")
    if memory:
        parts.append(f"at 7B with one group per micro-batch k=16 needs {memory['16']:.2f} GB, k=8 {memory['8']:.2f}")
    return "; ".join(parts) + "."


COLUMNS = (
    ("no-spread groups", ZERO_SPREAD, ".0%"),
    ("no-spread, last quarter", ZERO_SPREAD + "_last_quarter", ".0%"),
    ("peak MB", "peak_memory_mb", ".0f"),
)


def readme(summary: dict, settings: dict) -> str:
    return "\n".join(
        [
            "# How big should GRPO's group be? (`make study-k`)",
            "",
            provenance(settings),
            f"Equal completions: k x prompts = {settings['prompts'] * 8} in every run (k=2: "
            f"{settings['prompts'] * 4} prompts; k=16: {settings['prompts'] // 2}); equal prompts: "
            f"{settings['prompts']} prompts, so k=16 generates twice k=8's completions. Noise: each 0/1 training "
            "reward flipped with that probability (`rewards.noise.flip_noise`, GRPO's `reward_noise`).",
            "",
            table(summary, COLUMNS),
            "",
            "![held-out accuracy against KL from the start, per cell](group-size.png)",
            "",
            WHAT_THE_NUMBERS_SAY,
            "",
            *answer(summary),
            "",
            on_one_gpu("study-k", summary),
            "",
        ]
    )


def main(argv=None):
    parser = study_arguments(__doc__)
    parser.add_argument("--completions", type=int, default=COMPLETIONS, help="completions per run (k x prompts)")
    args, out = parse_study(parser, "group-size", argv)
    summary, settings = run_study(
        args,
        out,
        "group-size",
        cells(args.completions),
        args.completions // 8,
        extra=lambda: {"memory_7b_gb": memory_at_7b()},
    )
    plot_against_drift(summary, out / "group-size.png")
    publish(out, readme(summary, settings))


if __name__ == "__main__":
    main()
