"""What a table keeps of its evaluations (studies/scoring.py): read again only where scored the way it asks, and no
run scored without its weights."""

import json

import pytest

from studies.scoring import Scoring
from tests.studies.test_runner import finished_run


def scoring(out, resume=True, heldout=None, k=4):
    return Scoring("model", "tiny", [{"question": "1+1"}] * 3, k, 1.0, out, resume=resume, heldout=heldout)


def test_a_kept_evaluation_is_read_again_only_where_it_scored_what_is_asked(tmp_path):
    heldout = tmp_path / "fresh.jsonl"
    heldout.write_text('{"question": "1+1"}\n')
    asked = scoring(tmp_path, heldout=str(heldout)).asked()
    assert asked["n"] == 3 and asked["k"] == 4 and len(asked["heldout_sha256"]) == 64
    (tmp_path / "eval_grpo-seed2.json").write_text(json.dumps({"sampled": 0.5, **asked}) + "\n")
    assert scoring(tmp_path, heldout=str(heldout)).kept("grpo-seed2", with_records=False)["sampled"] == 0.5
    assert scoring(tmp_path, heldout=str(heldout)).kept("grpo-seed2") is None  # its completions are not there
    assert scoring(tmp_path, heldout=str(heldout), resume=False).kept("grpo-seed2", with_records=False) is None
    assert scoring(tmp_path, heldout=str(heldout), k=8).kept("grpo-seed2", with_records=False) is None
    assert scoring(tmp_path).kept("grpo-seed2", with_records=False) is None  # scored on a file, asked the split
    heldout.write_text('{"question": "2+2"}\n')  # other problems in the same file name
    assert scoring(tmp_path, heldout=str(heldout)).kept("grpo-seed2", with_records=False) is None
    # a checkpoint's evaluation (matched compute) is kept only for the same step
    (tmp_path / "eval_matched_grpo-seed2.json").write_text(json.dumps({**scoring(tmp_path).asked(), "step": 10}))
    assert scoring(tmp_path).kept("matched_grpo-seed2", {"step": 10}, with_records=False)["step"] == 10
    assert scoring(tmp_path).kept("matched_grpo-seed2", {"step": 20}, with_records=False) is None


def test_a_run_without_its_weights_is_refused_in_one_line_before_any_model_loads(tmp_path):
    run = finished_run(tmp_path, adapter=False)
    with pytest.raises(SystemExit, match="grpo-seed2: no adapter in .*grpo-seed2 to score"):
        scoring(tmp_path).score("grpo-seed2", run, sample_seed=2)
    assert not (tmp_path / "eval_grpo-seed2.json").exists()
