"""The room's contract with TRL: every overridden library method has the shape it had when its override was written,
and the PPO loop's source is the one it was forked from; a changed shape or source is named, one line each."""

from core.trl_internals import contract
from tests.conftest import REPO_ROOT


def test_the_installed_trl_is_what_the_overrides_were_written_against():
    assert contract.changed() == []


def test_every_override_of_a_library_method_is_recorded():
    # the overrides found on the recipe trainers are exactly SHAPES' keys: an override added without reading the
    # method it replaces fails here
    assert set(contract.overrides()) == set(contract.SHAPES)
    assert ("trl.trainer.grpo_trainer.GRPOTrainer", "_get_per_token_logps_and_entropies") in contract.SHAPES
    assert ("trl.experimental.ppo.ppo_trainer.PPOTrainer", "train") in contract.SHAPES


def test_a_changed_shape_or_source_is_named(monkeypatch):
    key = ("trl.trainer.dpo_trainer.DPOTrainer", "_compute_loss")
    monkeypatch.setitem(contract.SHAPES, key, "(self, model, inputs)")
    forked = next(iter(contract.FORKED))
    monkeypatch.setitem(contract.FORKED, forked, "0" * 64)
    monkeypatch.delitem(contract.SHAPES, ("trl.trainer.grpo_trainer.GRPOTrainer", "_save_checkpoint"))
    lines = contract.changed()
    assert (
        "trl.trainer.dpo_trainer.DPOTrainer._compute_loss: (self, model, inputs) when written, "
        "(self, model, inputs, return_outputs) installed: read the override again"
    ) in lines
    assert any(
        line.startswith("trl.experimental.ppo.ppo_trainer.PPOTrainer.train: its source changed") for line in lines
    )
    assert any("GRPOTrainer._save_checkpoint: overridden, and not recorded" in line for line in lines)
    assert len(lines) == 3


def test_the_pinned_trl_is_the_version_written_against():
    import transformers
    import trl

    pinned = (REPO_ROOT / "requirements.txt").read_text()
    for library in (trl, transformers):
        version = contract.WRITTEN_AGAINST[library.__name__]
        assert library.__version__ == version and f"{library.__name__}=={version}\n" in pinned
