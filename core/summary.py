"""The end of every recipe: summary.json, the run's plot, and a short printed summary with the next commands."""

import json
import time
from pathlib import Path

import torch.distributed as dist

from core.metrics import REWARD_KEYS, first_last, reward_curve
from core.plots import plot_runs

# When the recipe's imports were done: wall_seconds in the summary counts from here.
PROCESS_START = time.time()


def eval_task_for(profile: str, reward_names=()) -> str:
    """The `make eval` task that measures what a run trained for."""
    if profile in ("tiny", "tiny-code"):
        return profile
    return "mbpp" if "code_tests" in reward_names or "code" in profile else "gsm8k"


def finish_run(trainer, method: str, output_dir: str, model_name: str, profile: str, reward_names=()) -> dict:
    """The run's plot, summary.json, and a short summary with the next commands (rank 0). A distributed launch
    also gets one line per rank, so it shows that every rank got to the end."""
    state = trainer.accelerator.state
    if state.num_processes > 1:
        backend = dist.get_backend() if dist.is_available() and dist.is_initialized() else "none"
        print(f"[rank {state.process_index}/{state.num_processes}, backend {backend}] finished")
    if not trainer.is_world_process_zero():
        return {}
    out = Path(output_dir)
    cost_path = out / "cost.json"
    cost = json.loads(cost_path.read_text()) if cost_path.is_file() else {}
    key = REWARD_KEYS[method]
    curve = reward_curve(out, key)
    first, last = first_last(curve)
    plot = plot_runs([out], out / "metrics.png")
    task = eval_task_for(profile, reward_names)
    summary = {
        "method": method,
        "steps": trainer.state.global_step,
        "wall_seconds": round(time.time() - PROCESS_START, 1),
        "train_seconds": cost.get("train_seconds"),
        "signal": key,
        "signal_first": first,
        "signal_last": last,
        "peak_memory_mb": cost.get("peak_memory_mb"),
        "memory_measure": cost.get("measure"),
        "adapter": str(out),
        "plot": str(plot) if plot else None,
        "next": [f"make eval MODEL={model_name} ADAPTER={out} TASK={task}", f"make plot RUN={out}"],
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    signal = (
        f"{key} {first:.3f} -> {last:.3f} (mean of the first and last fifth of {len(curve)} logged steps)"
        if first is not None
        else f"{key}: not logged"
    )
    memory = f"{summary['peak_memory_mb']:,.0f} MB ({summary['memory_measure']})" if cost else "not measured"
    print(
        f"\n{method.upper()} finished: {summary['steps']} steps in {summary['wall_seconds']:.0f} s "
        f"({summary['train_seconds'] or 0:.0f} s training)\n"
        f"  {signal}\n  peak memory {memory}\n  adapter  {out}\n"
        + (f"  plot     {plot}\n" if plot else "")
        + f"next:\n  {summary['next'][0]}   # held-out accuracy\n  {summary['next'][1]}   # redraw the plot\n"
    )
    return summary
