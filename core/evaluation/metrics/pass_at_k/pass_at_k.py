"""pass@k with the unbiased estimator of Chen et al. (2021), as an `evaluate` module loaded by path
(`evaluate.load("core/evaluation/metrics/pass_at_k")`): built-in metrics need the hub, this one does not."""

import math

import datasets
import evaluate

_DESCRIPTION = """For each problem, n samples were drawn and c of them are correct. pass@k = mean over problems of
1 - C(n - c, k) / C(n, k), the probability that at least one of k samples drawn without replacement is correct.
The 95% interval is mean +/- 1.96 standard errors of the per-problem estimates."""

_KWARGS = """
Args:
    predictions: number of correct samples c per problem.
    references: number of samples n per problem.
    k: list of k values (each <= n).
Returns:
    {"pass@k": value, "pass@k_ci95": [low, high]} for every k.
Examples:
    >>> import evaluate
    >>> metric = evaluate.load("core/evaluation/metrics/pass_at_k")
    >>> metric.compute(predictions=[1, 0], references=[4, 4], k=[1])["pass@1"]
    0.125
"""


def pass_at_k(n: int, c: int, k: int) -> float:
    """1 - C(n-c, k) / C(n, k), computed as a stable product."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples per problem, got n={n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS)
class PassAtK(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="Chen et al., Evaluating Large Language Models Trained on Code, 2021",
            inputs_description=_KWARGS,
            features=datasets.Features(
                {"predictions": datasets.Value("int64"), "references": datasets.Value("int64")}
            ),
        )

    def _compute(self, predictions, references, k=(1,)):
        results = {}
        for kk in k:
            values = [pass_at_k(n, c, kk) for c, n in zip(predictions, references, strict=True)]
            mean = sum(values) / len(values)
            stderr = (sum((v - mean) ** 2 for v in values) / max(1, len(values) - 1) / len(values)) ** 0.5
            results[f"pass@{kk}"] = mean
            results[f"pass@{kk}_ci95"] = [max(0.0, mean - 1.96 * stderr), min(1.0, mean + 1.96 * stderr)]
        return results
