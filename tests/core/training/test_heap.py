"""The objects a run starts training with are out of the garbage collector's passes while it trains
(core.training.heap): garbage is collected first, what training makes is still collected, and the freeze ends with
training, however it ends; TRL's PPO loop, which collects twice a step, collects over the frozen start."""

import gc
import weakref

import pytest

from core.training.heap import frozen_start
from recipes import ppo
from tests.conftest import FULL_PRECISION
from tests.recipes.helpers import run_recipe


class Node:
    def __init__(self):
        self.me = self  # a reference cycle: only the collector frees it


def test_garbage_before_the_freeze_is_collected_and_cycles_made_inside_still_are():
    before = Node()
    gone_before = weakref.ref(before)
    del before
    with frozen_start():
        assert gone_before() is None  # collected, not frozen for the run's length
        alive = gc.get_freeze_count()
        inside = Node()
        gone_inside = weakref.ref(inside)
        del inside
        gc.collect()
        assert gone_inside() is None and alive > 0
    assert gc.get_freeze_count() == 0


def test_the_freeze_ends_when_training_stops_with_an_error():
    with pytest.raises(SystemExit), frozen_start():
        raise SystemExit("error: stopped")
    assert gc.get_freeze_count() == 0


@pytest.mark.slow  # a real two-step run
def test_trls_ppo_loop_collects_over_the_frozen_start(tiny_world, tmp_path, monkeypatch):
    """A real PPO run (two steps): every collection TRL's loop makes sees the start frozen, none after training."""
    frozen_at_collections = []
    collect = gc.collect

    def counting_collect(*args):
        frozen_at_collections.append(gc.get_freeze_count())
        return collect(*args)

    monkeypatch.setattr(gc, "collect", counting_collect)
    config = "recipes/configs/tiny/ppo.yaml"
    run_recipe(ppo, config, *FULL_PRECISION, "--max_steps", "2", "--output_dir", str(tmp_path / "run"))
    monkeypatch.undo()
    # frozen_start's own collection first (nothing frozen yet), then TRL's two a step over ~10^5-10^6 frozen objects
    assert frozen_at_collections[0] == 0 and len(frozen_at_collections) >= 5
    assert min(frozen_at_collections[1:]) > 100_000
    assert gc.get_freeze_count() == 0
