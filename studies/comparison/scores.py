"""Per-problem scores, the published record every accuracy, interval and claim of a comparison is computed from:
per_problem.jsonl beside summary.json, one line per model, seed and held-out problem (the base once per seed: its
sampled completions are drawn again under each seed, as each method's are)."""

import json
from pathlib import Path

NAME = "per_problem.jsonl"
KEYS = ("method", "seed", "problem", "greedy", "sampled_passes", "samples")


def score_lines(evals: dict, k: int) -> list[dict]:
    """evals: (method, seed) -> evaluate's result (the base as ("base", seed)). Each line: method, seed, problem (its
    index in the held-out set that settings.json names), greedy (the greedy completion's score), sampled_passes (of
    `samples` completions at the training temperature, how many scored 1)."""
    lines = []
    for (method, seed), result in evals.items():
        for problem, (greedy, sampled) in enumerate(
            zip(result["greedy_per_problem"], result["sampled_per_problem"], strict=True)
        ):
            lines.append(
                {
                    "method": method,
                    "seed": seed,
                    "problem": problem,
                    "greedy": greedy,
                    "sampled_passes": round(sampled * k),
                    "samples": k,
                }
            )
    return lines


def write_scores(out: Path, lines: list[dict], name: str = NAME) -> Path:
    path = out / name
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def read_scores(out: Path, name: str = NAME) -> dict:
    """(method, seed) -> {"greedy": [...], "sampled": [pass@1 per problem], "samples": k}, problems in order; one
    line naming the file and line when a record is incomplete."""
    path = out / name
    if not path.is_file():
        raise SystemExit(f"{path}: missing; the comparison's per-problem scores are written by make compare")
    scores = {}
    for number, text in enumerate(path.read_text().splitlines(), 1):
        try:
            line = json.loads(text)
            missing = [key for key in KEYS if key not in line]
            if missing:
                raise ValueError(f"no {', '.join(missing)}")
            key = (line["method"], line["seed"])
            entry = scores.setdefault(key, {"greedy": [], "sampled": [], "samples": line["samples"]})
            if line["problem"] != len(entry["greedy"]):
                raise ValueError(f"problem {line['problem']} out of order (expected {len(entry['greedy'])})")
            entry["greedy"].append(line["greedy"])
            entry["sampled"].append(line["sampled_passes"] / line["samples"])
        except (ValueError, KeyError, TypeError) as error:
            raise SystemExit(f"{path}:{number}: not a per-problem score ({error})") from None
    return scores
