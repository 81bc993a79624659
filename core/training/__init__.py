"""What the trainers get on top of TRL's. Public: `trainers.recipe_trainer(method, logprobs)` (the declared recipe
trainer classes on `RecipeTrainer`: seeded start, atomic checkpoints, clean stops, the run's settings and final save),
`callbacks.run_callbacks` (metrics.jsonl, cost.json, SIGTERM), `memory_meter.LiveTensorMeter`, `adapter_precision`
(a 4-bit model's bf16 adapter multiplied in fp32 where the CPU has no native bf16), and PPO's pieces in `ppo`
(`RewardFunctionModel`, `ResumablePPOTrainer`, `load_value_model`)."""
