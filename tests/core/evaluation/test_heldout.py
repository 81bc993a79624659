"""The held-out split of a run on its own data (heldout_fraction): cut before training, disjoint from what trains,
the same rows for a seed whatever else the run selects, and refused in one line where it cannot be scored. The real
runs are in tests/core/evaluation/test_reward_task.py (the README walk-through) and tests/recipes/test_heldout.py."""

import pytest
from datasets import Dataset

from core.errors import UserError
from core.evaluation.heldout import HeldoutArguments, heldout_callbacks
from core.inputs.data import cut_heldout
from core.runs.folder import RunFolder


def rows(n: int) -> Dataset:
    return Dataset.from_list([{"question": f"{i} + 1", "answer": f"#### {i + 1}"} for i in range(n)])


def test_the_fraction_is_cut_off_before_training_disjoint_and_seeded():
    args = HeldoutArguments(heldout_fraction=0.25)
    train, held = cut_heldout(rows(40), args.heldout_fraction, seed=3, source="task.jsonl")
    assert (len(train), len(held)) == (30, 10)
    assert not set(train["question"]) & set(held["question"])
    assert set(train["question"]) | set(held["question"]) == set(rows(40)["question"])
    again = cut_heldout(rows(40), args.heldout_fraction, seed=3, source="task.jsonl")[1]
    other = cut_heldout(rows(40), args.heldout_fraction, seed=4, source="task.jsonl")[1]
    assert again["question"] == held["question"] and other["question"] != held["question"]


def test_no_fraction_keeps_every_row_for_training():
    train, held = cut_heldout(rows(5), HeldoutArguments().heldout_fraction, seed=0, source="task.jsonl")
    assert held is None and len(train) == 5


def test_a_fraction_that_leaves_nothing_on_one_side_is_refused_naming_the_data():
    with pytest.raises(UserError, match=r"heldout_fraction 0.1 of the 3 rows of task.jsonl leaves 0 held out"):
        cut_heldout(rows(3), 0.1, seed=0, source="task.jsonl")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"heldout_fraction": 1.0}, r"heldout_fraction 1.0 must be in \[0, 1\)"),
        (
            {"heldout_fraction": 0.2, "heldout_task": "tiny"},
            "heldout_fraction 0.2 cuts .* heldout_task tiny names others",
        ),
    ],
)
def test_settings_that_cannot_both_hold_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        HeldoutArguments(**kwargs)


@pytest.mark.parametrize(
    "kwargs", [{"heldout_fraction": 0.2}, {"heldout_data": "mine.jsonl"}], ids=["fraction", "data alone"]
)
def test_a_method_without_rewards_of_its_own_refuses_to_score_its_own_rows(kwargs, tmp_path):
    # DPO and ORPO call heldout_callbacks without an own task: they have no rewards to score the rows with
    with pytest.raises(UserError, match="scores held-out rows with the run's own rewards, and this method has none"):
        heldout_callbacks(RunFolder(tmp_path, None, {}), HeldoutArguments(**kwargs), tokenizer=None)
