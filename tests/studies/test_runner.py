"""What `--resume` keeps of a comparison spread over sessions (studies/runner.py): finished runs whose weights are
there or no longer needed."""

import json

from studies.runner import ADAPTER, keepable


def finished_run(out, name="grpo-seed2", adapter=True, checkpoints=()):
    run = out / name
    run.mkdir(parents=True)
    (run / "summary.json").write_text("{}\n")
    if adapter:
        (run / ADAPTER).write_bytes(b"weights")
    (run / "checkpoints.jsonl").write_text("".join(json.dumps({"step": s}) + "\n" for s in checkpoints))
    return run


def evaluated(out, name):
    (out / f"eval_{name}.json").write_text("{}\n")
    (out / f"eval_{name}.jsonl").write_text("{}\n")


def test_a_finished_run_is_kept_with_its_adapter_or_where_nothing_left_needs_it(tmp_path):
    assert keepable(finished_run(tmp_path / "a", checkpoints=(10, 20)), tmp_path / "a")
    # a clone's records (no adapter), evaluation kept, no checkpoints: the real model's table, kept
    records_only = finished_run(tmp_path / "b", adapter=False)
    evaluated(tmp_path / "b", records_only.name)
    assert keepable(records_only, tmp_path / "b")
    # its checkpoints would still be scored (validation curve, matched compute): trained again
    with_checkpoints = finished_run(tmp_path / "c", adapter=False, checkpoints=(10, 20))
    evaluated(tmp_path / "c", with_checkpoints.name)
    assert not keepable(with_checkpoints, tmp_path / "c")
    # not evaluated yet, and nothing to evaluate it from: trained again
    assert not keepable(finished_run(tmp_path / "d", adapter=False), tmp_path / "d")
