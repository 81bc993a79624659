"""A study's sentences say what its rows say under the rules: an order only where the seeds x problems difference
survives Holm over the study's family (not merely where its interval excludes zero), the detectable difference where
it does not, a small difference on few seeds flagged, and the table marks references."""

from core.report.stats import detectable_difference
from studies.grid.engine import quarters
from studies.grid.report import against_reference, table, versus
from studies.grid.rules import under_the_rules


def cell(name, against, mean, se, seeds=3):
    row = None if against is None else {"mean": mean, "se": se, "df": 100, "ci95": [mean - 2 * se, mean + 2 * se]}
    entry = {"cell": name, "reference_cell": against, "reference": against is None}
    entry |= {"sampled_vs_reference": row, "greedy_vs_reference": row}
    entry |= {"sampled_pass1": 0.7, "sampled_pass1_ci95": [0.6, 0.8], "greedy_accuracy": 0.8}
    entry |= {"greedy_accuracy_ci95": None, "kl": None, "seconds_per_step": 1.0, "checks": []}
    return entry, [{"cell": name, "seed": s} for s in range(seeds)]


def summary_of(*cells):
    summary = {
        "base": {"sampled_pass1": 0.6, "greedy_accuracy": 0.7},
        "cells": [c for c, _ in cells],
        "runs": [r for _, runs in cells for r in runs],
    }
    return under_the_rules(summary, {"eval_n": 200, "eval_k": 8})


def test_an_order_only_where_holm_claims_it_and_small_ones_on_few_seeds_flagged():
    summary = summary_of(
        cell("ref", None, None, None),
        cell("big", "ref", 0.10, 0.02),
        cell("small", "ref", -0.02, 0.004),
        cell("small on 5", "ref", 0.02, 0.004, seeds=5),
        cell("noise", "ref", 0.01, 0.015),
        cell("marginal", "ref", 0.03, 0.014),  # p = 0.035 alone: its interval excludes zero, Holm over 10 does not
    )
    assert summary["family_size"] == 10
    marginal = summary["cells"][5]["sampled_vs_reference"]
    assert marginal["excludes_zero"] and not marginal["claimed"]
    said = against_reference(summary)
    assert said[0].startswith("An order is claimed only where") and "10 differences" in said[0]
    assert said[1].startswith("big beats ref in sampled pass@1: +10.0 [+6.0, +14.0] points, Holm p < 0.001")
    assert said[2].startswith("small falls below ref in sampled pass@1: -2.0 [-2.8, -1.2] points, Holm p < 0.001")
    assert said[2].endswith("(under 3 points on 3 seeds: rerun with SEEDS=5 before relying on it).")
    assert said[3].startswith("small on 5 beats ref") and "rerun" not in said[3]
    noise = summary["cells"][4]["sampled_vs_reference"]
    expected = detectable_difference(0.015, 100, noise["level"])
    assert said[4] == (
        f"noise and ref are not told apart in sampled pass@1: +1.0 [-2.0, +4.0] points, Holm p 1.000; could have "
        f"detected {expected * 100:.1f} points."
    )
    assert said[5].startswith("marginal and ref are not told apart")
    assert versus(summary["cells"][1]) == "+10.0 [+6.0, +14.0] points vs ref, beyond noise"
    assert versus(summary["cells"][4]).endswith(f"not told apart, could have detected {expected * 100:.1f} points")
    assert versus(summary["cells"][0]) == "the reference"
    rows = table(summary).splitlines()
    assert rows[3].startswith("| ref | 70.0% [60.0%, 80.0%] | reference |")
    assert under_the_rules(summary, {"eval_n": 200, "eval_k": 8}) == summary  # applied again, nothing changes


def test_quarters_are_the_mean_and_the_first_and_last_quarter():
    assert quarters([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]) == (4.5, 1.5, 7.5)
    assert quarters([2.0]) == (2.0, 2.0, 2.0) and quarters([]) == (None, None, None)
