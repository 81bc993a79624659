"""The chunked log-prob path (`logprobs: chunked`, the 7B memory path) in one place: the function (`token_logprobs`),
the overrides of GRPO's, DPO's and ORPO's trainers (`trainers`), and PPO's loop (`ppo_loop`)."""
