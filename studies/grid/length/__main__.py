"""`make study-length`: does GRPO's normalisation push wrong answers longer? GRPO with each of TRL 1.12's four
length normalisations (`loss_type`): `grpo` (each completion's token losses averaged over its own length, then
over completions: the per-sequence normalisation Dr. GRPO argues against), `bnpo` (over the micro-batch's tokens),
`dr_grpo` (over a constant, completions x max_completion_length) and `dapo` (over the generation batch's tokens;
TRL 1.12's default, so the reference). TRL 1.12 also has cispo, sapo, luspo and vespo, which change the clipping
or the ratio as well, not only the normalisation; they are left out.

The tiny math world's answers all have the same shape (80-88 characters, right or wrong), so length has no room to
move there. This study runs on the length world (`studies.tiny_world --world length`): the same problems, whose
model also answers directly, without the columns, as its teacher did half the time; direct answers are short and
mostly wrong, worked ones long and mostly right, and the choice is one token after the operands.

Reported per cell: held-out sampled pass@1 and greedy accuracy against dapo, the length (tokens) of right and of
wrong completions over training (metrics.jsonl, `rewards.ledger.RewardLedger.record_lengths`: first and last quarter
of the run) and on the held-out problems at the end, and the share cut at max_completion_length.

Usage:
    make study-length                   # = python -m studies.grid.length --seeds 3 (2-core CPU, offline)
    make study-length SEEDS=1           # a quick look
    make study-length PROFILE=7b        # the same grid on one GPU (Qwen2.5-7B-Instruct, GSM8K)

Writes results/studies/length/: summary.json, settings.json, README.md (its answer generated from the numbers),
length.png.
"""

from pathlib import Path

from studies.grid.engine import Cell, parse_study, publish, run_study, study_arguments
from studies.grid.report import (
    WHAT_THE_NUMBERS_SAY,
    against_reference,
    cell_named,
    on_one_gpu,
    provenance,
    seed_spread,
    table,
    versus,
)
from studies.runner import PROFILES
from tasks.shipped import install

LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo")
REFERENCE = "dapo"  # TRL 1.12's default
PROMPTS = 320  # the comparison's budget
PASSED, FAILED = "lengths/math_accuracy/passed", "lengths/math_accuracy/failed"
CLIPPED = "completions/clipped_ratio"


def cells() -> list[Cell]:
    return [
        Cell(
            f"loss_type={loss}",
            "grpo",
            ("--loss_type", loss),
            "grpo",
            None if loss == REFERENCE else f"loss_type={REFERENCE}",
            logged=(PASSED, FAILED, CLIPPED),
        )
        for loss in LOSS_TYPES
    ]


def tokens(value) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def answer(summary: dict) -> list[str]:
    """Per loss type: how the lengths of right and of wrong training completions moved from the first to the last
    quarter of the run, the held-out lengths at the end, and accuracy against dapo."""
    lines = []
    for c in summary["cells"]:
        moves = []
        for label, key in (("right", PASSED), ("wrong", FAILED)):
            first, last = c.get(f"{key}_first_quarter"), c.get(f"{key}_last_quarter")
            if first is not None and last is not None:
                moves.append(f"{label} {first:.1f} -> {last:.1f} tokens ({last - first:+.1f})")
        lines.append(
            f"- {c['cell']}: in training, {'; '.join(moves) or 'lengths not logged'}. Held out at the end: right "
            f"{tokens(c['length_passed'])}, wrong {tokens(c['length_failed'])} tokens; sampled pass@1 "
            f"{c['sampled_pass1']:.1%}."
        )
    grown = [
        c
        for c in summary["cells"]
        if c.get(f"{FAILED}_first_quarter") is not None and c.get(f"{FAILED}_last_quarter") is not None
    ]
    if grown:
        longest = max(grown, key=lambda c: c[f"{FAILED}_last_quarter"] - c[f"{FAILED}_first_quarter"])
        shortest = min(grown, key=lambda c: c[f"{FAILED}_last_quarter"] - c[f"{FAILED}_first_quarter"])
        rise = {c["cell"]: c[f"{FAILED}_last_quarter"] - c[f"{FAILED}_first_quarter"] for c in grown}
        lines.append(
            f"- Wrong completions grew most under {longest['cell']} ({rise[longest['cell']]:+.1f} tokens) and least "
            f"under {shortest['cell']} ({rise[shortest['cell']]:+.1f}); the mean over seeds, without an interval: "
            "read it beside the seeds' spread in summary.json's runs."
        )
    lines += [f"- {s}" for s in against_reference(summary)]
    lines += [f"- {s}" for s in seed_spread(summary)]
    return lines


def headline(summary: dict) -> str:
    """One sentence: how long wrong training completions grew under each loss type, and the per-sequence `grpo`
    normalisation's accuracy against dapo."""
    moves = ", ".join(
        f"{c['cell'].split('=')[1]} {c[f'{FAILED}_first_quarter']:.1f} -> {c[f'{FAILED}_last_quarter']:.1f}"
        for c in summary["cells"]
        if c.get(f"{FAILED}_first_quarter") is not None and c.get(f"{FAILED}_last_quarter") is not None
    )
    grpo = cell_named(summary, "loss_type=grpo")
    return (
        f"Wrong completions' length (tokens), first -> last quarter of training: {moves}; held-out sampled pass@1 "
        f"of loss_type=grpo {grpo['sampled_pass1']:.1%} ({versus(grpo)})."
    )


def readme(summary: dict, settings: dict) -> str:
    columns = (
        ("right, held out (tokens)", "length_passed", ".1f"),
        ("wrong, held out (tokens)", "length_failed", ".1f"),
        ("wrong, training, first quarter", f"{FAILED}_first_quarter", ".1f"),
        ("wrong, training, last quarter", f"{FAILED}_last_quarter", ".1f"),
        ("clipped, held out", "clipped_share", ".1%"),
    )
    return "\n".join(
        [
            "# Does GRPO's normalisation push wrong answers longer? (`make study-length`)",
            "",
            provenance(settings),
            f"Each run: {settings['prompts']} training prompts once each, on the length world (its model answers "
            "with or without the columns; `studies/grid/length/__main__.py` says why the math world cannot show "
            "this). TRL 1.12's `loss_type` also has cispo, sapo, luspo and vespo; they change the clipping or the "
            "ratio too, not only the normalisation, and are left out. Lengths in tokens; training lengths from TRL's "
            "own batches, split by the training reward's verdict.",
            "",
            table(summary, columns),
            "",
            "![completion length of right and wrong answers over training](length.png)",
            "",
            WHAT_THE_NUMBERS_SAY,
            "",
            *answer(summary),
            "",
            on_one_gpu("study-length", summary),
            "",
        ]
    )


def plot(summary: dict, path: Path) -> None:
    """Length of right and of wrong training completions, first and last quarter of the run, per loss type."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), sharey=True)
    for ax, (label, key) in zip(axes, (("right", PASSED), ("wrong", FAILED)), strict=True):
        for index, c in enumerate(summary["cells"]):
            first, last = c.get(f"{key}_first_quarter"), c.get(f"{key}_last_quarter")
            if first is not None and last is not None:
                ax.plot([0, 1], [first, last], marker="o", color=f"C{index}", label=c["cell"])
        ax.set_xticks([0, 1], ["first quarter", "last quarter"])
        ax.set_title(f"{label} completions (training)")
        ax.set_ylabel("mean length (tokens)")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    args, out = parse_study(study_arguments(__doc__), "length", argv)
    profile = "tiny-length" if args.profile.startswith("tiny") else args.profile
    if profile == "tiny-length" and not args.report:  # the shipped length world, as `make tiny` installs it
        install("tiny-length", Path(PROFILES[profile]["model_name"]).parent)
    summary, settings = run_study(args, out, "length", cells(), args.prompts or PROMPTS, profile)
    plot(summary, out / "length.png")
    publish(out, readme(summary, settings))


if __name__ == "__main__":
    main()
