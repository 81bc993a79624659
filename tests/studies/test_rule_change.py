"""docs/rule-change.md, what #64's rule changed in the published tables, is `python -m studies.rule_change`'s
output: its "now" side is the published JSON's, row by row, and where the repository's history holds the commit it
compares with, the whole page is the command's output."""

import json
import re
import subprocess

from studies.comparison.worlds import rows_of
from studies.rule_change import COMPARISONS, STUDIES, TRANSFERS, claim, report, study_rows, verdicts
from tests.conftest import REPO_ROOT

DOC = REPO_ROOT / "docs" / "rule-change.md"
METRIC = {"sampled pass@1": "sampled", "greedy accuracy": "greedy"}


def table_rows(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines() if line.startswith("| ")]


def test_the_page_s_now_side_is_the_published_json():
    text = DOC.read_text()
    commit = re.search(r"--before (\w+)`", text).group(1)
    changes, _, transfers = text.partition("## Verdicts")
    now = {}
    for folder in COMPARISONS:
        summary = json.loads((REPO_ROOT / "results" / "compare" / folder / "summary.json").read_text())
        now |= {(f"compare/{folder}", f"{a} - {b}", m): claim(r) for (a, b, m), r in rows_of(summary).items()}
    for study in STUDIES:
        summary = json.loads((REPO_ROOT / "results" / "studies" / study / "summary.json").read_text())
        rows = study_rows(summary)
        now |= {(f"studies/{study}", f"{c} - {r['b']}", m): claim(r) for (c, m), r in rows.items()}
    rows = table_rows(changes)[1:]
    assert len(rows) > 50  # the float df and the Holm level move most detectable differences
    for table, label, metric, before, after in rows:
        assert now[(table, label, METRIC[metric])] == after != before, (table, label, metric)
    said = {}
    for folder in COMPARISONS:
        said |= {(f"compare/{folder}", f"{a} - {b}, {m}"): v for (a, b, m), v in verdicts(folder, None).items()}
    for table, against, difference, before, after in table_rows(transfers)[1:]:
        name, metric = difference.rsplit(", ", 1)
        assert said[(table, f"{name}, {METRIC[metric]}")] == after != before
        assert against == TRANSFERS[table.split("/")[1]][1]
    if subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=REPO_ROOT).returncode == 0:
        assert report(commit) == text  # the before side too, from the commit's own JSON
