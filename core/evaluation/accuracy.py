"""A model's accuracy on a task's rows, as `make eval`, the studies and the tiny worlds' build measure it: the model
(and adapter) loaded for evaluation, its completions scored with the training verifiers
(`core.evaluation.scoring.score_rows`), accuracy with its Wilson interval or pass@1..k (the metric scripts in
`metrics/`, loaded by path: `evaluate.load` of a built-in metric needs the hub)."""

from pathlib import Path

from trl import ModelConfig

from core.evaluation.scoring import score_rows
from core.inputs.models import load_model, load_tokenizer, on_device

METRICS = Path(__file__).parent / "metrics"


def load_for_eval(model_path: str, adapter: str | None, load_in_4bit: bool):
    model_args = ModelConfig(
        model_name_or_path=model_path, load_in_4bit=load_in_4bit, use_bnb_nested_quant=load_in_4bit, dtype="auto"
    )
    model = on_device(load_model(model_args))
    tokenizer = load_tokenizer(ModelConfig(model_name_or_path=adapter or model_path))
    if adapter:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, adapter)
    return model, tokenizer


def correct_per_problem(records: list[dict], k: int) -> list[float]:
    """Sum of scores of each problem's k consecutive samples (records as `evaluate_model` returns them).

    >>> correct_per_problem([{"score": 1.0}, {"score": 0.0}, {"score": 1.0}, {"score": 1.0}], k=2)
    [1.0, 2.0]
    """
    return [sum(r["score"] for r in records[i : i + k]) for i in range(0, len(records), k)]


def evaluate_model(
    model,
    tokenizer,
    task_name: str,
    rows: list[dict],
    k: int = 1,
    temperature: float = 0.0,
    max_new_tokens: int | None = None,
    batch_size: int = 64,
    samples: list[list[str]] | None = None,
):
    """(summary metrics, per-sample records). Used by `make eval`, the studies and the tiny world's build; the
    records come from `core.evaluation.scoring.score_rows`, as held-out accuracy during training does.
    `samples` (k completions per row) skips generation, e.g. when vLLM generated them."""
    records = score_rows(model, tokenizer, task_name, rows, k, temperature, max_new_tokens, batch_size, samples)
    return accuracy_metrics(records, k, len(rows)), records


def accuracy_metrics(records: list[dict], k: int, n: int) -> dict:
    """Accuracy with its Wilson interval (k=1), or pass@1..k with intervals (k>1), of records' 0/1 `score`s."""
    import evaluate

    if k == 1:
        return evaluate.load(str(METRICS / "accuracy")).compute(predictions=[r["score"] for r in records])
    correct = correct_per_problem(records, k)
    ks = [kk for kk in (1, 2, 4, 8, 16, 32, 64, 128) if kk <= k]
    metrics = evaluate.load(str(METRICS / "pass_at_k")).compute(
        predictions=[int(c) for c in correct], references=[k] * n, k=ks
    )
    return metrics | {"n": n}
