"""#64's pre-registration (results/compare/preregistration.json): the fresh held-out problems it names are the
files committed beside it, byte for byte what `python -m studies.comparison.fresh` draws, disjoint from every split
of their world; and it was committed before any result of the tables and sweeps it names."""

import hashlib
import json
import subprocess

import pytest

from studies.comparison.fresh import fresh_functions, fresh_sums, used_sums
from tests.conftest import REPO_ROOT, run_main

PREREGISTRATION = REPO_ROOT / "results" / "compare" / "preregistration.json"


def rows(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout.strip()


def test_the_fresh_problems_are_the_generators_and_no_split_of_their_world_holds_one(tiny_world, tiny_code_world):
    held = json.loads(PREREGISTRATION.read_text())["held_out"]
    for world, entry in held.items():
        path = REPO_ROOT / entry["file"]
        assert hashlib.sha256(path.read_bytes()).hexdigest() == entry["sha256"], world
        assert len(rows(path)) == entry["problems"] == 200, world
    sums = rows(REPO_ROOT / held["tiny"]["file"])
    assert sums == fresh_sums(tiny_world / "data")  # drawn again, the same problems
    pairs = {tuple(map(int, r["answer"].split(".", 1)[0].split("+"))) for r in sums}
    assert len(pairs) == 200 and not pairs & used_sums(tiny_world / "data")
    functions = rows(REPO_ROOT / held["tiny-code"]["file"])
    assert functions == fresh_functions()
    seen = {
        r["text"]
        for split in ("train", "validation", "test")
        for r in rows(tiny_code_world / "data" / f"{split}.jsonl")
    }
    assert not {r["text"] for r in functions} & seen


def test_it_was_committed_before_any_result_it_names():
    """Every sweep.json and summary.json of the tables it names was first committed after the pre-registration's last
    change (none yet is vacuous: the reruns come later, and each will be held to this)."""
    registered = git("log", "-1", "--format=%H", "--", str(PREREGISTRATION.relative_to(REPO_ROOT)))
    assert registered, "the pre-registration is not committed"
    plan = json.loads(PREREGISTRATION.read_text())
    for table in plan["tables"]:
        for name in ("sweep.json", "summary.json"):
            path = f"{table['out']}/{name}"
            added = git("log", "--diff-filter=A", "--format=%H", "--", path).splitlines()
            if added:  # a rerun's files not yet committed are after it by construction
                first = added[-1]
                assert first != registered and git("merge-base", "--is-ancestor", registered, first) == "", path


@pytest.mark.slow
def test_a_table_scores_on_the_fresh_file_it_is_given_and_records_its_hash(tiny_world, tmp_path):
    """--heldout: the base and every run scored on that file's problems (not the world's held-out split), its hash in
    settings.json and in every kept evaluation, so a resumed table never mixes two sets."""
    fresh = REPO_ROOT / "results" / "compare" / "fresh" / "tiny.jsonl"
    out = tmp_path / "fresh"
    command = ["--profile", "tiny", "--prompts", "8", "--methods", "grpo", "--eval_limit", "6", "--eval_k", "2"]
    command += ["--seeds", "1", "--load_in_4bit", "false", "--heldout", str(fresh), "--out", str(out)]
    run_main("studies.comparison", *command)
    digest = hashlib.sha256(fresh.read_bytes()).hexdigest()
    assert json.loads((out / "settings.json").read_text())["heldout_sha256"] == digest
    questions = [r["question"] for r in rows(fresh)[:6]]
    for name in ("base-seed0", "grpo-seed0"):
        assert json.loads((out / f"eval_{name}.json").read_text())["heldout_sha256"] == digest
        records = rows(out / f"eval_{name}.jsonl")
        assert all(q in str(r["prompt"]) for q, r in zip(questions, records[:6], strict=True)), name  # greedy first
    with pytest.raises(SystemExit, match="--heldout .*nothing.jsonl: no such file"):
        run_main("studies.comparison", *command[:-4], "--heldout", str(tmp_path / "nothing.jsonl"), "--out", str(out))
