"""What the trainers get on top of TRL's: seeded start, atomic checkpoints, clean stops and the recipe trainer classes
(`trainers`), what a run reports while it trains (`callbacks`), where its time went (`timing`), live tensor memory
(`memory_meter`), and PPO's reward-function adapter and resume (`ppo`)."""
