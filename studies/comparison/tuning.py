"""A sweep shown: in a published table's README, each method's key and value with its validation score, the chosen
one, the tuning budget each method had (how many configurations it trained), said equal or not, and where the sweep
ran against where the table did; and its figure (sweep.png)."""

from pathlib import Path


def sweep_summary(rows: list[dict]) -> str:
    """sweep.json in one line per method and key: each value's validation sampled pass@1 (mean over seeds), the
    chosen one in bold, and whether it sits at the grid's edge (a README holds it to the file).

    >>> rows = [{"method": "dpo", "key": "beta", "value": v, "learning_rate": 1e-4, "validation_sampled_pass1": a,
    ...          "chosen": c, "at_edge": c, "seeds": [0, 1]} for v, a, c in ((0.1, 0.63, False), (0.3, 0.64, True))]
    >>> print(sweep_summary(rows))
    | method | key | validation sampled pass@1 at each value (mean of the seeds) | chosen |
    |---|---|---|---|
    | dpo | beta | 0.1: 63.0% / **0.3: 64.0%** | 0.3, at the grid's edge (2 seeds a point) |
    <BLANKLINE>
    Configurations trained per method (a point the chosen rate's run shares counted once): DPO 2.

    The tuning budget is said under the table: a method tried on more configurations had more chances to find a good
    one on validation, so an unequal budget is named as such.
    """
    lines = [
        "| method | key | validation sampled pass@1 at each value (mean of the seeds) | chosen |",
        "|---|---|---|---|",
    ]
    for method, key in dict.fromkeys((r["method"], r.get("key", "learning_rate")) for r in rows):
        own = [r for r in rows if (r["method"], r.get("key", "learning_rate")) == (method, key)]
        cells = []
        for r in own:
            value = f"{r.get('value', r['learning_rate']):g}: {r['validation_sampled_pass1']:.1%}"
            cells.append(f"**{value}**" if r["chosen"] else value)
        chosen = next(r for r in own if r["chosen"])
        edge = ", at the grid's edge" if chosen.get("at_edge") else ""
        seeds = len(chosen.get("seeds", [0]))
        lines.append(
            f"| {method} | {key} | {' / '.join(cells)} | {chosen.get('value', chosen['learning_rate']):g}{edge} "
            f"({seeds} seed{'s' if seeds > 1 else ''} a point) |"
        )
    tried = tuning_budget(rows)
    counts = ", ".join(f"{m.upper()} {n}" for m, n in tried.items())
    equal = "" if len(tried) < 2 else " (equal)" if len(set(tried.values())) == 1 else ": not an equal budget"
    lines += [
        "",
        f"Configurations trained per method (a point the chosen rate's run shares counted once): {counts}{equal}.",
    ]
    return "\n".join(lines)


def swept_where(rows: list[dict], settings: dict) -> str:
    """Where the sweep ran (its rows' `measured`) against where the table ran (its settings.json): a table tuned on
    another CPU class takes the sweep's choices, not its numbers, and says so.

    >>> epyc = {"cpu": "AMD EPYC", "kernel_flags": ["avx2"]}
    >>> print(swept_where([{"measured": {"commit": "0123456789", **epyc}}], epyc))
    Swept on the table's CPU class: AMD EPYC (`avx2`), at commit 0123456.
    >>> print(swept_where([{"measured": {"commit": "0123456789", **epyc}}], {"cpu": "Xeon", "kernel_flags": ["amx"]}))
    Swept on another CPU class than the table's Xeon (`amx`): AMD EPYC (`avx2`), at commit 0123456. The table takes \
the sweep's choices, not its numbers: training takes other kernel paths on each class, so a setting chosen there need \
not be the best here.
    """
    where = dict.fromkeys((m["cpu"], tuple(m["kernel_flags"])) for r in rows if (m := r.get("measured")))
    if not where:
        return ""
    commits = ", ".join(dict.fromkeys(r["measured"]["commit"][:7] for r in rows if r.get("measured")))
    swept = "; ".join(f"{cpu} (`{' '.join(flags)}`)" for cpu, flags in where)
    swept += f", at commit{'s' if ',' in commits else ''} {commits}."
    table = (settings["cpu"], tuple(settings["kernel_flags"]))
    if list(where) == [table]:
        return f"Swept on the table's CPU class: {swept}"
    return (
        f"Swept on another CPU class than the table's {table[0]} (`{' '.join(table[1])}`): {swept} The table takes "
        "the sweep's choices, not its numbers: training takes other kernel paths on each class, so a setting chosen "
        "there need not be the best here."
    )


def tuning_budget(rows: list[dict]) -> dict:
    """Per method, how many configurations its sweep trained (each at its seeds): a key's point that is the chosen
    learning rate's own run (`same_run_as`) is not a second configuration.

    >>> tuning_budget([{"method": "dpo"}, {"method": "dpo", "same_run_as": "learning_rate"}, {"method": "grpo"}])
    {'dpo': 1, 'grpo': 1}
    """
    tried: dict[str, int] = {}
    for row in rows:
        tried[row["method"]] = tried.get(row["method"], 0) + (0 if row.get("same_run_as") else 1)
    return tried


def plot_sweep(results: list[dict], path: Path) -> None:
    """Validation sampled pass@1 against each key's value, one line per method (learning rates on the left)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = list(dict.fromkeys(r.get("key", "learning_rate") for r in results))
    fig, axes = plt.subplots(1, len(keys), figsize=(6 * len(keys), 4), squeeze=False)
    for ax, key in zip(axes[0], keys, strict=True):
        for method in dict.fromkeys(r["method"] for r in results):
            own = [r for r in results if r["method"] == method and r.get("key", "learning_rate") == key]
            if not own:
                continue
            ax.errorbar(
                [r.get("value", r["learning_rate"]) for r in own],
                [r["validation_sampled_pass1"] for r in own],
                yerr=[
                    [r["validation_sampled_pass1"] - r["ci95"][0] for r in own],
                    [r["ci95"][1] - r["validation_sampled_pass1"] for r in own],
                ],
                marker="o",
                capsize=3,
                label=method,
            )
        ax.set_xscale("log")
        ax.set_xlabel(key)
        ax.set_ylabel("validation sampled pass@1 (mean over seeds, 95% CI)")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
