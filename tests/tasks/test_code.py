from rewards.code import code_format, code_tests
from tasks.code import FAMILIES, all_pairs, generate, slipped_code


def test_generator_is_deterministic_for_a_seed():
    assert generate(200, 20, 20, seed=3, slip_rate=0.5) == generate(200, 20, 20, seed=3, slip_rate=0.5)
    assert generate(200, 20, 20, seed=3) != generate(200, 20, 20, seed=4)


def test_splits_share_no_family_and_constants():
    train, validation, test = generate(2000, 200, 200, seed=0)
    keys = [{(r["family"], tuple(r["constants"])) for r in rows} for rows in (train, validation, test)]
    assert not keys[0] & keys[1] and not keys[0] & keys[2] and not keys[1] & keys[2]
    assert {r["family"] for r in test} == set(FAMILIES) == {r["family"] for r in train}
    assert len(all_pairs()) > 300


def test_rows_are_mbpp_format_and_tests_hide_their_inputs():
    train, _, _ = generate(100, 0, 0, seed=1)
    for row in train:
        assert {"task_id", "text", "code", "test_list", "test_setup_code"} <= row.keys()
        assert len(row["test_list"]) == 3 and all(t.startswith("assert f(") for t in row["test_list"])


def test_reference_solutions_pass_and_slipped_ones_fail_in_the_sandbox():
    train, validation, test = generate(150, 50, 50, seed=2, slip_rate=0.5)
    rows = train + validation + test
    assert code_tests(
        [r["code"] for r in rows],
        test_list=[r["test_list"] for r in rows],
        test_setup_code=[r["test_setup_code"] for r in rows],
    ) == [1.0] * len(rows)
    slipped = [slipped_code(r["family"], tuple(r["constants"])) for r in rows]
    scores = code_tests(slipped, test_list=[r["test_list"] for r in rows])
    assert all(s < 1.0 for s in scores), [r["text"] for r, s in zip(rows, scores, strict=True) if s == 1.0]


def test_the_teacher_slips_at_its_rate_and_writes_one_fenced_block():
    train, _, _ = generate(2000, 0, 0, seed=0, slip_rate=0.5)
    share = sum(r["slipped"] for r in train) / len(train)
    assert 0.45 < share < 0.55
    assert code_format([r["demonstration"] for r in train[:200]]) == [1.0] * 200
    slipped = [r for r in train[:200] if r["slipped"]]
    assert slipped and all(
        score < 1.0
        for score in code_tests([r["demonstration"] for r in slipped], tests=[r["test_list"] for r in slipped])
    )
