"""rewards.time_limit through rewards.call_reward: a reward that never returns is stopped at its limit, in one line
naming it and where it was, even one that catches the first interruption or waits in a system call."""

import socket
import threading
import time

import pytest

from rewards import RewardError, RewardTimeout, call_reward


def endless_loop(completions, **kwargs):
    x = 0
    while True:
        try:
            x += 1
        except Exception:  # a reward's own broad except does not swallow the limit
            pass


def stalled_judge(completions, **kwargs):
    """A judge that never answers: a socket read with no timeout."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    client = socket.create_connection(server.getsockname())
    client.recv(1)


def catches_once(completions, **kwargs):
    try:
        while True:
            time.sleep(0.05)
    except BaseException:
        while True:
            time.sleep(0.05)


@pytest.mark.parametrize(
    ("reward", "line"),
    [(endless_loop, "in endless_loop: "), (stalled_judge, "client.recv(1)"), (catches_once, "time.sleep(0.05)")],
)
def test_a_reward_that_never_returns_is_stopped_at_its_limit(reward, line, capsys):
    start = time.monotonic()
    with pytest.raises(RewardTimeout) as stopped:
        call_reward(reward, ["a", "b"], timeout=1.0)
    assert 1.0 <= time.monotonic() - start < 4
    message = str(stopped.value)
    assert message.startswith(f"reward {reward.__name__!r} ran ") and "on 2 completion(s) without returning" in message
    assert "past reward_timeout 1 s (stopped at test_time_limit.py:" in message and line in message
    assert f"notice: reward {reward.__name__!r} has run 0.25 s on 2 completion(s)" in capsys.readouterr().err


def test_a_reward_in_a_worker_thread_is_stopped_too():
    caught = []

    def call():
        try:
            call_reward(endless_loop, ["a"], timeout=0.5)
        except RewardError as error:
            caught.append(error)

    worker = threading.Thread(target=call)
    worker.start()
    worker.join(10)
    assert not worker.is_alive() and isinstance(caught[0], RewardTimeout)


def test_a_fast_reward_is_untouched_and_leaves_no_timer_behind():
    import signal

    assert call_reward(lambda completions, **kw: [1.0] * len(completions), ["a", "b"], timeout=5) == [1.0, 1.0]
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    time.sleep(0.01)


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_a_non_finite_score_names_the_reward_the_row_and_the_value(value):
    with pytest.raises(RewardError, match=rf"reward 'r' returned {value} on row b: a reward must be a finite"):

        def r(completions, **kwargs):
            return [0.5, value]

        call_reward(r, ["x", "y"], row_labels=["a", "b"])
