"""The chunked log-prob path (`logprobs: chunked`, the 7B memory path) in one place. Public:
`token_logprobs.token_logprobs` (per-token log-probs from hidden states, never full logits), `trainers` (GRPO's, DPO's
and ORPO's one override each, `ChunkedGRPOTrainer` and its siblings, `check_logprobs`), `ppo_loop.ChunkedPPO` (PPO's
loop)."""
