import pytest

from core.report.stats import paired_difference


def test_paired_difference_by_hand():
    # diffs 0.5, 0.0, 0.25 -> mean 0.25; sample sd 0.25; stderr 0.25 / sqrt(3)
    result = paired_difference([0.0, 0.5, 0.25], [0.5, 0.5, 0.5])
    assert result["mean"] == pytest.approx(0.25)
    half = 1.96 * 0.25 / 3**0.5
    assert result["ci95"] == pytest.approx([0.25 - half, 0.25 + half])
