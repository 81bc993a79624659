"""A published comparison's README, its generated parts written from the folder's files: each part sits between
`<!-- generated: NAME -->` and `<!-- end -->` (invisible on the rendered page), and `make compare` and `--report`
write it again, so a rerun's README cannot keep an old number. The prose around the parts is the author's.

Parts, from the folder's summary.json and settings.json unless said:
    provenance     the commit, CPU and seconds it was measured in
    sweep          sweep.json, one line per method and key; where it ran against where the table did
    table, holds   the headline table and what holds in it
    seeds          each run's sampled and greedy accuracy, the median, the runs below their seed's base
    sharpening     per_problem.jsonl: preference against online methods' greedy - sampled gaps (post hoc; with the
                   argument `pre-registered`, a pre-registered rerun's test of it)
    replication    `<!-- generated: replication (results/compare/tiny) -->`: each claim of that published table read
                   against this pre-registered rerun
    compute        accuracy against compute, in words
    matched        held-out accuracy of GRPO, PPO and DPO at matched CPU seconds (studies.comparison.matched)
    transfer       greedy accuracy on another task's problems no run trained on (a table run with --transfer)
    primary        the pre-registered primary contrasts (a table run with --primary), their own Holm family
    against-base, versus   every difference of the family, with its Holm p
    replaced       `<!-- generated: replaced (commit 172e0fb) -->`: each claim of replaced.json (the table this one
                   replaced, measured where the parenthesis says) against this one
    budgets        a same-completions table: each claim of the same-prompts table beside it (results/compare/<profile>)
    worlds         a real model's table: each claim of the tiny world it checks (PROFILES' `checks`, the folder
                   beside it) and whether it holds here
"""

import json
import re
from pathlib import Path

from core.runs.provenance import REPO
from studies.comparison.matched import section as matched_section
from studies.comparison.report import compute_lines, headline_table, provenance, seeds_table
from studies.comparison.scores import read_scores
from studies.comparison.sharpening import section as sharpening_section
from studies.comparison.transfer import section as transfer_section
from studies.comparison.tuning import sweep_summary, swept_where
from studies.comparison.versus import markdown, primary_section, what_holds
from studies.comparison.worlds import budget_section, replaced_section, replication_section, transfer_table
from studies.runner import PROFILES

# The repository's README shows the tiny math table (its `table` and `holds` parts): the pre-registered rerun
MAIN_README_SHOWS = REPO / "results" / "compare" / "tiny-fresh"
PART = re.compile(r"<!-- generated: ([a-z-]+)(?: \((.*?)\))? -->\n(.*?)<!-- end -->", re.DOTALL)


def _json(path: Path):
    if not path.is_file():
        raise SystemExit(f"{path}: missing, and a README part is written from it")
    return json.loads(path.read_text())


def part(name: str, argument: str | None, folder: Path, summary: dict) -> str:
    """The text of one generated part for the comparison published in `folder` (its summary.json: `summary`)."""
    if name == "provenance":
        return provenance(summary, _json(folder / "settings.json"))
    if name == "sweep":
        rows = _json(folder / "sweep.json")
        where = swept_where(rows, _json(folder / "settings.json"))
        return sweep_summary(rows) + (f"\n\n{where}" if where else "")
    if name == "table":
        return headline_table(summary)
    if name == "holds":
        return what_holds(summary)
    if name == "seeds":
        return seeds_table(summary)
    if name == "sharpening":
        return sharpening_section(read_scores(folder), pre_registered=argument == "pre-registered")
    if name == "replication":
        return "\n".join(replication_section(_json(REPO / argument / "summary.json"), summary, argument))
    if name == "compute":
        return "\n".join(compute_lines(summary))
    if name == "matched":
        if "matched" not in summary:
            raise SystemExit(f"README part 'matched' in {folder}: its summary.json has no rows at matched compute")
        return matched_section(summary["matched"])
    if name == "transfer":
        if "transfer" not in summary:
            raise SystemExit(f"README part 'transfer' in {folder}: its summary.json has no transfer scores")
        return transfer_section(summary["transfer"])
    if name == "primary":
        primary = primary_section(summary)
        if not primary:
            raise SystemExit(
                f"README part 'primary' in {folder}: its summary.json has no pre-registered primary family"
            )
        return "\n".join(primary)
    if name == "against-base":
        return "\n".join(markdown(summary["against_base"], "## Against the base"))
    if name == "versus":
        return "\n".join(markdown(summary["versus"]))
    if name == "replaced":
        old = _json(folder / "replaced.json")
        seeds = len({r["seed"] for r in old["runs"] if r["method"] != "base"})
        return "\n".join(replaced_section(old, summary, f"{argument}, {seeds} seeds"))
    if name == "budgets":
        same_prompts = folder.with_name(folder.name.removesuffix("-completions"))
        return "\n".join(budget_section(_json(same_prompts / "summary.json"), summary))
    if name == "worlds":
        profile = _json(folder / "settings.json")["profile"]
        checked = PROFILES[profile].get("checks")
        if not checked:
            raise SystemExit(f"README part 'worlds' in {folder}: profile {profile} checks no tiny world's table")
        tiny = _json(folder.with_name(checked) / "summary.json")
        return "\n".join(transfer_table(tiny, summary, checked, profile, agreement=True))
    raise SystemExit(f"README part '{name}': no such part (studies/comparison/readme.py lists them)")


def filled(text: str, folder: Path) -> str:
    """`text` with every generated part written again from `folder`'s files."""
    summary = _json(folder / "summary.json") if PART.search(text) else None

    def written(match) -> str:
        name, argument = match[1], match[2]
        head = f"<!-- generated: {name}{f' ({argument})' if argument else ''} -->"
        return f"{head}\n{part(name, argument, folder, summary)}\n<!-- end -->"

    return PART.sub(written, text)


def write_readme(readme: Path, folder: Path) -> bool:
    """Rewrite `readme`'s generated parts from `folder`; whether it changed (False where there is no README)."""
    if not readme.is_file():
        return False
    text = readme.read_text()
    new = filled(text, folder)
    if new == text:
        return False
    readme.write_text(new)
    return True


def rewrite_readmes(folder: Path) -> list[Path]:
    """The READMEs whose generated parts `folder`'s files changed: its own, and the repository's for the table it
    shows."""
    readmes = [folder / "README.md"] + ([REPO / "README.md"] if folder.resolve() == MAIN_README_SHOWS else [])
    return [readme for readme in readmes if write_readme(readme, folder)]
