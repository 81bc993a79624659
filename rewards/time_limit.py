"""A time limit on each reward call, in the process that makes it (the trainer's, `make pairs`', `make eval`'s).

Rewards are the user's code: an endless loop or a call to a judge that never answers would otherwise hang a run for
good, with nothing saying where. In the main thread the limit is a SIGALRM timer whose handler raises inside the
reward, which also breaks a blocking system call (a socket read, a sleep); the timer re-fires every second, so a
reward that catches the interruption once is interrupted again (one that catches BaseException in a loop cannot be
stopped in-process). Elsewhere (a reward called
from a worker thread) the thread gets an asynchronous exception, which stops Python code but not a blocking call.
Code that holds the interpreter lock in C for good (no Python line runs) cannot be interrupted in-process at all;
`core.training.callbacks.StopOnSignal` ends such a run from outside.

A call that passes `NOTICE_FRACTION` of its limit prints one notice naming the reward, so a slow judge is seen
before it is stopped.
"""

import ctypes
import signal
import sys
import threading
import time
from contextlib import contextmanager

# The default limit on one reward call, in seconds. At the 7B settings a GRPO call scores a generation batch of 32
# completions (4 per micro-batch x 8 accumulation steps); the slowest shipped rewards stop each completion at 10 s
# (math_accuracy: 5 s to parse the gold + 5 s to verify; code_tests: 3 s, the sandbox's wall-clock limit), and with
# the two parallel slots of a 2-core machine a call ends within 32 x 10 / 2 = 160 s. 600 s leaves ~4x that.
REWARD_TIMEOUT_SECONDS = 600.0
NOTICE_FRACTION = 0.25
# After the limit, how often the timer fires again (a reward may catch the first interruption).
REFIRE_SECONDS = 1.0

# The reward call in progress, if any, in this process: (name, start time, completions). StopOnSignal reads it to
# say where a stuck step waits.
CURRENT: dict = {}


class Expired(BaseException):
    """Raised inside a reward that ran past its limit (or was interrupted): a BaseException, so that a reward's own
    `except Exception` does not swallow it."""


def running() -> str | None:
    """'reward NAME (running for N s on M completions)' while a reward call is in progress, else None."""
    if not CURRENT:
        return None
    return (
        f"reward {CURRENT['name']!r} (running for {time.monotonic() - CURRENT['start']:.0f} s on "
        f"{CURRENT['completions']} completion(s))"
    )


ARMED = {"on": False}
# Set once the run is being stopped from outside (a stuck step after SIGTERM), not by a reward's own limit.
INTERRUPTED = {"on": False}


def _raise_expired(signum, frame):
    if ARMED["on"]:  # a timer that fired just as its block ended raises nothing
        raise Expired()


def install_alarm_handler() -> None:
    """Makes SIGALRM raise `Expired` while armed (main thread only); done before a timer thread may arm it."""
    signal.signal(signal.SIGALRM, _raise_expired)


@contextmanager
def limited(name: str, completions: int, seconds: float | None):
    """Runs the block under a limit of `seconds` (None or <= 0: no limit, but still named in `running()`), raising
    `Expired` inside it when the limit passes. Nested blocks keep the outer block's limit."""
    if CURRENT:
        yield
        return
    CURRENT.update(name=name, start=time.monotonic(), completions=completions)
    if not seconds or seconds <= 0:
        try:
            yield
        finally:
            CURRENT.clear()
        return
    notice = threading.Timer(
        seconds * NOTICE_FRACTION,
        lambda: print(
            f"notice: reward {name!r} has run {seconds * NOTICE_FRACTION:g} s on {completions} completion(s) "
            f"(reward_timeout {seconds:g} s stops it)",
            file=sys.stderr,
            flush=True,
        ),
    )
    notice.daemon = True
    notice.start()
    in_main = threading.current_thread() is threading.main_thread()
    if in_main:
        previous = signal.signal(signal.SIGALRM, _raise_expired)
        ARMED["on"] = True
        signal.setitimer(signal.ITIMER_REAL, seconds, REFIRE_SECONDS)
    else:
        watchdog = _async_raise_after(threading.get_ident(), seconds)
    try:
        yield
    finally:
        notice.cancel()
        if in_main and not INTERRUPTED["on"]:  # an interruption from outside goes on until the run has stopped
            signal.setitimer(signal.ITIMER_REAL, 0)
            ARMED["on"] = False
            signal.signal(signal.SIGALRM, previous)
        elif not in_main:
            watchdog.cancel()
        CURRENT.clear()


def interrupt_main_thread() -> None:
    """Raises `Expired` in the main thread at once, and again every second until `stop_interrupting` (a stuck step
    after SIGTERM, `core.training.callbacks.StopOnSignal`; callable from any thread once `install_alarm_handler` ran):
    by the same SIGALRM the limit uses, so a blocking system call is broken too."""
    INTERRUPTED["on"] = ARMED["on"] = True
    signal.setitimer(signal.ITIMER_REAL, 0.001, REFIRE_SECONDS)


def stop_interrupting() -> None:
    signal.setitimer(signal.ITIMER_REAL, 0)
    ARMED["on"] = False


def _async_raise_after(thread_id: int, seconds: float) -> threading.Timer:
    def fire():
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(Expired))

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    return timer
