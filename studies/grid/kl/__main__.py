"""`make study-kl`: what the KL term buys. GRPO's `beta` (0, the shipped tiny setting, 0.01, 0.04, 0.1) and PPO's
`kl_coef` (0, 0.05 shipped, 0.2), each trained over seeds from the same start on the same 160 prompts: held-out
accuracy against drift from the start (the per-token KL every run measures on held-out problems at its end), and
the checks each run fired (reward hacking, drift from the start, entropy collapse, length drift).

Usage:
    make study-kl                       # = python -m studies.grid.kl --profile tiny --seeds 3 (2-core CPU, offline)
    make study-kl SEEDS=1               # a quick look
    make study-kl PROFILE=7b            # the same grid on one GPU (Qwen2.5-7B-Instruct, GSM8K)

Writes results/studies/kl/: summary.json, settings.json, README.md (its answer generated from the numbers), kl.png.
"""

from studies.grid.engine import Cell, parse_study, publish, run_study, study_arguments
from studies.grid.report import (
    WHAT_THE_NUMBERS_SAY,
    against_reference,
    cell_named,
    on_one_gpu,
    plot_against_drift,
    provenance,
    seed_spread,
    table,
    versus,
)

GRPO_BETAS = (0.0, 0.01, 0.04, 0.1)
PPO_KL_COEFS = (0.0, 0.05, 0.2)
PROMPTS = 160  # half the comparison's budget: 7 cells x 3 seeds within ~30 min on 2 cores


def cells() -> list[Cell]:
    """Each coefficient against the shipped one: GRPO's beta 0 (TRL's default since 0.19), PPO's kl_coef 0.05."""
    grid = [
        Cell(f"grpo beta={b:g}", "grpo", ("--beta", str(b)), "grpo", None if b == 0 else "grpo beta=0")
        for b in GRPO_BETAS
    ]
    grid += [
        Cell(f"ppo kl_coef={c:g}", "ppo", ("--kl_coef", str(c)), "ppo", None if c == 0.05 else "ppo kl_coef=0.05")
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
            f"{c['cell'].split(' ', 1)[1]}: KL {c['kl']:.4f}, sampled pass@1 {c['sampled_pass1']:.1%}"
            for c in own
            if c["kl"] is not None
        )
        lines.append(f"- {group.upper()}, KL from the start and held-out accuracy by coefficient: {steps}.")
        kls = [c["kl"] for c in own if c["kl"] is not None]
        if len(kls) == len(own) > 1:
            falls = all(a >= b for a, b in zip(kls, kls[1:], strict=False))
            lines.append(
                f"  The KL from the start {'falls' if falls else 'does not fall steadily'} as the coefficient "
                f"grows ({kls[0]:.4f} -> {kls[-1]:.4f})."
            )
        fired = [f"{c['cell']}: {', '.join(c['checks'])}" for c in own if c["checks"]]
        lines.append("  Checks fired: " + ("; ".join(fired) if fired else "none") + ".")
    lines += [f"- {s}" for s in against_reference(summary)]
    lines += [f"- {s}" for s in seed_spread(summary)]
    return lines


def headline(summary: dict) -> str:
    """The study's answer in one sentence for the main README: the KL from the start and sampled pass@1 at the
    smallest and largest coefficient of each method, the seeds that ended below the base, and the largest
    coefficient against the shipped one."""
    parts, base = [], summary["base"]["sampled_pass1"]
    for group, values in (("grpo", GRPO_BETAS), ("ppo", PPO_KL_COEFS)):
        key = "beta" if group == "grpo" else "kl_coef"
        low, high = (cell_named(summary, f"{group} {key}={v:g}") for v in (values[0], values[-1]))
        seeds = [r["sampled_pass1"] for r in summary["runs"] if r["cell"] == low["cell"]]
        below = sum(v < base for v in seeds)
        collapsed = f", {below} of {len(seeds)} seeds below the base at {key}={values[0]:g}" if below else ""
        parts.append(
            f"{group.upper()} {key} {values[0]:g} -> {values[-1]:g}: KL from the start {low['kl']:.4f} -> "
            f"{high['kl']:.4f}, sampled pass@1 {low['sampled_pass1']:.1%} -> {high['sampled_pass1']:.1%}{collapsed} "
            f"({key}={values[-1]:g}: {versus(high)})"
        )
    return "; ".join(parts) + "."


def readme(summary: dict, settings: dict) -> str:
    return "\n".join(
        [
            "# What the KL term buys (`make study-kl`)",
            "",
            provenance(settings),
            f"Each run: {settings['prompts']} training prompts once each, from the same start.",
            "",
            table(summary),
            "",
            "![held-out accuracy against KL from the start](kl.png)",
            "",
            WHAT_THE_NUMBERS_SAY,
            "",
            *answer(summary),
            "",
            on_one_gpu("study-kl", summary),
            "",
        ]
    )


def main(argv=None):
    args, out = parse_study(study_arguments(__doc__), "kl", argv)
    summary, settings = run_study(args, out, "kl", cells(), args.prompts or PROMPTS)
    plot_against_drift(summary, out / "kl.png")
    publish(out, readme(summary, settings))


if __name__ == "__main__":
    main()
