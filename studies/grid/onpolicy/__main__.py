"""`make study-onpolicy`: DPO is offline, GRPO on-policy; how much of GRPO's lead is just that? DPO and IPO on
pairs sampled once from the start model (offline, as in the comparison) against the same methods on pairs
re-sampled from the current adapter in R rounds (iterative, on-policy DPO: each round samples the next
prompts/R prompts with the last round's adapter on and goes on training it, TRL taking a frozen copy of it as the
reference), at the same total of sampled completions (prompts x k) and at most the offline cells' pairs; GRPO on
the same prompts, so the same number of sampled completions, beside them.

Reported per cell: held-out sampled pass@1 and greedy accuracy, each on-policy cell against its offline one and
GRPO against on-policy DPO (paired, seeds x problems), the pairs trained on, KL from the start, checks fired.

Usage:
    make study-onpolicy                 # = python -m studies.grid.onpolicy --seeds 3 (2-core CPU, offline)
    make study-onpolicy SEEDS=1         # a quick look
    make study-onpolicy PROFILE=7b      # the same grid on one GPU (Qwen2.5-7B-Instruct, GSM8K)

Writes results/studies/onpolicy/: summary.json, settings.json, README.md (its answer generated from the numbers),
onpolicy.png.
"""

from pathlib import Path

from studies.grid.engine import Cell, parse_study, publish, run_study, study_arguments
from studies.grid.report import (
    WHAT_THE_NUMBERS_SAY,
    against_reference,
    on_one_gpu,
    provenance,
    seed_spread,
    table,
    versus,
)

ROUNDS = 4
PROMPTS = 320  # the comparison's budget: 2,560 sampled completions at k=8


def cells(rounds: int = ROUNDS) -> list[Cell]:
    grid = []
    for method in ("dpo", "ipo"):
        grid.append(Cell(f"{method} offline", method, group=method))
        grid.append(Cell(f"{method} on-policy R={rounds}", method, (), method, f"{method} offline", rounds=rounds))
    grid.append(Cell("grpo", "grpo", (), "grpo", f"dpo on-policy R={rounds}"))
    return grid


def answer(summary: dict) -> list[str]:
    """The pairs each cell trained on, and every comparison in sampled pass@1 and greedy accuracy."""
    lines = []
    for c in summary["cells"]:
        if c.get("pairs") is not None:
            lines.append(
                f"- {c['cell']}: {c['pairs']:.0f} pairs on average over seeds; held-out sampled pass@1 "
                f"{c['sampled_pass1']:.1%}, greedy {c['greedy_accuracy']:.1%}."
            )
    lines += [f"- {s}" for s in against_reference(summary, "sampled")]
    lines += [f"- {s}" for s in against_reference(summary, "greedy")]
    lines += [f"- {s}" for s in seed_spread(summary)]
    return lines


def headline(summary: dict) -> str:
    """One sentence: each on-policy cell against its offline one, and GRPO against on-policy DPO, in sampled
    pass@1."""
    parts = [f"{c['cell']}: {versus(c)}" for c in summary["cells"] if not c["reference"]]
    return "Held-out sampled pass@1, " + "; ".join(parts) + "."


def plot(summary: dict, path: Path) -> None:
    """Held-out sampled pass@1 and greedy accuracy per cell, with the seeds' 95% intervals, base as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.5))
    names = [c["cell"] for c in summary["cells"]]
    for offset, (label, key) in ((-0.2, ("sampled pass@1", "sampled_pass1")), (0.2, ("greedy", "greedy_accuracy"))):
        means = [c[key] for c in summary["cells"]]
        errors = [
            [m - (c[f"{key}_ci95"] or [m, m])[0] for m, c in zip(means, summary["cells"], strict=True)],
            [(c[f"{key}_ci95"] or [m, m])[1] - m for m, c in zip(means, summary["cells"], strict=True)],
        ]
        ax.bar([i + offset for i in range(len(names))], means, 0.4, yerr=errors, capsize=3, label=label)
    ax.axhline(summary["base"]["sampled_pass1"], color="grey", linestyle=":", label="base, sampled")
    ax.set_xticks(range(len(names)), names, fontsize=8)
    ax.set_ylabel("held-out accuracy")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def readme(summary: dict, settings: dict) -> str:
    return "\n".join(
        [
            "# On- vs off-policy preferences (`make study-onpolicy`)",
            "",
            provenance(settings),
            f"Each run: {settings['prompts']} training prompts, k samples each (GRPO's k), sampled once from the "
            "start model (offline) or round by round from the current adapter (on-policy); at most the offline pairs "
            "in all. The pairs' sampling is not in the preference methods' s/step.",
            "",
            table(summary, (("pairs", "pairs", ".0f"),)),
            "",
            "![held-out accuracy per cell](onpolicy.png)",
            "",
            WHAT_THE_NUMBERS_SAY,
            "",
            *answer(summary),
            "",
            on_one_gpu("study-onpolicy", summary),
            "",
        ]
    )


def main(argv=None):
    parser = study_arguments(__doc__)
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="on-policy rounds")
    args, out = parse_study(parser, "onpolicy", argv)
    if args.rounds < 2 and not args.report:
        raise SystemExit(f"--rounds {args.rounds}: on-policy needs at least 2 rounds")
    summary, settings = run_study(args, out, "onpolicy", cells(args.rounds), args.prompts or PROMPTS)
    plot(summary, out / "onpolicy.png")
    publish(out, readme(summary, settings))


if __name__ == "__main__":
    main()
