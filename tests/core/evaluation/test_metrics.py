import evaluate
import pytest

from core.evaluation.accuracy import METRICS


def test_pass_at_k_matches_hand_computed_values():
    metric = evaluate.load(str(METRICS / "pass_at_k"))
    # n=5, c=2: pass@1 = 2/5; pass@2 = 1 - C(3,2)/C(5,2) = 1 - 3/10; pass@3 = 1 - C(3,3)/C(5,3) = 1 - 1/10
    result = metric.compute(predictions=[2], references=[5], k=[1, 2, 3])
    assert result["pass@1"] == pytest.approx(0.4)
    assert result["pass@2"] == pytest.approx(0.7)
    assert result["pass@3"] == pytest.approx(0.9)
    # c=0 is always 0; n - c < k is always 1; the mean is over problems
    both = metric.compute(predictions=[0, 4], references=[5, 5], k=[2])
    assert both["pass@2"] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="pass@8 needs at least 8 samples"):
        metric.compute(predictions=[1], references=[4], k=[8])


def test_accuracy_with_a_wilson_interval():
    result = evaluate.load(str(METRICS / "accuracy")).compute(predictions=[1] * 37 + [0] * 63)
    assert result["accuracy"] == pytest.approx(0.37) and result["n"] == 100
    low, high = result["accuracy_ci95"]
    # by hand: centre = (0.37 + 1.96^2/200) / (1 + 1.96^2/100) = 0.37481,
    # half = 1.96 * sqrt(0.37 * 0.63 / 100 + 1.96^2 / 40000) / (1 + 1.96^2/100) = 0.09299
    assert low == pytest.approx(0.2818, abs=1e-4) and high == pytest.approx(0.4678, abs=1e-4)
