"""Evaluation (`make eval`): the same verifiers as training, from `rewards/`."""
