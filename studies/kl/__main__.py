"""`make study-kl`: what the KL term buys. GRPO's `beta` (0, the shipped tiny setting, 0.01, 0.04, 0.1) and PPO's
`kl_coef` (0, 0.05 shipped, 0.2), each trained over seeds from the same start on the same 320 prompts: held-out
accuracy against drift from the start (the per-token KL every run measures on held-out problems at its end), and
the checks each run fired (reward hacking, drift from the start, entropy collapse, length drift).

Usage:
    make study-kl                       # = python -m studies.kl --profile tiny --seeds 3 (2-core CPU, offline)
    make study-kl SEEDS=1               # a quick look
    make study-kl PROFILE=7b            # the same grid on one GPU (Qwen2.5-7B-Instruct, GSM8K)

Writes results/studies/kl/: summary.json, settings.json, README.md (its answer generated from the numbers), kl.png.
"""

import argparse
from pathlib import Path

from core.errors import one_line_errors
from studies.comparison.runs import PROFILES
from studies.grid import DRIFT_PROBLEMS, Cell, against_reference, plot_against_drift, run_grid, table

GRPO_BETAS = (0.0, 0.01, 0.04, 0.1)
PPO_KL_COEFS = (0.0, 0.05, 0.2)


def cells() -> list[Cell]:
    grid = [Cell(f"grpo beta={b:g}", "grpo", ("--beta", str(b)), group="grpo", reference=b == 0.0) for b in GRPO_BETAS]
    grid += [
        Cell(f"ppo kl_coef={c:g}", "ppo", ("--kl_coef", str(c)), group="ppo", reference=c == 0.05)
        for c in PPO_KL_COEFS
    ]
    return grid


def answer(summary: dict) -> list[str]:
    """The study's answer, from its numbers: per method, the KL from the start and held-out sampled pass@1 at each
    coefficient, which coefficients change accuracy beyond noise, and the checks that fired."""
    lines = []
    for group in ("grpo", "ppo"):
        own = [c for c in summary["cells"] if c["group"] == group]
        if not own:
            continue
        steps = "; ".join(
            f"{c['cell'].split(' ', 1)[1]}: KL {c['kl']:.3f}, sampled pass@1 {c['sampled_pass1']:.1%}"
            for c in own
            if c["kl"] is not None
        )
        lines.append(f"- {group.upper()}, KL from the start and held-out accuracy by coefficient: {steps}.")
        kls = [c["kl"] for c in own if c["kl"] is not None]
        if len(kls) == len(own) > 1:
            falls = all(a >= b for a, b in zip(kls, kls[1:], strict=False))
            lines.append(
                f"  The KL from the start {'falls' if falls else 'does not fall steadily'} as the coefficient "
                f"grows ({kls[0]:.3f} -> {kls[-1]:.3f})."
            )
        fired = [f"{c['cell']}: {', '.join(c['checks'])}" for c in own if c["checks"]]
        lines.append("  Checks fired: " + ("; ".join(fired) if fired else "none") + ".")
    lines += [f"- {s}" for s in against_reference(summary)]
    return lines


def write_readme(summary: dict, settings: dict, out: Path) -> str:
    text = "\n".join(
        [
            "# What the KL term buys (`make study-kl`)",
            "",
            f"Measured at commit {settings['commit']} on {settings['cpu']} ({settings['cpus']} cores), "
            f"{settings['seconds']:.0f} s; profile `{settings['profile']}`, {settings['prompts']} training prompts "
            f"once each, {settings['seeds']} seeds per cell, {settings['eval_n']} held-out problems (greedy and "
            f"{settings['eval_k']} samples at T={settings['temperature']}). KL from the start: the mean per-token "
            f"KL(policy || start) on {settings['drift_problems']} held-out problems at the end of each run.",
            "",
            table(summary),
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
    parser.add_argument("--prompts", type=int, help="training prompts every cell sees once (the profile's)")
    parser.add_argument("--eval_k", type=int, help="samples per held-out problem (the profile's)")
    parser.add_argument("--eval_limit", type=int, help="held-out problems (the profile's)")
    parser.add_argument("--drift_problems", type=int, default=DRIFT_PROBLEMS, help="held-out problems each run scores")
    parser.add_argument("--cells", nargs="+", help="run only these cells (names as in the table)")
    parser.add_argument("--out", help="default results/studies/kl (tiny), results/studies/kl-<profile> otherwise")
    one_line_errors()
    args = parser.parse_args(argv)
    profile = PROFILES[args.profile]
    out = Path(args.out or ("results/studies/kl" + ("" if args.profile == "tiny" else f"-{args.profile}")))
    summary, settings = run_grid(
        "kl",
        args.profile,
        cells(),
        args.seeds,
        args.prompts or profile["prompts"],
        out,
        args.eval_k or profile["eval_k"],
    )
    plot_against_drift(summary, out / "kl.png")
    print(write_readme(summary, settings, out))


if __name__ == "__main__":
    main()
