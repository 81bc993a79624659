"""Held-out accuracy and drift while a model trains, through the generation and scoring of `make eval`
(`eval/run.py` calls `score_rows` too): `HeldoutEval` scores the model (adapter on) on held-out problems that are
never trained on, at the start (step 0: the start model), every `heldout_eval_steps` and at the end, and measures on
the same completions how far the policy drifted from where it started: mean per-token KL from the start model
(adapter off vs on, on the same tokens), mean token entropy, completion length and the share cut at the budget.
Rows `heldout/...` go to metrics.jsonl, each evaluation's per-problem records to heldout/step-<N>.jsonl."""

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from transformers import TrainerCallback

from core.generation import generate, inference
from core.storage import write_text_whole, writing
from core.tasks import TASKS, load_task_data, score
from core.timing import timed


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

    def __post_init__(self):
        if self.heldout_task is not None and self.heldout_task not in TASKS:
            raise ValueError(f"heldout_task {self.heldout_task!r} is not a task; the tasks: {', '.join(TASKS)}")
        if self.heldout_eval_steps < 0:
            raise ValueError(f"heldout_eval_steps {self.heldout_eval_steps} must be >= 0 (0: start and end only)")


def score_rows(
    model,
    tokenizer,
    task_name: str,
    rows: list[dict],
    k: int = 1,
    temperature: float = 0.0,
    max_new_tokens: int | None = None,
    batch_size: int = 64,
    samples: list[list[str]] | None = None,
) -> list[dict]:
    """Per-sample records (index, sample, prompt, completion, extracted, gold, score, reason) of k completions per
    row, scored with the training verifiers. `samples` (k completions per row) skips generation."""
    task = TASKS[task_name]
    if k > 1 and temperature <= 0:
        raise ValueError(f"k={k} samples need a temperature > 0")
    prompts = [task.messages(row) for row in rows]
    if samples is None:
        samples = generate(
            model,
            tokenizer,
            prompts,
            max_new_tokens=max_new_tokens or task.max_new_tokens,
            batch_size=batch_size,
            temperature=temperature,
            num_return_sequences=k,
        )
    flat_rows = [row for row in rows for _ in range(k)]
    completions = [c for group in samples for c in group]
    verdicts = score(task, flat_rows, completions)
    return [
        {
            "index": i // k,
            "sample": i % k,
            "prompt": prompts[i // k][-1]["content"],
            "completion": completion,
            "extracted": extracted,
            "gold": flat_rows[i].get(task.gold) if task.kind == "math" else None,
            "score": s,
            "reason": reason,
        }
        for i, (completion, (s, extracted, reason)) in enumerate(zip(completions, verdicts, strict=True))
    ]


# Logit elements one drift batch may hold (x 4 bytes, a few copies): ~0.5 GB at a 7B model's 152k vocabulary.
DRIFT_LOGITS_BUDGET = 2**27


def _log_probs(model, ids, mask, positions) -> torch.Tensor:
    logits = model(input_ids=ids, attention_mask=mask).logits
    return torch.log_softmax(logits[positions].float(), dim=-1)


@torch.no_grad()
def drift(model, tokenizer, prompts: list[list[dict]], completions: list[str], max_new_tokens: int) -> dict:
    """On the given completions: mean per-token KL(policy || start) over the vocabulary, the policy's mean token
    entropy (nats), mean length in tokens and the share that reached `max_new_tokens`. The start model is the
    policy with its adapter off (`disable_adapter`); a model without one has drifted nowhere (KL 0)."""
    device = next(model.parameters()).device
    sequences = []
    for prompt, completion in zip(prompts, completions, strict=True):
        prompt_ids = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True)
        if not isinstance(prompt_ids, list):
            prompt_ids = prompt_ids["input_ids"]
        sequences.append((list(prompt_ids), tokenizer(completion, add_special_tokens=False)["input_ids"]))
    lengths = [len(c) for _, c in sequences]
    longest = max((len(p) + len(c) for p, c in sequences), default=1)
    batch = max(1, min(64, DRIFT_LOGITS_BUDGET // (longest * model.config.vocab_size)))
    kl_sum = entropy_sum = tokens = 0.0
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    for start in range(0, len(sequences), batch):
        chunk = [(p, c) for p, c in sequences[start : start + batch] if c]
        if not chunk:
            continue
        width = max(len(p) + len(c) for p, c in chunk)
        ids = torch.full((len(chunk), width), pad, dtype=torch.long)
        mask = torch.zeros_like(ids)
        positions = torch.zeros_like(ids, dtype=torch.bool)  # the logits that predict a completion token
        for row, (p, c) in enumerate(chunk):
            ids[row, : len(p) + len(c)] = torch.tensor(p + c)
            mask[row, : len(p) + len(c)] = 1
            positions[row, len(p) - 1 : len(p) + len(c) - 1] = True
        ids, mask, positions = ids.to(device), mask.to(device), positions.to(device)
        policy = _log_probs(model, ids, mask, positions)
        if hasattr(model, "disable_adapter"):
            with model.disable_adapter():
                reference = _log_probs(model, ids, mask, positions)
        else:
            reference = policy
        p = policy.exp()
        kl_sum += (p * (policy - reference)).sum().item()
        entropy_sum -= (p * policy).sum().item()
        tokens += policy.shape[0]
    n = max(len(completions), 1)
    return {
        "kl": kl_sum / tokens if tokens else 0.0,
        "entropy": entropy_sum / tokens if tokens else 0.0,
        "length": sum(lengths) / n,
        "clipped": sum(length >= max_new_tokens for length in lengths) / n,
    }


def policy_of(model):
    """The model that generates: PPO's trainer holds a policy-and-value wrapper."""
    return getattr(model, "policy", model)


class HeldoutEval(TrainerCallback):
    """Greedy held-out accuracy and drift at step 0, every `eval_steps` and at the end (rank 0 of one process)."""

    def __init__(self, output_dir: str, args: HeldoutArguments, tokenizer):
        task = TASKS[args.heldout_task]
        self.task, self.tokenizer, self.out = task, tokenizer, Path(output_dir)
        self.rows = load_task_data(task, args.heldout_data, args.heldout_limit)
        self.max_new_tokens = args.heldout_max_new_tokens or task.max_new_tokens
        self.eval_steps, self.done = args.heldout_eval_steps, set()
        self.settings = {
            "task": task.name,
            "data": args.heldout_data,
            "n": len(self.rows),
            "max_new_tokens": self.max_new_tokens,
            "eval_steps": self.eval_steps,
        }

    def evaluate(self, model, step: int) -> dict:
        with timed("heldout"):
            return self._evaluate(policy_of(model), step)

    def _evaluate(self, model, step: int) -> dict:
        began = time.monotonic()
        records = score_rows(model, self.tokenizer, self.task.name, self.rows, max_new_tokens=self.max_new_tokens)
        prompts = [self.task.messages(row) for row in self.rows]
        with inference(model):
            moved = drift(model, self.tokenizer, prompts, [r["completion"] for r in records], self.max_new_tokens)
        row = {
            "step": step,
            "heldout/accuracy": sum(r["score"] for r in records) / len(records),
            "heldout/n": len(records),
            **{f"heldout/{key}": value for key, value in moved.items()},
            "heldout/seconds": round(time.monotonic() - began, 2),
        }
        folder = self.out / "heldout"
        with writing("held-out records", folder):
            folder.mkdir(parents=True, exist_ok=True)
        write_text_whole(folder / "settings.json", json.dumps(self.settings, indent=2) + "\n")
        write_text_whole(
            folder / f"step-{step}.jsonl",
            "".join(
                json.dumps({k: r[k] for k in ("index", "score", "extracted", "completion")}) + "\n" for r in records
            ),
        )
        with writing("metrics.jsonl", self.out), open(self.out / "metrics.jsonl", "a") as fh:
            fh.write(json.dumps(row) + "\n")
        self.done.add(step)
        return row

    def _maybe(self, state, model):
        if state.is_world_process_zero and state.global_step not in self.done and model is not None:
            self.evaluate(model, state.global_step)

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        if state.global_step == 0 and not (self.out / "heldout" / "step-0.jsonl").is_file():
            self._maybe(state, model)

    def on_step_end(self, args, state, control, model=None, **kwargs):
        if self.eval_steps and state.global_step % self.eval_steps == 0:
            self._maybe(state, model)

    def on_train_end(self, args, state, control, model=None, **kwargs):
        self._maybe(state, model)


def heldout_callbacks(output_dir: str, args: HeldoutArguments, tokenizer) -> list:
    """[HeldoutEval] when a held-out task is set and the run is one process (under several, generation would need
    every rank: `make audit` measures such a run afterwards)."""
    if not args.heldout_task or args.heldout_limit <= 0:
        return []
    from accelerate import PartialState

    num_processes = PartialState().num_processes
    if num_processes > 1:
        print(
            f"notice: held-out evaluation runs in one process only; this run has {num_processes}, so it is skipped "
            "(make eval on the adapter measures it afterwards)"
        )
        return []
    return [HeldoutEval(output_dir, args, tokenizer)]
