"""Recipe scripts (`python -m recipes.<method>`) and the small core they share (`recipes.common`)."""

import logging

# On CPUs with AVX512-BF16, bitsandbytes 0.50 looks for an optional hub-downloaded matmul kernel (`pip install
# kernels`) and warns on every import when it is absent; it then uses its own CPU kernel, which is what the tests
# run. Only that message is dropped; everything else bitsandbytes logs still shows.
logging.getLogger("bitsandbytes.backends.cpu.ops").addFilter(
    lambda record: "kernels-community" not in record.getMessage())
