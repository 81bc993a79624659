"""Scoring completions, during training and in `make eval`. Public: `generation.generate`, `benchmarks.TASKS`
(the built-in tasks, their prompts and verifiers), `reward_task.load_reward_task` (your data scored by your rewards),
`scoring.score_rows` / `drift`, `heldout` (`HeldoutArguments`, `heldout_callbacks`, `own_heldout`: held-out accuracy
and drift while a model trains)."""
