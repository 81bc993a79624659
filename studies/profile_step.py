"""Where a tiny GRPO step's time goes, by operator: the shipped tiny config's recipe, run for a few steps under
torch.profiler, in 4-bit as shipped or in full precision; prints the operators by their own CPU time. The 4-bit
path's cost depends on the CPU: bitsandbytes fuses its 4-bit matmul only where the CPU has AVX512-BF16
(docs/test-suite.md has both profiles).

Usage:
    python -m studies.profile_step                              # 4-bit NF4 + LoRA, as `make grpo` trains
    python -m studies.profile_step --load_in_4bit false         # the same steps in full precision
"""

import argparse
import runpy
import sys
import tempfile

CONFIG = "recipes/configs/tiny/grpo.yaml"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=2, help="optimizer steps (each generates 64 completions)")
    parser.add_argument("--rows", type=int, default=15, help="operators to print")
    parser.add_argument("--shapes", action="store_true", help="one row per operator and input shapes")
    args, recipe_flags = parser.parse_known_args(argv)
    from torch.profiler import ProfilerActivity, profile

    with tempfile.TemporaryDirectory() as out:
        argv_before = sys.argv
        sys.argv = ["recipes.grpo", "--config", CONFIG, "--max_steps", str(args.steps), "--heldout_limit", "0"]
        sys.argv += ["--save_strategy", "no", "--output_dir", out, *recipe_flags]
        try:
            with profile(activities=[ProfilerActivity.CPU], record_shapes=args.shapes) as profiled:
                runpy.run_module("recipes.grpo", run_name="__main__", alter_sys=False)
        finally:
            sys.argv = argv_before
    averages = profiled.key_averages(group_by_input_shape=args.shapes)
    print(averages.table(sort_by="self_cpu_time_total", row_limit=args.rows))


if __name__ == "__main__":
    main()
