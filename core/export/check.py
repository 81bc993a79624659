"""Does the exported model answer as the adapter did? Greedy, on the same held-out problems, the merged model
(loaded back from its folder) against the adapter on the same-precision base: the share of problems with the same
extracted answer and the two accuracies, held to a tolerance; beside them the run's own held-out number (as trained:
4-bit when it trained in 4-bit), which differs by the base's rounding, not by the merge."""

from dataclasses import asdict, dataclass

# Merging adds B @ A into each weight; in bf16 that sum is rounded once more than the adapter's separate path, so a
# few greedy answers may flip (a near-tie between two tokens). More than that is a broken merge.
MIN_SAME_ANSWERS = 0.98
MAX_ACCURACY_GAP = 0.01


@dataclass
class ExportCheck:
    n: int
    adapter_accuracy: float  # the adapter on the base in the export's precision
    merged_accuracy: float  # the exported folder, loaded back
    same_answers: float  # share of problems whose extracted answers are equal
    same_completions: float  # share whose whole completions are equal
    trained_accuracy: float | None  # the run's own last held-out evaluation, when it scored the same problems
    trained_precision: str
    precision: str

    @property
    def passed(self) -> bool:
        gap = abs(self.merged_accuracy - self.adapter_accuracy)
        return self.same_answers >= MIN_SAME_ANSWERS and gap <= MAX_ACCURACY_GAP + 1e-9

    def record(self) -> dict:
        tolerance = {"min_same_answers": MIN_SAME_ANSWERS, "max_accuracy_gap": MAX_ACCURACY_GAP}
        return asdict(self) | {"passed": self.passed, "tolerance": tolerance}

    def describe(self) -> str:
        """
        >>> line = ExportCheck(50, 0.5, 0.52, 0.96, 0.9, 0.48, "4-bit NF4", "float32").describe()
        >>> line.split(": ", 1)[1]  # doctest: +ELLIPSIS
        'merged (float32) 52.0%, adapter on the same base 50.0%: same answer on 96.0% (needs >= 98%)...FAILED...'
        """
        gap = abs(self.merged_accuracy - self.adapter_accuracy) * 100
        trained = (
            f"as trained ({self.trained_precision}): {self.trained_accuracy:.1%}"
            if self.trained_accuracy is not None
            else "the run has no held-out record of these problems to compare with"
        )
        return (
            f"check on {self.n} held-out problems, greedy: merged ({self.precision}) {self.merged_accuracy:.1%}, "
            f"adapter on the same base {self.adapter_accuracy:.1%}: same answer on "
            f"{self.same_answers:.1%} (needs >= {MIN_SAME_ANSWERS:.0%}), accuracy {gap:.1f} points apart "
            f"(needs <= {MAX_ACCURACY_GAP * 100:g}): "
            f"{'passed' if self.passed else 'FAILED'}; {trained}"
        )


def compare(
    adapter: list[dict],
    merged: list[dict],
    trained: list[dict] | None,
    trained_precision: str,
    precision: str,
) -> ExportCheck:
    """The check from per-problem greedy records (index, score, extracted, completion) of the adapter, the merged
    model and the run's own last held-out evaluation (None: it has none of these problems).

    >>> a = [{"index": i, "score": 1.0, "extracted": "3", "completion": "3"} for i in range(4)]
    >>> m = a[:3] + [{"index": 3, "score": 0.0, "extracted": "4", "completion": "4"}]
    >>> check = compare(a, m, None, "fp32", "float32")
    >>> check.same_answers, check.merged_accuracy, check.passed
    (0.75, 0.75, False)
    """
    if [r["index"] for r in adapter] != [r["index"] for r in merged]:
        raise ValueError("the adapter's and the merged model's records are not of the same problems")
    n = len(adapter)
    pairs = list(zip(adapter, merged, strict=True))

    def accuracy(records):
        return sum(r["score"] for r in records) / len(records)

    return ExportCheck(
        n=n,
        adapter_accuracy=accuracy(adapter),
        merged_accuracy=accuracy(merged),
        same_answers=sum(a.get("extracted") == m.get("extracted") for a, m in pairs) / n,
        same_completions=sum(a["completion"] == m["completion"] for a, m in pairs) / n,
        trained_accuracy=accuracy(trained) if trained else None,
        trained_precision=trained_precision,
        precision=precision,
    )
