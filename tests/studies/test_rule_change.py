"""docs/rule-change.md, what #64's rule changed in the published tables, is `python -m studies.rule_change`'s
output: its "now" side is the published JSON at the commit it names as after, row by row, and the whole page is the
command's output (both commits are in the repository's history)."""

import re
import subprocess

from studies.comparison.worlds import rows_of
from studies.rule_change import COMPARISONS, STUDIES, TRANSFERS, claim, read, report, reruns, study_rows, verdicts
from tests.conftest import REPO_ROOT

DOC = REPO_ROOT / "docs" / "rule-change.md"
METRIC = {"sampled pass@1": "sampled", "greedy accuracy": "greedy"}


def table_rows(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines() if line.startswith("| ")]


def test_the_page_s_now_side_is_the_published_json_at_its_after_commit():
    text = DOC.read_text()
    commit, after = re.search(r"--before (\w+) --after (\w+)`", text).groups()
    for named in (commit, after):
        assert subprocess.run(["git", "cat-file", "-e", f"{named}^{{commit}}"], cwd=REPO_ROOT).returncode == 0, named
    changes, _, transfers = text.partition("## Verdicts")
    now = {}
    for folder in COMPARISONS:
        summary = read(f"results/compare/{folder}/summary.json", after)
        now |= {(f"compare/{folder}", f"{a} - {b}", m): claim(r) for (a, b, m), r in rows_of(summary).items()}
    for study in STUDIES:
        rows = study_rows(read(f"results/studies/{study}/summary.json", after))
        now |= {(f"studies/{study}", f"{c} - {r['b']}", m): claim(r) for (c, m), r in rows.items()}
    rows = table_rows(changes)[1:]
    assert len(rows) > 50  # the float df and the Holm level move most detectable differences
    for table, label, metric, old, new in rows:
        assert now[(table, label, METRIC[metric])] == new != old, (table, label, metric)
    said = {}
    for folder in COMPARISONS:
        said |= {(f"compare/{folder}", f"{a} - {b}, {m}"): v for (a, b, m), v in verdicts(folder, after).items()}
    for table, against, difference, old, new in table_rows(transfers)[1:]:
        name, metric = difference.rsplit(", ", 1)
        assert said[(table, f"{name}, {METRIC[metric]}")] == new != old
        assert against == TRANSFERS[table.split("/")[1]][1]
    assert report(commit, after) == text  # the before side too, from the commit's own JSON


RERUNS = REPO_ROOT / "docs" / "study-reruns.md"


def test_the_study_reruns_page_is_its_command_s_output_at_the_commits_it_names():
    """docs/study-reruns.md (`--reruns`): every study difference that reads differently after the reruns, its now side
    the rerun's JSON at the page's after commit, where every study kept its per-problem scores."""
    text = RERUNS.read_text()
    commit, after = re.search(r"--before (\w+) --after (\w+) --reruns`", text).groups()
    rows = table_rows(text)[1:]
    assert rows and all(table.startswith("studies/") for table, *_ in rows)
    for study in STUDIES:
        shown = subprocess.run(
            ["git", "cat-file", "-e", f"{after}:results/studies/{study}/per_problem.jsonl"], cwd=REPO_ROOT
        )
        assert shown.returncode == 0, study  # every study rerun by then
    assert reruns(commit, after) == text
