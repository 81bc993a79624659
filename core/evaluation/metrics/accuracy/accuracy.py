"""Accuracy of 0/1 scores with a Wilson 95% interval, as an `evaluate` module loaded by path
(`evaluate.load("core/evaluation/metrics/accuracy")`): the built-in "accuracy" needs the hub."""

import math

import datasets
import evaluate

_DESCRIPTION = """Fraction of correct samples. The 95% interval is Wilson's score interval, which stays inside
[0, 1] and is honest for small n and accuracies near 0 or 1."""

_KWARGS = """
Args:
    predictions: per-sample scores in [0, 1] (1 = correct).
Returns:
    {"accuracy": value, "accuracy_ci95": [low, high], "n": count}
Examples:
    >>> import evaluate
    >>> evaluate.load("core/evaluation/metrics/accuracy").compute(predictions=[1, 0, 1, 1])["accuracy"]
    0.75
"""


def wilson_interval(successes: float, n: int, z: float = 1.96) -> list[float]:
    if n == 0:
        return [0.0, 1.0]
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [max(0.0, centre - half), min(1.0, centre + half)]


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS)
class Accuracy(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="Wilson, 1927",
            inputs_description=_KWARGS,
            features=datasets.Features({"predictions": datasets.Value("float64")}),
        )

    def _compute(self, predictions):
        n = len(predictions)
        correct = float(sum(predictions))
        return {"accuracy": correct / n if n else 0.0, "accuracy_ci95": wilson_interval(correct, n), "n": n}
