"""What a change of the inference rule changed in the published tables: every claim, every "could have detected"
and every verdict of a tiny-vs-real or old-vs-new section that reads differently in the published JSON now than at
an earlier commit, table by table (the comparisons under results/compare/, the studies under results/studies/).

    python -m studies.rule_change --before 85f614f --after 66a75a7 > docs/rule-change.md

`--reruns` writes docs/study-reruns.md: what the studies' reruns with their per-problem scores changed.

docs/rule-change.md is that command's output for #64's rule (float degrees of freedom, the detectable difference at
the level Holm would have needed, "consistent" beside "not seen", the seeds' own check beside each claim). Both sides
are read at a commit: the studies' reruns (per-problem scores, #64) rewrite their JSON after `--after`, and what the
rule changed must not move with what a rerun changed; a test holds the page to the command's output."""

import argparse
import json
import subprocess
from pathlib import Path

from studies.comparison.inference import METRICS
from studies.comparison.versus import detectable, is_claimed, mark
from studies.comparison.worlds import rows_of, said, verdict

COMPARISONS = ("tiny", "tiny-completions", "tiny-code", "tiny-code-completions", "smol")
STUDIES = ("group-size", "kl", "length", "onpolicy")
# Each comparison's other section: the table whose claims it reads (a file beside it, or another comparison's).
TRANSFERS = {
    "tiny": ("replaced.json", "the table it replaced"),
    "tiny-code": ("replaced.json", "the table it replaced"),
    "tiny-completions": ("results/compare/tiny/summary.json", "the same-prompts table"),
    "tiny-code-completions": ("results/compare/tiny-code/summary.json", "the same-prompts table"),
    "smol": ("results/compare/tiny/summary.json", "the tiny math table"),
}


ROOT = Path(__file__).resolve().parents[1]


def read(path: str, commit: str | None) -> dict | None:
    """A published JSON file (`path` from the repository's root) now (commit None) or as it was at `commit` (None
    where it did not exist)."""
    if commit is None:
        file = ROOT / path
        return json.loads(file.read_text()) if file.is_file() else None
    shown = subprocess.run(["git", "show", f"{commit}:{path}"], capture_output=True, text=True, cwd=ROOT)
    return json.loads(shown.stdout) if shown.returncode == 0 else None


def claim(row: dict) -> str:
    """A row as the tables say it: its order with '*' where only the crossed variance claims it, or 'A ~ B' with
    what the run could have detected.

    >>> claim({"a": "ipo", "b": "base", "metric": "sampled", "mean": 0.1, "claimed": True, "crossed_only": True})
    'IPO > base*'
    >>> claim({"a": "dpo", "b": "ipo", "metric": "sampled", "mean": 0.01, "claimed": False, "detectable": 0.031})
    'DPO ~ IPO, could have detected 3.1 points'
    """
    if is_claimed(row):
        return said(row) + mark(row)
    seen = f", could have detected {detectable(row['detectable'])}" if row.get("detectable") is not None else ""
    return said(row) + seen


def study_rows(summary: dict) -> dict:
    """(cell, metric) -> the study's difference from the cell's reference, with names `said` reads."""
    rows = {}
    for cell in summary["cells"]:
        for metric in METRICS:
            row = cell.get(f"{metric}_vs_reference")
            if row is not None:
                rows[(cell["cell"], metric)] = row | {"a": cell["cell"], "b": cell["reference_cell"], "metric": metric}
    return rows


def differing(before: dict, after: dict) -> list[tuple[tuple, dict, dict]]:
    """(key, before's row, after's row) for each difference whose claim or detectable difference reads differently."""
    return [
        (key, before[key], new) for key, new in after.items() if key in before and claim(before[key]) != claim(new)
    ]


def changed(before: dict, after: dict, name: str) -> list[str]:
    """One markdown row per difference whose claim or detectable difference reads differently."""
    lines = []
    for key, old, new in differing(before, after):
        label = f"{key[0]} - {key[1]}" if len(key) == 3 else f"{key[0]} - {new['b']}"
        lines.append(f"| {name} | {label} | {METRICS[key[-1]]} | {claim(old)} | {claim(new)} |")
    return lines


def verdicts(folder: str, commit: str | None, consistent: bool = True) -> dict:
    """(a, b, metric) -> verdict of the comparison's other section (`TRANSFERS`), at `commit` or now."""
    relative, _ = TRANSFERS[folder]
    other = read(relative if "/" in relative else f"results/compare/{folder}/{relative}", commit)
    this = read(f"results/compare/{folder}/summary.json", commit)
    if other is None or this is None:
        return {}
    theirs, ours = rows_of(other), rows_of(this)
    return {key: verdict(row, ours.get(key), consistent=consistent) for key, row in theirs.items() if is_claimed(row)}


def reruns(commit: str, after: str | None = None) -> str:
    """The studies' page (`--reruns`): each study difference that reads differently after the studies were rerun
    with their per-problem scores kept (`after`) than under #64's rule on their stored JSON (`commit`)."""
    command = f"python -m studies.rule_change --before {commit}" + (f" --after {after}" if after else "") + " --reruns"
    read_at = f"at commit {after}" if after else "now"
    lines = [
        f"# What the studies' reruns changed (`{command}`)",
        "",
        f"Each cell-against-reference difference of the four studies whose claim or detectable difference reads "
        f"differently in the published JSON {read_at} (rerun with their per-problem scores kept: Satterthwaite's "
        f"degrees of freedom exact, the seeds' own check beside each claim) than at commit {commit} (#64's rule on "
        "degrees of freedom stored rounded down: bounds on the wide side). A rerun trains its runs again with the "
        "code of its commit: where a cell's accuracy moved, its runs moved (PPO's critic has trained at its own "
        "learning rate since #45), not only the rule. 'A > B' a claim (Holm over the study's family), 'A ~ B' not "
        "told apart with the smallest difference the study could have detected. Every other difference reads as "
        "before.",
        "",
        "| table | difference | metric | before | now |",
        "|---|---|---|---|---|",
    ]
    fell = rose = claims = 0
    for study in STUDIES:
        path = f"results/studies/{study}/summary.json"
        before, now = study_rows(read(path, commit)), study_rows(read(path, after))
        lines += changed(before, now, f"studies/{study}")
        for _, old, row in differing(before, now):
            if is_claimed(old) != is_claimed(row):
                claims += 1
            elif not is_claimed(row):
                fell += row["detectable"] < old["detectable"]
                rose += row["detectable"] > old["detectable"]
    lines += [
        "",
        f"Of these rows, {fell} could now detect a smaller difference than before and {rose} a larger one; "
        f"{claims} changed between claimed and not claimed.",
    ]
    return "\n".join(lines) + "\n"


def report(commit: str, after: str | None = None) -> str:
    """The page: the published JSON at `commit` (before the rule) against `after` (None: the working tree)."""
    command = f"python -m studies.rule_change --before {commit}" + (f" --after {after}" if after else "")
    read_at = f"at commit {after}" if after else "now"
    lines = [
        f"# What #64's rule changed in the published tables (`{command}`)",
        "",
        f"Each difference whose claim or detectable difference reads differently in the published JSON {read_at} "
        f"than at commit {commit}: 'A > B' a claim (Holm over the table's family; '*': the seeds' own t-test at the "
        "same level would not claim it, the claim rests on the crossed seeds x problems variance), 'A ~ B' not told "
        "apart with the smallest difference the run could have detected (80% power, now at the level Holm would "
        "have needed; the studies' degrees of freedom were stored rounded down, so theirs are bounds until rerun). "
        "Every other difference reads as before.",
        "",
        "| table | difference | metric | before | now |",
        "|---|---|---|---|---|",
    ]
    for folder in COMPARISONS:
        path = f"results/compare/{folder}/summary.json"
        lines += changed(rows_of(read(path, commit)), rows_of(read(path, after)), f"compare/{folder}")
    for study in STUDIES:
        path = f"results/studies/{study}/summary.json"
        lines += changed(study_rows(read(path, commit)), study_rows(read(path, after)), f"studies/{study}")
    lines += [
        "",
        "## Verdicts of the sections that read another table's claims",
        "",
        "| table | against | claim there | before | now |",
        "|---|---|---|---|---|",
    ]
    for folder in COMPARISONS:
        # the verdicts as published before: no 'consistent' before #64
        then, now_said = verdicts(folder, commit, consistent=False), verdicts(folder, after)
        for key, now in now_said.items():
            if then.get(key) != now:
                a, b, metric = key
                lines.append(
                    f"| compare/{folder} | {TRANSFERS[folder][1]} | {a} - {b}, {METRICS[metric]} | "
                    f"{then.get(key, 'not measured')} | {now} |"
                )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="the commit whose published JSON to read as before")
    parser.add_argument("--after", help="the commit whose published JSON to read as after (default: the files now)")
    parser.add_argument(
        "--reruns", action="store_true", help="the studies only: what their reruns with per-problem scores changed"
    )
    args = parser.parse_args(argv)
    print((reruns if args.reruns else report)(args.before, args.after), end="")


if __name__ == "__main__":
    main()
