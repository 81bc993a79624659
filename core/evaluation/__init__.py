"""Scoring completions, during training and in `make eval`: batched generation (`generation`), the benchmarks
(`benchmarks`), your own data scored by rewards (`reward_task`), scoring rows and drift (`scoring`), and held-out
accuracy while a model trains (`heldout`)."""
