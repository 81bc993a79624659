"""What training adds on top of any trainer, with no TRL internals: `callbacks.run_callbacks` (metrics.jsonl,
cost.json, SIGTERM), `divergence` (a step that diverged, said and stopped), `heap` (the start's objects out of the
collector's passes), `plan.PlanLine`, `memory_meter.LiveTensorMeter`, `adapter_precision` (a 4-bit model's bf16
adapter multiplied in fp32 where the CPU has no native bf16). The trainers that use them: core.trl_internals."""
