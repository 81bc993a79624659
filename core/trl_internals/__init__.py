"""Every override of TRL's (and transformers' Trainer's) internals, in one room, so that a TRL upgrade touches it
alone. Written against trl 1.12.0, the last release with PPOTrainer (`contract.WRITTEN_AGAINST`); `contract` records
the shape of each overridden method and the source of the forked PPO loop, and its test fails, naming them, when the
installed TRL differs. Public: `trainers.recipe_trainer(method, logprobs)` (the declared recipe trainer classes on
`RecipeTrainer`: seeded start, atomic checkpoints, clean stops, token counts), `chunked` (GRPO's, DPO's and ORPO's one
log-prob override each, `check_logprobs`), `ppo_loop.ChunkedPPO` (TRL's PPO loop on chunked log-probs), `ppo`
(`RewardFunctionModel`, `ResumablePPOTrainer`, `load_value_model`, `prompts_per_update`)."""
