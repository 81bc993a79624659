"""Per-token log-probs from hidden states in chunks, never the full-vocabulary logits (`logprobs: chunked`, the 7B
memory path): `token_logprobs.token_logprobs`. The trainers' overrides that call it: core.trl_internals."""
