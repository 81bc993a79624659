"""What this room was written against: TRL's version, the shape (parameter names, kinds and defaults) of every TRL or
transformers method a recipe trainer overrides, and the source of the PPO loop it forks. `changed()` says, one line
each, what differs in the installed libraries, so an upgrade of TRL fails one test that names the methods to read
again (tests/core/trl_internals/test_contract.py) instead of a run that trains wrongly.

Regenerate `SHAPES` with `python -m core.trl_internals.contract` after reading each changed method."""

import hashlib
import importlib
import inspect

WRITTEN_AGAINST = {"trl": "1.12.0", "transformers": "5.24.0"}

# (the library class that defines the method, the method) -> its shape when the override was written
SHAPES = {
    ("transformers.trainer.Trainer", "create_optimizer"): "(self, model=None)",
    ("transformers.trainer.Trainer", "save_model"): "(self, output_dir=None, _internal_call=False)",
    ("transformers.trainer.Trainer", "train"): (
        "(self, resume_from_checkpoint=None, trial=None, ignore_keys_for_eval=None)"
    ),
    ("transformers.trainer.Trainer", "training_step"): "(self, model, inputs, num_items_in_batch=None)",
    ("trl.experimental.orpo.orpo_trainer.ORPOTrainer", "__init__"): (
        "(self, model=None, args=None, data_collator=None, train_dataset=None, eval_dataset=None, "
        "processing_class=None, model_init=None, callbacks=None, optimizers=(None, None), "
        "preprocess_logits_for_metrics=None, peft_config=None, compute_metrics=None)"
    ),
    ("trl.experimental.orpo.orpo_trainer.ORPOTrainer", "_save_checkpoint"): "(self, model, trial)",
    ("trl.experimental.orpo.orpo_trainer.ORPOTrainer", "concatenated_forward"): "(self, model, batch)",
    ("trl.experimental.ppo.ppo_trainer.PPOTrainer", "__init__"): (
        "(self, args, processing_class, model, ref_model, reward_model, train_dataset, value_model, "
        "data_collator=None, eval_dataset=None, optimizers=(None, None), callbacks=None, peft_config=None)"
    ),
    ("trl.experimental.ppo.ppo_trainer.PPOTrainer", "_save_checkpoint"): "(self, model, trial)",
    ("trl.experimental.ppo.ppo_trainer.PPOTrainer", "save_model"): "(self, output_dir=None, _internal_call=False)",
    ("trl.experimental.ppo.ppo_trainer.PPOTrainer", "train"): "(self)",
    ("trl.trainer.dpo_trainer.DPOTrainer", "__init__"): (
        "(self, model, ref_model=None, args=None, data_collator=None, train_dataset=None, eval_dataset=None, "
        "processing_class=None, compute_metrics=None, callbacks=None, optimizers=(None, None), "
        "quantization_config=None, peft_config=None)"
    ),
    ("trl.trainer.dpo_trainer.DPOTrainer", "_compute_loss"): "(self, model, inputs, return_outputs)",
    ("trl.trainer.dpo_trainer.DPOTrainer", "_save_checkpoint"): "(self, model, trial)",
    ("trl.trainer.dpo_trainer.DPOTrainer", "compute_ref_log_probs"): "(self, model, inputs)",
    ("trl.trainer.dpo_trainer.DPOTrainer", "training_step"): "(self, *args, **kwargs)",
    ("trl.trainer.grpo_trainer.GRPOTrainer", "__init__"): (
        "(self, model, reward_funcs=None, args=None, train_dataset=None, eval_dataset=None, processing_class=None, "
        "reward_processing_classes=None, callbacks=None, optimizers=(None, None), quantization_config=None, "
        "peft_config=None, tools=None, rollout_func=None, environment_factory=None)"
    ),
    ("trl.trainer.grpo_trainer.GRPOTrainer", "_generate_and_score_completions"): "(self, inputs)",
    ("trl.trainer.grpo_trainer.GRPOTrainer", "_get_per_token_logps_and_entropies"): (
        "(self, model, input_ids, attention_mask, logits_to_keep, batch_size=None, compute_entropy=False, "
        "compute_aux_loss=False, pixel_values=None, image_grid_thw=None, num_images=None, pixel_attention_mask=None, "
        "spatial_shapes=None, num_tiles=None, image_sizes=None, token_type_ids=None, mm_token_type_ids=None, "
        "image_position_ids=None)"
    ),
    ("trl.trainer.grpo_trainer.GRPOTrainer", "_save_checkpoint"): "(self, model, trial)",
}

# core/trl_internals/ppo_loop.py is TRL's PPOTrainer.train with its log-prob calls replaced: the SHA-256 of the
# source it was forked from
FORKED = {
    (
        "trl.experimental.ppo.ppo_trainer.PPOTrainer",
        "train",
    ): "34134a152c9008448b6cfa0902cb55c5be330cc1989eb0250891e0dee93b0d74"
}


def shape(function) -> str:
    """A method's parameters as they bind: names, kinds and defaults, not annotations.

    >>> def f(self, model, *args, limit=None, **kwargs): ...
    >>> shape(f)
    '(self, model, *args, limit=None, **kwargs)'
    """
    parts = []
    for parameter in inspect.signature(function).parameters.values():
        name = {"VAR_POSITIONAL": "*", "VAR_KEYWORD": "**"}.get(parameter.kind.name, "") + parameter.name
        default = "" if parameter.default is inspect.Parameter.empty else f"={parameter.default!r}"
        parts.append(name + default)
    return f"({', '.join(parts)})"


def library_method(path: str, method: str):
    module, _, name = path.rpartition(".")
    return vars(getattr(importlib.import_module(module), name))[method]


def overrides() -> dict:
    """(library class, method) -> its installed shape, for every method a recipe trainer class (core.trl_internals.
    trainers) defines in one of the project's classes over a TRL or transformers class that defines it too (the
    nearest such class along the trainer's method order: the one the override replaces)."""
    from core.trl_internals.trainers import RECIPE_TRAINERS

    found = {}
    for trainer in RECIPE_TRAINERS.values():
        order = trainer.__mro__
        for index, own in enumerate(order):
            if not own.__module__.startswith("core."):
                continue
            for name, value in vars(own).items():
                if not callable(value) or (name.startswith("__") and name != "__init__"):
                    continue
                library = next(
                    (
                        c
                        for c in order[index + 1 :]
                        if c.__module__.startswith(("trl.", "transformers.")) and name in vars(c)
                    ),
                    None,
                )
                if library is not None:
                    found[(f"{library.__module__}.{library.__qualname__}", name)] = shape(vars(library)[name])
    return found


def source_digest(path: str, method: str) -> str:
    return hashlib.sha256(inspect.getsource(library_method(path, method)).encode()).hexdigest()


def changed() -> list[str]:
    """One line per difference between what this room was written against and the installed libraries: an override
    not in SHAPES, a recorded method whose shape changed or that is gone, a forked method whose source changed."""
    lines, found = [], overrides()
    for key, installed in sorted(found.items()):
        recorded = SHAPES.get(key)
        if recorded is None:
            lines.append(f"{key[0]}.{key[1]}: overridden, and not recorded in SHAPES (read it, then record it)")
        elif recorded != installed:
            lines.append(f"{key[0]}.{key[1]}: {recorded} when written, {installed} installed: read the override again")
    lines += [
        f"{c}.{m}: recorded, and no recipe trainer overrides it now" for c, m in sorted(set(SHAPES) - set(found))
    ]
    for (path, method), digest in FORKED.items():
        if source_digest(path, method) != digest:
            lines.append(f"{path}.{method}: its source changed since core/trl_internals/ppo_loop.py forked it")
    return lines


if __name__ == "__main__":
    for (path, method), installed in sorted(overrides().items()):
        print(f"    ({path!r}, {method!r}): {installed!r},")
    for path, method in FORKED:
        print(f"forked {path}.{method}: {source_digest(path, method)}")
