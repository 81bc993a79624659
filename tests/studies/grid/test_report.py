"""A study's sentences say what its intervals say: an order only where the seeds x problems interval excludes
zero, a small difference on few seeds flagged, and the table marks references."""

from studies.grid.engine import quarters
from studies.grid.report import against_reference, table, versus


def cell(name, against, mean, low, high, seeds=3):
    row = None if against is None else {"mean": mean, "ci95": [low, high], "excludes_zero": low > 0 or high < 0}
    entry = {"cell": name, "reference_cell": against, "reference": against is None}
    entry |= {"sampled_vs_reference": row, "greedy_vs_reference": row}
    entry |= {"sampled_pass1": 0.7, "sampled_pass1_ci95": [0.6, 0.8], "greedy_accuracy": 0.8}
    entry |= {"greedy_accuracy_ci95": None, "kl": None, "seconds_per_step": 1.0, "checks": []}
    return entry, [{"cell": name, "seed": s} for s in range(seeds)]


def summary_of(*cells):
    return {
        "base": {"sampled_pass1": 0.6, "greedy_accuracy": 0.7},
        "cells": [c for c, _ in cells],
        "runs": [r for _, runs in cells for r in runs],
    }


def test_an_order_only_where_the_interval_excludes_zero_and_small_ones_on_few_seeds_flagged():
    summary = summary_of(
        cell("ref", None, None, None, None),
        cell("big", "ref", 0.10, 0.05, 0.15),
        cell("small", "ref", -0.02, -0.03, -0.01),
        cell("small on 5", "ref", 0.02, 0.01, 0.03, seeds=5),
        cell("noise", "ref", 0.01, -0.02, 0.04),
    )
    assert against_reference(summary) == [
        "big beats ref in sampled pass@1: +10.0 [+5.0, +15.0] points.",
        "small falls below ref in sampled pass@1: -2.0 [-3.0, -1.0] points (under 3 points on 3 seeds: rerun with "
        "SEEDS=5 before relying on it).",
        "small on 5 beats ref in sampled pass@1: +2.0 [+1.0, +3.0] points.",
        "noise and ref are not told apart in sampled pass@1: +1.0 [-2.0, +4.0] points.",
    ]
    assert versus(summary["cells"][1]) == "+10.0 [+5.0, +15.0] points vs ref, beyond noise"
    assert versus(summary["cells"][4]).endswith("not told apart") and versus(summary["cells"][0]) == "the reference"
    rows = table(summary).splitlines()
    assert rows[3].startswith("| ref | 70.0% [60.0%, 80.0%] | reference |")


def test_quarters_are_the_mean_and_the_first_and_last_quarter():
    assert quarters([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]) == (4.5, 1.5, 7.5)
    assert quarters([2.0]) == (2.0, 2.0, 2.0) and quarters([]) == (None, None, None)
