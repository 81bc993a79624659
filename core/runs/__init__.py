"""The run folder and what is recorded in it. Public: `folder.resolve_run_dir` -> `RunFolder` (ownership, lock, resume,
run.json, checkpoint rotation, the settings written beside the adapter), `timing.PhaseTimer` (where the training time
went), `storage.write_whole` / `write_text_whole` / `writing` (written whole or not at all, one line on a full disk),
`provenance.commit` / `cpu` / `code_digest`, `metrics.read_metrics` / `reward_curve` (what a run logged)."""
