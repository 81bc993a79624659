"""Scoring the comparison's and the studies' models: every adapter and the starting model on the same held-out
problems (`evaluate`, `Scoring`, `evaluate_all`), each saved checkpoint on the validation split
(`checkpoint_curves`); the runs themselves are studies.runner's."""

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import torch
import yaml

from core.evaluation.accuracy import correct_per_problem, evaluate_model, load_for_eval
from core.evaluation.benchmarks import TASKS, load_task_data
from core.runs.folder import read_jsonl
from studies.runner import ADAPTER, completions_generated, samples_per_step
from tasks.shipped import sha256


def mean_or_none(values: list) -> float | None:
    return sum(values) / len(values) if values else None


def evaluate(
    model_name: str,
    adapter: Path | None,
    task: str,
    rows: list[dict],
    k: int,
    temperature: float,
    greedy: bool = True,
    load_in_4bit: bool = True,
    sample_seed: int = 0,
    greedy_done: tuple[dict, list[dict]] | None = None,
) -> tuple[dict, list[dict]]:
    """One model (in 4-bit, or full precision, as trained) on `rows`: sampled pass@1 from k samples drawn under
    `sample_seed`, greedy accuracy (or the model's `greedy_done`: greedy is the same under every seed), per-problem
    scores, completion lengths and the share cut at the length limit."""
    model, tokenizer = load_for_eval(model_name, str(adapter) if adapter else None, load_in_4bit=load_in_4bit)
    result, records = {}, []
    if greedy_done:
        result |= greedy_done[0]
        records += greedy_done[1]
    elif greedy:
        torch.manual_seed(0)
        metrics, greedy_records = evaluate_model(model, tokenizer, task, rows)
        result |= {
            "greedy": metrics["accuracy"],
            "greedy_ci95": metrics["accuracy_ci95"],
            "greedy_per_problem": [r["score"] for r in greedy_records],
        }
        records += greedy_records
    torch.manual_seed(sample_seed)
    metrics, sampled_records = evaluate_model(model, tokenizer, task, rows, k=k, temperature=temperature)
    records += sampled_records
    lengths = [len(tokenizer(r["completion"], add_special_tokens=False)["input_ids"]) for r in records]
    limit = TASKS[task].max_new_tokens
    sampled = list(zip(lengths[len(records) - len(sampled_records) :], sampled_records, strict=True))
    result |= {
        "sampled": metrics["pass@1"],
        "sampled_ci95": metrics["pass@1_ci95"],
        "sampled_per_problem": [c / k for c in correct_per_problem(sampled_records, k)],
        "completion_length_mean": sum(lengths) / len(lengths),
        # the sampled completions' lengths, of right and of wrong answers
        "length_passed": mean_or_none([n for n, r in sampled if r["score"] == 1.0]),
        "length_failed": mean_or_none([n for n, r in sampled if r["score"] != 1.0]),
        "clipped_share": sum(n >= limit for n in lengths) / len(lengths),
    }
    del model
    return result, records


@dataclass(frozen=True)
class Scoring:
    """How a table scores its models on the held-out problems: the starting model `model_name` (in 4-bit or not, as
    trained) on `task`'s `rows` (its held-out split, or the file `heldout`: problems no run scored before), greedy
    and k samples at `temperature`; each evaluation kept in `out` as eval_<name>.json (with `resume`, read again
    where it scored the same problems, samples and temperature)."""

    model_name: str
    task: str
    rows: list[dict]
    k: int
    temperature: float
    out: Path
    load_in_4bit: bool = True
    resume: bool = False
    heldout: str | None = None

    @cached_property
    def heldout_sha256(self) -> str | None:
        """The held-out file's SHA-256, read once for every evaluation this scoring asks about."""
        return sha256(Path(self.heldout)) if self.heldout else None

    def asked(self) -> dict:
        """What an evaluation is scored on: the number of problems (and the file's SHA-256 where one is given),
        samples and temperature; a kept one is read again only where they are the same."""
        digest = {"heldout_sha256": self.heldout_sha256} if self.heldout else {}
        return {"n": len(self.rows), "k": self.k, "temperature": self.temperature, **digest}

    def kept(self, name: str, also: dict | None = None, with_records: bool = True) -> dict | None:
        """eval_<name>.json where `resume` may read it again: scored as `asked` (and `also`), with its completions
        (eval_<name>.jsonl) beside it where `with_records`; else None."""
        cached = self.out / f"eval_{name}.json"
        if not (self.resume and cached.is_file()):
            return None
        kept, asked = json.loads(cached.read_text()), self.asked() | (also or {})
        same = all(kept.get(a) == v for a, v in asked.items()) and ("heldout_sha256" in kept) == bool(self.heldout)
        records = not with_records or (self.out / f"eval_{name}.jsonl").is_file()
        return kept if same and records else None

    def score(
        self,
        name: str,
        adapter: Path | None,
        sample_seed: int,
        greedy_done: tuple[dict, list[dict]] | None = None,
        also: dict | None = None,
        with_records: bool = True,
    ) -> tuple[dict, list[dict]]:
        """`evaluate` one model (the starting one where `adapter` is None), kept as eval_<name>.json (and its
        completions as eval_<name>.jsonl where `with_records`) with what it was scored on."""
        if adapter is not None and not (adapter / ADAPTER).is_file():
            raise SystemExit(
                f"{name}: no adapter in {adapter} to score (a clone holds a run's records, not its weights); run the "
                "table again without --resume, or from the folder where it trained"
            )
        result, records = evaluate(
            self.model_name,
            adapter,
            self.task,
            self.rows,
            self.k,
            self.temperature,
            load_in_4bit=self.load_in_4bit,
            sample_seed=sample_seed,
            greedy_done=greedy_done,
        )
        result |= self.asked() | (also or {})
        if with_records:
            with open(self.out / f"eval_{name}.jsonl", "w") as fh:
                fh.writelines(json.dumps(record) + "\n" for record in records)
        (self.out / f"eval_{name}.json").write_text(json.dumps(result) + "\n")
        return result, records


def evaluate_all(runs: dict, scoring: Scoring) -> dict:
    """("base", seed) for every seed the runs have, and every (method, seed) -> greedy and sampled metrics on the
    held-out set, as `scoring` says. A seed's models draw their samples under that seed, the base's again under each
    (so a claim against the base counts the base's sampling noise, as it counts each method's); greedy is scored
    once per model."""
    results, base_greedy = {}, None
    for seed in sorted({seed for _, seed in runs}):
        for key, adapter in [(("base", seed), None), *((key, a) for key, a in runs.items() if key[1] == seed)]:
            name = f"{key[0]}-seed{key[1]}"
            kept, records = scoring.kept(name), None
            if kept:
                results[key] = kept  # completions read below, only for the base's greedy
                print(f"[compare] {name}: evaluated before, kept ({scoring.out / f'eval_{name}.json'})", flush=True)
            else:
                greedy_done = base_greedy if key[0] == "base" else None
                results[key], records = scoring.score(name, adapter, seed, greedy_done)
                greedy, sampled = results[key]["greedy"], results[key]["sampled"]
                print(f"[compare] {name}: greedy {greedy:.3f}, sampled pass@1 {sampled:.3f}", flush=True)
            if key[0] == "base" and base_greedy is None:  # greedy is the same under every seed: scored once
                greedy_keys = ("greedy", "greedy_ci95", "greedy_per_problem")
                if records is None:
                    records = read_jsonl(scoring.out / f"eval_{name}.jsonl")
                base_greedy = ({g: results[key][g] for g in greedy_keys}, records[: len(scoring.rows)])
    return results


def checkpoint_curves(
    model_name: str,
    runs: dict,
    task: str,
    validation: str,
    k: int,
    temperature: float,
    limit: int | None = None,
    load_in_4bit: bool = True,
    resume: bool = False,
) -> dict:
    """(method, seed) -> [{step, train_seconds, samples, completions sampled, validation sampled pass@1}] at each
    saved checkpoint, kept as <run>/compute_curve.json (with `resume`, a kept one is read instead)."""
    rows = load_task_data(TASKS[task], validation, limit)
    curves = {}
    for (method, seed), run_dir in runs.items():
        if resume and (run_dir / "compute_curve.json").is_file():
            curves[(method, seed)] = json.loads((run_dir / "compute_curve.json").read_text())
            continue
        saved = (
            [json.loads(line) for line in (run_dir / "checkpoints.jsonl").read_text().splitlines()]
            if (run_dir / "checkpoints.jsonl").is_file()
            else []
        )
        config = yaml.safe_load((run_dir / "config.yaml").read_text())
        points = []
        for point in saved:
            checkpoint = run_dir / f"checkpoint-{point['step']}"
            if not (checkpoint / "adapter_model.safetensors").is_file():
                continue
            metrics, _ = evaluate(
                model_name, checkpoint, task, rows, k, temperature, greedy=False, load_in_4bit=load_in_4bit
            )
            points.append(
                {
                    "step": point["step"],
                    "train_seconds": point["train_seconds"],
                    "samples": samples_per_step(method, config) * point["step"],
                    "completions_generated": completions_generated(method, config, point["step"]),
                    "validation_sampled_pass1": metrics["sampled"],
                }
            )
        curves[(method, seed)] = points
        (run_dir / "compute_curve.json").write_text(json.dumps(points) + "\n")
        print(
            f"[compare] {method}-seed{seed} on validation: "
            + ", ".join(f"step {p['step']} {p['validation_sampled_pass1']:.3f}" for p in points),
            flush=True,
        )
    return curves
