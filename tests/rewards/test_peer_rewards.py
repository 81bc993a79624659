"""The peers' reward tests as a regression suite (tests/rewards/peer_cases.py): every case with a counterpart here
gives what open-r1's or TRL's test asserts, except the differences by design, which must really differ and give
what ours documents."""

import pytest

from rewards import call_reward, get_reward_func
from tests.conftest import REPO_ROOT
from tests.rewards.peer_cases import CASES, NO_COUNTERPART, OPEN_R1, TRL


def ours(case) -> list | type:
    try:
        func = get_reward_func(case.reward, case.kwargs)
    except ValueError:
        return ValueError
    return call_reward(func, case.completions, **({"answer": case.answer} if case.answer else {}))


def same(got, expected) -> bool:
    if got is ValueError or expected is ValueError:
        return got is expected
    return len(got) == len(expected) and all(
        a is b if a is None or b is None else a == pytest.approx(b, abs=1e-3)
        for a, b in zip(got, expected, strict=True)
    )


@pytest.mark.parametrize("case", CASES, ids=[f"{i}: {case.peer}" for i, case in enumerate(CASES)])
def test_each_peer_case_agrees_or_differs_as_documented(case):
    got = ours(case)
    if case.differs is None:
        assert same(got, case.theirs), f"{case.peer}: ours {got}, theirs {case.theirs}"
    else:
        assert not same(got, case.theirs), f"{case.peer} is listed as differing, but ours agrees: {got}"
        assert same(got, case.ours), f"{case.peer}: ours {got}, documented {case.ours}"


def test_the_suite_covers_both_peers_and_names_every_difference():
    by_peer = {peer: [c for c in CASES if c.peer.startswith(peer + " ")] for peer in (OPEN_R1, TRL)}
    assert all(len(cases) >= 20 for cases in by_peer.values()), {p: len(c) for p, c in by_peer.items()}
    assert len(by_peer[OPEN_R1]) + len(by_peer[TRL]) == len(CASES)
    differing = [c for c in CASES if c.differs]
    assert 0 < len(differing) < len(CASES) // 5  # mostly agreement; each difference is a sentence, not a shrug
    assert all(len(c.differs) > 60 and c.ours is not None for c in differing)
    assert all(len(why) > 30 for why in NO_COUNTERPART.values())


def test_docs_give_the_suite_s_counts():
    docs = " ".join((REPO_ROOT / "docs" / "rewards.md").read_text().split())
    peers = {peer: sum(c.peer.startswith(peer + " ") for c in CASES) for peer in (OPEN_R1, TRL)}
    differing = sum(1 for c in CASES if c.differs)
    assert (
        f"{len(CASES)} cases with a counterpart: {peers[OPEN_R1]} open-r1, {peers[TRL]} TRL). "
        f"{len(CASES) - differing} give what the peer's test asserts; {differing} differ by design" in docs
    )
