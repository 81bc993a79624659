"""Studies and benchmarks built on the recipes and eval: the tiny worlds they run in, the four-method comparison,
the reward check, the memory estimator and its validation, the reward benchmarks."""

from core.library_noise import quiet

quiet()
