"""The verdict of finished runs: held-out accuracy before -> after (paired), the training signal's trend, drift from
the start and the checks (core/report/verdict.py), for one run or several side by side.

Usage:
    make audit RUN=runs/grpo-tiny-20261202-101500
    make audit RUN="runs/grpo-tiny-... runs/dpo-tiny-..."  LIMIT=100
    python -m eval.audit runs/grpo-tiny-... --task tiny --limit 100

A run that evaluated held-out problems while it trained is judged from its own records, as its summary was. A run
trained without them (held-out off, or several processes) is measured now: the start model (the run's base with the
adapter off) and the adapter, loaded as the run trained them (4-bit when it did), greedy on the held-out problems
of the task the run trained for, through the same scoring and drift code as training-time evaluation. Those
records go to <run>/audit/ (metrics.jsonl, heldout/step-N.jsonl, verdict.json); the run's own files are not touched.
"""

import argparse
import json
import shutil
from pathlib import Path

from core.errors import one_line_errors
from core.evaluation.accuracy import load_for_eval
from core.evaluation.benchmarks import TASKS
from core.evaluation.heldout import HeldoutArguments, HeldoutEval
from core.report.finished import run_record, task_of
from core.report.verdict import describe, verdict
from core.runs.metrics import REWARD_KEYS, read_metrics


def measure(run: Path, summary: dict, config: dict, task: str, data: str | None, limit: int) -> Path:
    """Scores the start model (adapter off) and the adapter into <run>/audit/; returns that folder."""
    out = run / "audit"
    shutil.rmtree(out, ignore_errors=True)  # the audit's own earlier records, nothing of the run's
    out.mkdir()
    four_bit = bool(config.get("load_in_4bit"))
    model, tokenizer = load_for_eval(config["model_name_or_path"], str(run), load_in_4bit=four_bit)
    args = HeldoutArguments(heldout_task=task, heldout_data=data, heldout_limit=limit)
    evaluation = HeldoutEval(str(out), args, tokenizer)
    evaluation.settings["four_bit"] = four_bit  # written to heldout/settings.json with each evaluation
    with model.disable_adapter():
        evaluation.evaluate(model, 0)
    evaluation.evaluate(model, summary["steps"])
    return out


def audit(run: str | Path, task: str | None = None, data: str | None = None, limit: int = 200) -> dict:
    """The verdict of one finished run, from its own held-out records or measured now; with `source` and the
    settings it used."""
    run = Path(run)
    summary, config = run_record(run)
    method = summary["method"]
    rows = read_metrics(run)
    training = [row for row in rows if "heldout/accuracy" not in row]
    trained_on = config.get("reward_funcs")
    if len(training) < len(rows) and not task and not data:  # the run evaluated held-out problems itself
        judged, folder, source = verdict(run, rows, method, REWARD_KEYS[method], trained_on), run, "the run's own"
    else:
        folder = measure(run, summary, config, task_of(run, config, task), data, limit)
        judged = verdict(folder, training + read_metrics(folder), method, REWARD_KEYS[method], trained_on)
        source = "measured now"
        (folder / "verdict.json").write_text(json.dumps(judged, indent=2) + "\n")
    settings = json.loads((folder / "heldout" / "settings.json").read_text())
    return {"run": str(run), "method": method, "steps": summary["steps"], "source": source, "settings": settings} | {
        "verdict": judged
    }


def side_by_side(results: list[dict]) -> str:
    """One row per run: held-out before -> after with the paired difference, KL from the start, the checks."""
    lines = ["| run | method | steps | held-out before -> after | paired difference | KL | checks |", "|---" * 7 + "|"]
    for r in results:
        held, drift = r["verdict"]["heldout"], r["verdict"]["drift"]
        paired = held["paired"]
        lines.append(
            f"| {r['run']} | {r['method'].upper()} | {r['steps']} | {held['before']:.1%} -> {held['after']:.1%} "
            f"(n={held['n']}) | {paired['mean']:+.1%} [{paired['ci95'][0]:+.1%}, {paired['ci95'][1]:+.1%}] "
            f"| {drift['kl']:.3f} | {', '.join(c['name'] for c in r['verdict']['checks']) or 'none'} |"
        )
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="finished run folders")
    parser.add_argument("--task", choices=sorted(TASKS), help="held-out task (default: the run's profile's)")
    parser.add_argument("--data", help="the held-out problems, a local file in the task's format")
    parser.add_argument("--limit", type=int, default=200, help="the first N held-out problems (measured runs)")
    one_line_errors()
    args = parser.parse_args(argv)
    results = []
    for run in args.runs:  # every folder checked before any model loads
        run_record(Path(run))
    for run in args.runs:
        result = audit(run, args.task, args.data, args.limit)
        four_bit = ", 4-bit as trained" if result["settings"].get("four_bit") else ""
        print(f"{result['method'].upper()} {run}: {result['steps']} steps; held-out {result['source']}{four_bit}")
        print(describe(result["verdict"], result["settings"]["task"]), end="")
        results.append(result)
    if len(results) > 1:
        print("\n" + side_by_side(results))
    return results


if __name__ == "__main__":
    main()
