"""Held-out accuracy and drift while a model trains, through the generation and scoring of `make eval`
(`core.evaluation.scoring`, which `eval/run.py` calls too): `HeldoutEval` scores the model (adapter on) on held-out
problems that are never trained on, at the start (step 0: the start model), every `heldout_eval_steps` and at the end,
and measures on the same completions how far the policy drifted from where it started: mean per-token KL from the start
model (adapter off vs on, on the same tokens), mean token entropy, completion length and the share cut at the budget.
Rows `heldout/...` go to metrics.jsonl, each evaluation's per-problem records to heldout/step-<N>.jsonl."""

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from transformers import TrainerCallback

from core.errors import UserError
from core.evaluation.benchmarks import TASKS, load_task_data
from core.evaluation.generation import generate, inference
from core.evaluation.reward_task import RewardTask, score_samples
from core.evaluation.scoring import drift, score_rows
from core.inputs.rewards import Rewards
from core.runs.folder import RunFolder
from core.runs.storage import write_text_whole, writing
from core.runs.timing import PhaseTimer


@dataclass
class HeldoutArguments:
    heldout_task: str | None = field(
        default=None,
        metadata={"help": f"score held-out problems during training with a make eval task: {', '.join(TASKS)}"},
    )
    heldout_data: str | None = field(
        default=None, metadata={"help": "the held-out problems (a local file in the task's format; else its own)"}
    )
    heldout_limit: int = field(default=200, metadata={"help": "how many held-out problems (the first N)"})
    heldout_eval_steps: int = field(
        default=0, metadata={"help": "also evaluate every N steps (0: at the start and the end only)"}
    )
    heldout_max_new_tokens: int | None = field(
        default=None, metadata={"help": "completion budget (default: the task's, as make eval)"}
    )
    heldout_k: int = field(
        default=1,
        metadata={
            "help": "also sample k completions per problem at heldout_temperature and log sampled pass@1 beside "
            "greedy accuracy (1: greedy only)"
        },
    )
    heldout_temperature: float = field(
        default=0.7, metadata={"help": "temperature of the heldout_k samples (the shipped configs' training one)"}
    )
    heldout_fraction: float = field(
        default=0.0,
        metadata={
            "help": "your own task: cut this share of the training data before training (seeded by `seed`, never "
            "trained on) and score it with the run's rewards, as make eval DATA= REWARDS= does"
        },
    )

    @property
    def own_data(self) -> str | None:
        """`heldout_data` where it is the run's own task (no `heldout_task`, scored): prepared as the training rows
        are (`prepare_prompts(..., heldout_data=)`) and scored with the run's rewards (`own_heldout`)."""
        return self.heldout_data if not self.heldout_task and self.heldout_limit > 0 else None

    def __post_init__(self):
        if self.heldout_task is not None and self.heldout_task not in TASKS:
            raise ValueError(f"heldout_task {self.heldout_task!r} is not a task; the tasks: {', '.join(TASKS)}")
        if not 0.0 <= self.heldout_fraction < 1.0:
            raise ValueError(f"heldout_fraction {self.heldout_fraction} must be in [0, 1)")
        if self.heldout_fraction and (self.heldout_task or self.heldout_data):
            other = f"heldout_task {self.heldout_task}" if self.heldout_task else f"heldout_data {self.heldout_data}"
            raise ValueError(
                f"heldout_fraction {self.heldout_fraction} cuts the held-out problems from the training data and "
                f"{other} names others: keep one (the tiny configs set heldout_task; `heldout_task: null` clears it)"
            )
        if self.heldout_k < 1:
            raise ValueError(f"heldout_k {self.heldout_k} must be >= 1 (1: greedy only)")
        if self.heldout_k > 1 and self.heldout_temperature <= 0:
            raise ValueError(f"heldout_k {self.heldout_k} samples need heldout_temperature > 0")
        if self.heldout_eval_steps < 0:
            raise ValueError(f"heldout_eval_steps {self.heldout_eval_steps} must be >= 0 (0: start and end only)")


# What each held-out evaluation keeps per problem (heldout/step-<N>.jsonl; an own task's records have no extracted).
RECORD_KEYS = ("index", "score", "extracted", "completion")


def policy_of(model):
    """The model that generates: PPO's trainer holds a policy-and-value wrapper."""
    return getattr(model, "policy", model)


@dataclass
class OwnHeldout:
    """Your own task's held-out problems: rows never trained on, scored by the run's rewards (`RewardTask`)."""

    task: RewardTask
    rows: list[dict]
    max_new_tokens: int
    origin: str  # where the rows came from, for settings.json


def own_heldout(args: HeldoutArguments, held, script_args, rewards: Rewards, max_new_tokens: int) -> OwnHeldout | None:
    """The run's own held-out task, checked before any model loads: `held`, the rows `prepare_prompts` held out
    (`heldout_fraction`'s cut, or `heldout_data` without `heldout_task`: `args.own_data`, prepared as the training
    data is); the first `heldout_limit`."""
    if args.heldout_task or args.heldout_limit <= 0 or held is None:
        return None
    if args.heldout_fraction:
        origin = f"heldout_fraction {args.heldout_fraction:g} of {script_args.dataset_name}"
    else:
        origin = args.heldout_data
    held = held.select(range(min(args.heldout_limit, len(held))))
    task = RewardTask(
        script_args.dataset_name,
        rewards.names,
        list(rewards.weights),
        list(rewards.funcs),
        script_args.prompt_column,
        script_args.prompt_template,
        script_args.system_prompt,
    )
    return OwnHeldout(task, [dict(row) for row in held], max_new_tokens, origin)


def refuse_own_heldout(args: HeldoutArguments, method: str) -> None:
    """A run without rewards of its own (DPO, ORPO, PPO with a reward model) cannot score its own held-out rows."""
    if not args.heldout_task and (args.heldout_fraction or args.heldout_data):
        asked = f"heldout_fraction {args.heldout_fraction:g}" if args.heldout_fraction else "heldout_data alone"
        raise UserError(
            f"{asked} scores held-out rows with the run's own rewards, and {method} has none: name the task that "
            "scores them with heldout_task (and heldout_data for its problems)"
        )


def cost_line(n: int, seconds: float, planned: list[int]) -> str:
    """What held-out evaluation will cost this run, from the start model's evaluation just measured.

    >>> cost_line(200, 41.5, [100, 200])
    'held-out: 200 problems took 41.5 s at step 0; 2 more evaluations (steps 100, 200) will take about 83 s'
    """
    shown = ", ".join(map(str, planned[:6])) + (", ..." if len(planned) > 6 else "")
    return (
        f"held-out: {n} problems took {seconds:.1f} s at step 0; {len(planned)} more evaluation"
        f"{'s' if len(planned) != 1 else ''} (step{'s' if len(planned) != 1 else ''} {shown}) will take about "
        f"{seconds * len(planned):.0f} s"
    )


class HeldoutEval(TrainerCallback):
    """Greedy held-out accuracy and drift at step 0, every `eval_steps` and at the end (rank 0 of one process): a
    built-in task (`heldout_task`) scored by its verifier, or the run's own task (`own`) scored by its rewards."""

    def __init__(
        self,
        output_dir: str,
        args: HeldoutArguments,
        tokenizer,
        own: OwnHeldout | None = None,
        phases: PhaseTimer | None = None,
    ):
        self.own, self.tokenizer, self.out = own, tokenizer, Path(output_dir)
        self.phases = phases if phases is not None else PhaseTimer()
        self.eval_steps, self.done = args.heldout_eval_steps, set()
        if own is not None:
            self.task, self.rows = own.task, own.rows
            self.max_new_tokens = args.heldout_max_new_tokens or own.max_new_tokens
            problems = self.out / "heldout" / "problems.jsonl"  # what make eval DATA= needs to score the same rows
            data, extra = str(problems), {"origin": own.origin, "rewards": own.task.reward_names}
            extra["reward_weights"] = own.task.reward_weights
        else:
            self.task = TASKS[args.heldout_task]
            self.rows = load_task_data(self.task, args.heldout_data, args.heldout_limit)
            self.max_new_tokens = args.heldout_max_new_tokens or self.task.max_new_tokens
            data, extra = args.heldout_data, {}
        self.k, self.temperature = args.heldout_k, args.heldout_temperature
        self.settings = {
            "task": self.task.name,
            "data": data,
            "n": len(self.rows),
            "max_new_tokens": self.max_new_tokens,
            "eval_steps": self.eval_steps,
            **({"k": self.k, "temperature": self.temperature} if self.k > 1 else {}),
            **extra,
        }

    def _records(self, model, k: int = 1, temperature: float = 0.0) -> list[dict]:
        if self.own is None:
            return score_rows(
                model, self.tokenizer, self.task.name, self.rows, k, temperature, max_new_tokens=self.max_new_tokens
            )
        prompts = [self.task.messages(row) for row in self.rows]
        samples = generate(
            model,
            self.tokenizer,
            prompts,
            max_new_tokens=self.max_new_tokens,
            temperature=temperature,
            num_return_sequences=k,
        )
        return score_samples(self.task, self.rows, samples)[1]

    def _sampled(self, model, step: int) -> list[dict]:
        """k samples per problem, drawn from a random state of their own (seeded by the step): training's random
        numbers are the same with held-out sampling on or off, and each evaluation's draws are reproducible."""
        devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(step)
            return self._records(model, self.k, self.temperature)

    def evaluate(self, model, step: int) -> dict:
        with self.phases.timed("heldout"):
            return self._evaluate(policy_of(model), step)

    def _evaluate(self, model, step: int) -> dict:
        began = time.monotonic()
        records = self._records(model)
        prompts = [self.task.messages(row) for row in self.rows]
        with inference(model):
            moved = drift(model, self.tokenizer, prompts, [r["completion"] for r in records], self.max_new_tokens)
        row = {
            "step": step,
            "heldout/accuracy": sum(r["score"] for r in records) / len(records),
            "heldout/n": len(records),
            **{f"heldout/{key}": value for key, value in moved.items()},
        }
        sampled = self._sampled(model, step) if self.k > 1 else None
        if sampled:
            row["heldout/pass@1"] = sum(r["score"] for r in sampled) / len(sampled)  # unbiased: k samples per problem
        row["heldout/seconds"] = round(time.monotonic() - began, 2)
        folder = self.out / "heldout"
        with writing("held-out records", folder):
            folder.mkdir(parents=True, exist_ok=True)
        write_text_whole(folder / "settings.json", json.dumps(self.settings, indent=2) + "\n")
        if self.own is not None and not (folder / "problems.jsonl").is_file():
            write_text_whole(
                folder / "problems.jsonl", "".join(json.dumps(row, default=str) + "\n" for row in self.rows)
            )
        write_text_whole(
            folder / f"step-{step}.jsonl",
            "".join(json.dumps({k: r.get(k) for k in RECORD_KEYS}) + "\n" for r in records),
        )
        if sampled:
            write_text_whole(
                folder / f"step-{step}-sampled.jsonl",
                "".join(json.dumps({k: r.get(k) for k in ("sample", *RECORD_KEYS)}) + "\n" for r in sampled),
            )
        with writing("metrics.jsonl", self.out), open(self.out / "metrics.jsonl", "a") as fh:
            fh.write(json.dumps(row) + "\n")
        self.done.add(step)
        self.last_seconds = row["heldout/seconds"]
        return row

    def _maybe(self, state, model):
        if state.is_world_process_zero and state.global_step not in self.done and model is not None:
            self.evaluate(model, state.global_step)

    def planned(self, start: int, max_steps: int) -> list[int]:
        """The steps after `start` at which this run will evaluate: every `eval_steps`, and the end."""
        every = range(start + 1, max_steps + 1) if self.eval_steps else ()
        return sorted({s for s in every if s % self.eval_steps == 0} | {max_steps} - {start})

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        if state.global_step == 0 and not (self.out / "heldout" / "step-0.jsonl").is_file():
            self._maybe(state, model)
            if state.is_world_process_zero and 0 in self.done:
                print(cost_line(self.settings["n"], self.last_seconds, self.planned(0, state.max_steps)), flush=True)

    def on_step_end(self, args, state, control, model=None, **kwargs):
        if self.eval_steps and state.global_step % self.eval_steps == 0:
            self._maybe(state, model)

    def on_train_end(self, args, state, control, model=None, **kwargs):
        self._maybe(state, model)


def heldout_callbacks(run: RunFolder, args: HeldoutArguments, tokenizer, own: OwnHeldout | None = None) -> list:
    """[HeldoutEval] when a held-out task is set (or the run's own, `own`) and the run is one process (under several,
    generation would need every rank: `make audit` measures such a run afterwards)."""
    if own is None:
        refuse_own_heldout(args, "this method")
    if (not args.heldout_task and own is None) or args.heldout_limit <= 0:
        return []
    from accelerate import PartialState

    num_processes = PartialState().num_processes
    if num_processes > 1:
        print(
            f"notice: held-out evaluation runs in one process only; this run has {num_processes}, so it is skipped "
            "(make eval on the adapter measures it afterwards)"
        )
        return []
    return [HeldoutEval(str(run.path), args, tokenizer, own, run.phases)]
