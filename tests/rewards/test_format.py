import pickle

import pytest

from rewards.format import CosineLength, LengthReward, ReasoningSteps, RepetitionPenalty, format_reward


def test_format_tolerates_whitespace_and_rejects_everything_else():
    good = ["<think>a</think><answer>1</answer>", "  <think>\na\n</think>\n\n<answer> 1 </answer>\n"]
    bad = [
        "<answer>1</answer>",
        "<think>a</think>",
        "x<think>a</think><answer>1</answer>",
        "<think>a</think><answer>1</answer> trailing",
        "",
        "<think>a<answer>1</answer>",
        "<think>a<think>b</think>c</think><answer>1</answer>",  # nested
        "<think>a</think>so<think>b</think><answer>1</answer>",  # two think blocks, text between
        "<think>a</think><think>b</think><answer>1</answer>",
        "<think>a</think><answer>1</answer><answer>2</answer>",  # two answers
        "<think>a</think><answer>1<answer>2</answer></answer>",
        "<think>a <answer>2</answer></think><answer>1</answer>",  # an answer hidden in the thinking
    ]
    assert format_reward(good + bad) == [1.0] * len(good) + [0.0] * len(bad)
    assert format_reward([[{"role": "assistant", "content": good[1]}]]) == [1.0]


def test_reasoning_steps_is_configurable():
    text = "First, add. Next, carry. Finally, write."
    assert ReasoningSteps(min_steps=3)([text]) == [1.0]
    assert ReasoningSteps(min_steps=6)([text]) == [0.5]
    with pytest.raises(ValueError, match="min_steps"):
        ReasoningSteps(min_steps=0)


def test_cosine_length_orders_by_length_and_correctness():
    reward = CosineLength(max_len=50)
    short_right, long_right, short_wrong, long_wrong = reward(
        ["#### 4", "x" * 40 + "\n#### 4", "#### 5", "x" * 40 + "\n#### 5"], answer=["4"] * 4
    )
    assert short_right > long_right > long_wrong > short_wrong
    assert reward(["#### 4"], answer=["not given"]) == [None]


def test_length_reward_never_rewards_wrong_brevity():
    scores = LengthReward()(
        ["#### 4", "some words then #### 4", "#### 5", "some long words then #### 5"], answer=["4"] * 4
    )
    assert scores[0] == 0.5 and scores[2] <= 0.0 and scores[1] < scores[0] and scores[3] <= 0.0


def test_repetition_penalty():
    assert RepetitionPenalty(ngram_size=1, max_penalty=-0.5)(["a a a a", "a b c d"]) == [-0.375, 0.0]
    with pytest.raises(ValueError, match="max_penalty"):
        RepetitionPenalty(max_penalty=0.5)


@pytest.mark.parametrize("reward", [ReasoningSteps(4), CosineLength(max_len=9), LengthReward(), RepetitionPenalty(2)])
def test_parameterised_rewards_pickle_with_their_settings(reward):
    clone = pickle.loads(pickle.dumps(reward))
    assert vars(clone) == vars(reward) and clone.__name__ == reward.__name__
