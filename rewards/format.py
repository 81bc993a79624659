"""Shaping rewards from the R1-style recipes: output format, visible reasoning, length and repetition.

Parameterised rewards are callable classes (they must pickle for multi-process trainers); the module-level
instances carry the defaults and `rewards.get_reward_funcs` builds new ones from YAML keyword arguments.
"""

import math
import re

from rewards.declare import prepares
from rewards.math import math_accuracy, warn_unparseable_golds
from rewards.text import completion_text

_NO_TAG = r"(?:(?!</?(?:think|answer)>).)*"  # text without a think or answer tag: one block each, none nested
_THINK_ANSWER = re.compile(rf"\s*<think>{_NO_TAG}</think>\s*<answer>{_NO_TAG}</answer>\s*", re.DOTALL)
_STEP_MARKERS = re.compile(r"\bStep \d+:|(?:^|\n)[ \t]*(?:\d+\.\s|[-*]\s)|\b(?:First|Second|Next|Then|Finally),")


def format_reward(completions, **kwargs) -> list[float]:
    """1.0 if the completion is exactly `<think>...</think><answer>...</answer>` (any whitespace between), else 0.0:
    one think block then one answer block, no tag nested in either, no text outside them.

    >>> format_reward(["<think>\\n2+2 is 4\\n</think>\\n<answer>4</answer>\\n", "4",
    ...                "<answer>4</answer><think>x</think>", "<think>a</think>so<think>b</think><answer>4</answer>"])
    [1.0, 0.0, 0.0, 0.0]
    """
    return [1.0 if _THINK_ANSWER.fullmatch(completion_text(c)) else 0.0 for c in completions]


format_reward.__name__ = "format"


class ReasoningSteps:
    """min(1, visible steps / min_steps), counting "Step n:", numbered or bulleted lines and First/Next/Finally.

    >>> ReasoningSteps(min_steps=3)(["Step 1: add. Step 2: carry.\\nStep 3: done.", "42"])
    [1.0, 0.0]
    """

    __name__ = "reasoning_steps"

    def __init__(self, min_steps: int = 3):
        if min_steps < 1:
            raise ValueError(f"reasoning_steps: min_steps must be >= 1, got {min_steps}")
        self.min_steps = min_steps

    def __call__(self, completions, **kwargs) -> list[float]:
        return [min(1.0, len(_STEP_MARKERS.findall(completion_text(c))) / self.min_steps) for c in completions]


@prepares(warn_unparseable_golds)
class CosineLength:
    """Cosine-scaled length shaping (Yeo et al., 2025): short correct answers earn most, long wrong ones lose least.

    Correctness comes from `math_accuracy`, the project's one math verifier. Length is counted in characters so that
    the reward does not depend on the tokenizer; `max_len` is in the same unit. Samples with no gold answer get None.

    >>> [round(r, 3) for r in CosineLength(max_len=100)(["#### 4", "#### 5"], answer=["4", "4"])]
    [0.996, -0.996]
    """

    __name__ = "cosine_length"

    def __init__(
        self,
        min_value_wrong=-1.0,
        max_value_wrong=-0.5,
        min_value_correct=0.5,
        max_value_correct=1.0,
        max_len: int = 1000,
    ):
        if max_len <= 0:
            raise ValueError(f"cosine_length: max_len must be > 0, got {max_len}")
        self.min_value_wrong, self.max_value_wrong = min_value_wrong, max_value_wrong
        self.min_value_correct, self.max_value_correct = min_value_correct, max_value_correct
        self.max_len = max_len

    def __call__(self, completions, answer, **kwargs) -> list[float | None]:
        rewards = []
        for completion, correct in zip(completions, math_accuracy(completions, answer), strict=True):
            if correct is None:
                rewards.append(None)
                continue
            progress = min(len(completion_text(completion)), self.max_len) / self.max_len
            cosine = math.cos(progress * math.pi)
            # Wrong answers swap ends: the longest wrong attempt is penalised least (it at least tried).
            lo, hi = (
                (self.min_value_correct, self.max_value_correct)
                if correct
                else (self.max_value_wrong, self.min_value_wrong)
            )
            rewards.append(lo + 0.5 * (hi - lo) * (1.0 + cosine))
        return rewards


@prepares(warn_unparseable_golds)
class LengthReward:
    """Kimi-1.5 group length reward: within the batch, shorter is better; wrong answers never gain from brevity.

    reward = 0.5 - (len - min_len) / (max_len - min_len) for correct answers, min(0, that) for wrong ones;
    0.0 for everyone when all completions have the same length.

    >>> LengthReward()(["#### 4", "so it is 4\\n#### 4", "#### 5"], answer=["4", "4", "4"])
    [0.5, -0.5, 0.0]
    """

    __name__ = "length"

    def __call__(self, completions, answer, **kwargs) -> list[float | None]:
        lengths = [len(completion_text(c)) for c in completions]
        shortest, longest = min(lengths), max(lengths)
        if shortest == longest:
            return [0.0] * len(completions)
        rewards = []
        for length, correct in zip(lengths, math_accuracy(completions, answer), strict=True):
            score = 0.5 - (length - shortest) / (longest - shortest)
            rewards.append(None if correct is None else score if correct else min(0.0, score))
        return rewards


class RepetitionPenalty:
    """Penalty in [max_penalty, 0] for repeated word n-grams: max_penalty * (1 - unique n-grams / all n-grams).

    >>> RepetitionPenalty(ngram_size=2, max_penalty=-1.0)(["a b a b a b", "one two three four", "hi"])
    [-0.6, 0.0, 0.0]
    """

    __name__ = "repetition_penalty"

    def __init__(self, ngram_size: int = 3, max_penalty: float = -1.0):
        if max_penalty > 0:
            raise ValueError(f"repetition_penalty: max_penalty must be <= 0, got {max_penalty}")
        if ngram_size < 1:
            raise ValueError(f"repetition_penalty: ngram_size must be >= 1, got {ngram_size}")
        self.ngram_size, self.max_penalty = ngram_size, max_penalty

    def __call__(self, completions, **kwargs) -> list[float]:
        penalties = []
        for completion in completions:
            words = completion_text(completion).lower().split()
            ngrams = [tuple(words[i : i + self.ngram_size]) for i in range(len(words) - self.ngram_size + 1)]
            if not ngrams:
                penalties.append(0.0)
                continue
            penalties.append(round(self.max_penalty * (1 - len(set(ngrams)) / len(ngrams)), 6) + 0.0)
        return penalties


reasoning_steps = ReasoningSteps()
cosine_length = CosineLength()
length_reward = LengthReward()
repetition_penalty = RepetitionPenalty()
