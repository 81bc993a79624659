"""Library messages a user can neither act on nor should have to read past, silenced for every entry point
(the packages' `__init__` call `quiet()` before their modules import the libraries); everything else still shows."""

import logging
import os
import warnings


def _not_kernels_community(record: logging.LogRecord) -> bool:
    return "kernels-community" not in record.getMessage()


def quiet() -> None:
    # On CPUs with AVX512-BF16, bitsandbytes 0.50 looks for an optional hub-downloaded matmul kernel (`pip install
    # kernels`) and logs its absence on every import; it then uses its own CPU kernel, which is what the tests run.
    logging.getLogger("bitsandbytes.backends.cpu.ops").addFilter(_not_kernels_community)
    # trl.experimental (PPO, ORPO) warns at import that its API may change; the pins in requirements.txt fix it.
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    # peft 0.21 and TRL 1.12 (PPO, unwrap_model_for_generation) read transformers 5's deprecated
    # `model.is_gradient_checkpointing`; nothing here does, and the user cannot act on the warning.
    warnings.filterwarnings("ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning)
