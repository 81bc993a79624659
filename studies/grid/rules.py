"""A study's numbers under the comparison's rules, from its own files: bounded share intervals, and every difference
from a reference (computed again from per_problem.jsonl where the study kept it) one Holm family."""

from core.report.stats import crossed_difference, one_family, share_over_seeds

SHARES = ("sampled_pass1", "greedy_accuracy", "clipped_share")
RULE = "bounded share intervals; seeds x problems differences, Holm over the study's family"


def under_the_rules(summary: dict, settings: dict) -> dict:
    """The study's numbers under the comparison's rules, from its own JSON: each cell's shares (sampled pass@1,
    greedy accuracy, the share cut at the length limit) with 95% intervals over its seeds bounded to [0, 1]
    (core.report.stats.share_over_seeds, at most the scores behind them), and every difference from a reference
    (both metrics, every cell) one family, Holm-corrected, with the detectable difference of each one not claimed.
    Applying it again changes nothing, so --report rewrites a published study under it."""
    trials = {
        "sampled_pass1": settings["eval_n"] * settings["eval_k"],
        "greedy_accuracy": settings["eval_n"],
        "clipped_share": None,
    }
    cells = []
    for cell in summary["cells"]:
        cell = dict(cell)
        for key in SHARES:
            values = [r[key] for r in summary["runs"] if r["cell"] == cell["cell"] and r.get(key) is not None]
            if len(values) > 1:
                cell[f"{key}_ci95"] = share_over_seeds(values, trials[key])["ci95"]
        cells.append(cell)
    slots = [(i, m) for i, c in enumerate(cells) for m in ("sampled", "greedy") if c.get(f"{m}_vs_reference")]
    family = one_family([cells[i][f"{m}_vs_reference"] for i, m in slots])
    for (i, metric), row in zip(slots, family, strict=True):
        cells[i][f"{metric}_vs_reference"] = row
    return summary | {"rule": RULE, "family_size": len(family), "cells": cells}


def differences_from_scores(cells: list[dict], scores: dict) -> list[dict]:
    """Each compared cell's difference from its reference computed again from per_problem.jsonl (`read_scores`),
    as `aggregate` computed it when the study ran."""
    again = []
    for cell in cells:
        cell = dict(cell)
        if cell.get("reference_cell") and not cell.get("reference"):
            seeds = sorted(seed for name, seed in scores if name == cell["cell"])
            for metric in ("sampled", "greedy"):
                difference = crossed_difference(
                    [scores[(cell["cell"], s)][metric] for s in seeds],
                    [scores[(cell["reference_cell"], s)][metric] for s in seeds],
                )
                low, high = difference["ci95"]
                cell[f"{metric}_vs_reference"] = difference | {"excludes_zero": low > 0 or high < 0}
        again.append(cell)
    return again
