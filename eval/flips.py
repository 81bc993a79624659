"""Side-by-side comparison of two evaluations with the per-sample flips.

Usage:
    make eval-compare A=results/eval/tiny-base/results.json B=results/eval/tiny-grpo/results.json
"""

import argparse
import json
from pathlib import Path

from core.errors import one_line_errors


def load(results_path: str) -> tuple[dict, list[dict]]:
    path = Path(results_path)
    results = json.loads(path.read_text())
    samples = [json.loads(line) for line in (path.parent / "samples.jsonl").read_text().splitlines()]
    return results, samples


def flips(a_samples: list[dict], b_samples: list[dict]) -> dict[str, list[dict]]:
    """Problems scored differently (first sample of each), keyed by direction; matched on the prompt."""
    a_by_prompt = {s["prompt"]: s for s in a_samples if s["sample"] == 0}
    b_by_prompt = {s["prompt"]: s for s in b_samples if s["sample"] == 0}
    common = [p for p in a_by_prompt if p in b_by_prompt]
    if not common:
        raise ValueError("the two evaluations share no prompt: were they run on the same task and data?")
    out = {"a_right_b_wrong": [], "a_wrong_b_right": []}
    for prompt in common:
        a, b = a_by_prompt[prompt]["score"], b_by_prompt[prompt]["score"]
        if a > b:
            out["a_right_b_wrong"].append({"prompt": prompt, "a": a_by_prompt[prompt], "b": b_by_prompt[prompt]})
        elif b > a:
            out["a_wrong_b_right"].append({"prompt": prompt, "a": a_by_prompt[prompt], "b": b_by_prompt[prompt]})
    out["shared"] = len(common)
    return out


def headline(results: dict) -> str:
    if "accuracy" in results:
        low, high = results["accuracy_ci95"]
        return f"{results['accuracy']:.1%} [{low:.1%}, {high:.1%}]"
    return ", ".join(f"{k} {v:.1%}" for k, v in results.items() if k.startswith("pass@") and not k.endswith("ci95"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--show", type=int, default=3, help="flipped samples to print each way")
    one_line_errors()
    args = parser.parse_args(argv)
    (a, a_samples), (b, b_samples) = load(args.a), load(args.b)
    if a["task"] != b["task"]:
        raise SystemExit(f"different tasks: {a['task']} vs {b['task']}")
    rows = [
        ("", "A", "B"),
        ("model", a["model"], b["model"]),
        ("adapter", str(a["adapter"]), str(b["adapter"])),
        ("n", str(a["n"]), str(b["n"])),
        ("score", headline(a), headline(b)),
        ("generation", json.dumps(a["generation"]), json.dumps(b["generation"])),
    ]
    width = max(len(r[0]) for r in rows)
    for name, left, right in rows:
        print(f"{name:<{width}}  {left:<40}  {right}")
    changed = flips(a_samples, b_samples)
    print(
        f"\nflips on {changed['shared']} shared problems: A right -> B wrong: {len(changed['a_right_b_wrong'])}, "
        f"A wrong -> B right: {len(changed['a_wrong_b_right'])}"
    )
    for direction in ("a_right_b_wrong", "a_wrong_b_right"):
        for flip in changed[direction][: args.show]:
            print(
                f"\n[{direction}] {flip['prompt'][:100]!r}\n  A: {flip['a']['completion'][-120:]!r}"
                f"\n  B: {flip['b']['completion'][-120:]!r}"
            )
    return changed


if __name__ == "__main__":
    main()
