"""Held-out evaluation (`make eval`, `make eval-compare`, `make score`) with the same verifiers as training, from
`rewards/`."""

from core.library_noise import quiet

quiet()
