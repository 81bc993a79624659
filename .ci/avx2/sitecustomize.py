"""Loaded at interpreter start when this folder is on PYTHONPATH (`make test CPU=avx2`): bitsandbytes' native check
for AVX512-BF16 answers no, so its CPU backend takes the paths it takes on an AVX2-only CPU (no fused 4-bit gemv, no
packed weights in no-grad forwards). The Makefile caps PyTorch's, oneDNN's and MKL's kernels at AVX2 beside it."""

import importlib.abc
import importlib.machinery
import sys


class _NoAvx512Bf16(importlib.abc.MetaPathFinder):
    """Patches `bitsandbytes.cextension.lib` right after that module runs, before the backends import it."""

    def find_spec(self, name, path, target=None):
        if name != "bitsandbytes.cextension":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        run_module = spec.loader.exec_module

        def exec_module(module):
            run_module(module)
            module.lib.has_avx512bf16_cpu = lambda: False

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _NoAvx512Bf16())
