"""Plot what a training run logged (metrics.jsonl), one run or several overlaid.

Usage:
    make plot RUN=runs/grpo-tiny-20261130-193231                  # -> that run's metrics.png
    make plot RUN="runs/grpo-tiny-... runs/ppo-tiny-..."          # overlaid -> metrics-overlay.png beside the first
    python -m core.report.plots RUN [RUN ...] [--out file.png]

Panels, each drawn where a run logged it: the training signal (GRPO's reward, PPO's score, DPO/ORPO's preference
margin; raw points and a rolling mean), each reward's own mean (GRPO), KL to the reference, completion length,
share of completions cut at max_completion_length, learning rate. Every recipe also draws its own plot when it
finishes.
"""

import argparse
from pathlib import Path

from core.errors import UserError, one_line_errors
from core.runs.metrics import is_number, read_metrics

EACH_REWARD = ["rewards/<name>/mean"]  # a panel of every reward a run logged, beside the weighted total
# (title, candidate keys in the order the trainers name them)
HELDOUT = "heldout/accuracy"  # drawn on the training signal's panel: did the reward's rise carry to held-out?
PANELS = [
    ("training signal and held-out accuracy", ["reward", "objective/scores", "rewards/margins"]),
    ("each reward (batch mean)", EACH_REWARD),
    ("KL to the reference", ["kl", "objective/kl"]),
    ("held-out drift: KL from the start (nats/token)", ["heldout/kl"]),
    ("held-out token entropy (nats)", ["heldout/entropy"]),
    ("completion length (tokens)", ["completions/mean_length"]),
    ("clipped share (cut at max length)", ["completions/clipped_ratio"]),
    ("learning rate", ["learning_rate", "lr"]),
]


def rolling_mean(values: list[float], window: int) -> list[float]:
    """Mean of each value and the window - 1 before it (fewer at the start).

    >>> rolling_mean([1.0, 2.0, 3.0, 4.0], 2)
    [1.0, 1.5, 2.5, 3.5]
    """
    return [
        sum(values[max(0, i - window + 1) : i + 1]) / len(values[max(0, i - window + 1) : i + 1])
        for i in range(len(values))
    ]


def plot_runs(runs: list[Path], out: Path) -> Path | None:
    """Writes the panels for `runs` to `out`; None when no run logged any of them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = {run: read_metrics(run) for run in runs}
    panels = []
    for title, keys in PANELS:
        curves = []  # (run, key, points)
        for run, rows in metrics.items():
            if keys is EACH_REWARD:  # every reward's own mean, GRPO's rewards/<name>/mean
                found = dict.fromkeys(
                    k for row in rows for k in row if k.startswith("rewards/") and k.endswith("/mean")
                )
            else:
                found = [next((k for k in keys if any(k in row for row in rows)), None)]
                if title == PANELS[0][0]:
                    found.append(HELDOUT)
            for key in filter(None, found):
                curves.append((run, key, [(row["step"], row[key]) for row in rows if is_number(row.get(key))]))
            curves = [curve for curve in curves if curve[2]]  # a key logged only as None, NaN or text: no line
        if curves:
            panels.append((title, curves))
    if not panels:
        return None
    fig, axes = plt.subplots(len(panels), 1, figsize=(8, 2.6 * len(panels)), sharex=True, squeeze=False)
    for ax, (title, curves) in zip(axes[:, 0], panels, strict=True):
        for index, (run, key, points) in enumerate(curves):
            steps, values = [p[0] for p in points], [p[1] for p in points]
            color = f"C{index}"
            label = f"{run.name} ({key})" if len(runs) > 1 else key
            if title == "training signal":
                ax.plot(steps, values, "o", color=color, alpha=0.35, markersize=3)
                ax.plot(
                    steps, rolling_mean(values, max(1, len(values) // 10)), color=color, label=f"{label}, rolling mean"
                )
            else:
                ax.plot(steps, values, color=color, label=label)
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7, loc="best")
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("step")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path, help="run directories (each with a metrics.jsonl)")
    parser.add_argument("--out", type=Path, help="default: RUN/metrics.png, or metrics-overlay.png beside the first")
    one_line_errors()
    args = parser.parse_args(argv)
    for run in args.runs:
        if not (run / "metrics.jsonl").is_file():
            raise UserError(f"{run}: no metrics.jsonl here (a run directory from make grpo/ppo/dpo/orpo?)")
    out = args.out or (
        args.runs[0] / "metrics.png" if len(args.runs) == 1 else args.runs[0].parent / "metrics-overlay.png"
    )
    written = plot_runs(args.runs, out)
    if written is None:
        raise UserError(f"none of {', '.join(map(str, args.runs))} logged a metric to plot")
    print(f"wrote {written}")
    return written


if __name__ == "__main__":
    main()
