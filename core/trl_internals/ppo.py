"""What TRL's experimental PPOTrainer lacks for these recipes: scoring with reward functions, and resume.

TRL's PPOTrainer scores with a reward *model*; `RewardFunctionModel` is the adapter that makes reward functions look
like one. TRL's experimental PPO has no resume: `ResumablePPOTrainer` adds it (value weights in every checkpoint, a
seeded epoch sampler so the data order is reproducible, and step/optimizer/scheduler/RNG restore).
`load_value_model` builds the same-size critic.
"""

import copy
import json
from pathlib import Path

import torch
from peft import LoraConfig, get_peft_model, set_peft_model_state_dict
from safetensors.torch import load_file, save_file
from torch import nn
from torch.utils.data import DataLoader, Sampler
from transformers import AutoConfig, AutoModelForSequenceClassification, PretrainedConfig, TrainerCallback
from transformers.modeling_outputs import BaseModelOutput
from trl import ModelConfig
from trl.experimental.ppo import PPOTrainer

from core.trl_internals.ppo_loop import ChunkedPPO
from rewards import weighted_sum


class RewardFunctionModel(nn.Module):
    """Looks like the sequence-classification reward model TRL's PPO calls, but runs reward functions.

    TRL calls `getattr(model, model.base_model_prefix)(input_ids=..., attention_mask=...)`, applies `model.score`
    to the last hidden state and reads the value at each sequence's last token. The backbone here decodes each
    (prompt, response), looks the prompt up to get its dataset columns, scores the response with the weighted reward
    functions, and returns that score at every position, so whichever position TRL reads holds it.
    """

    base_model_prefix = "backbone"

    def __init__(self, tokenizer, reward_funcs, weights, prompt_columns: dict[tuple[int, ...], dict]):
        super().__init__()
        self.backbone = _RewardBackbone(tokenizer, reward_funcs, weights, prompt_columns)
        self.score = nn.Identity()
        self.config = PretrainedConfig()  # TRL's DeepSpeed wrapping reads a hidden size from it; there is none


class _RewardBackbone(nn.Module):
    def __init__(self, tokenizer, reward_funcs, weights, prompt_columns):
        super().__init__()
        self.tokenizer, self.reward_funcs, self.weights = tokenizer, reward_funcs, weights
        # TRL masks every token equal to the pad token (`query_response != pad_token_id`), inside the prompt too: where
        # the pad token is also the end of turn (SmolLM2's `<|im_end|>`), a chat prompt reaches forward() without its
        # turn ends. The lookup keys drop them the same way.
        pad = tokenizer.pad_token_id
        self.prompt_columns = {tuple(t for t in ids if t != pad): columns for ids, columns in prompt_columns.items()}
        self.prompt_lengths = sorted({len(k) for k in self.prompt_columns})
        # gives the module a device; one element, not a scalar: DeepSpeed broadcasts parameters as bytes
        self.anchor = nn.Parameter(torch.zeros(1), requires_grad=False)
        self.tokens, self.passes = None, 0

    def count_into(self, tokens, passes: int) -> None:
        """Count every response scored from here on into `tokens` (a run's `core.runs.tokens.TokenCount`): generated
        once, trained on `passes` times (PPO's epochs over a rollout)."""
        self.tokens, self.passes = tokens, passes
        self.special = set(self.tokenizer.all_special_ids)

    def split(self, tokens: list[int]) -> tuple[dict, list[int]]:
        for length in self.prompt_lengths:
            columns = self.prompt_columns.get(tuple(tokens[:length]))
            if columns is not None:
                return columns, tokens[length:]
        raise KeyError("PPO reward adapter: a query does not match any training prompt")

    def forward(self, input_ids, attention_mask, **kwargs):
        rows = [self.split(ids[mask].tolist()) for ids, mask in zip(input_ids, attention_mask.bool(), strict=True)]
        completions = [self.tokenizer.decode(response, skip_special_tokens=True) for _, response in rows]
        if self.tokens is not None:
            count = sum(token not in self.special for _, response in rows for token in response)
            self.tokens.record(generated=count, trained=count * self.passes)
        columns = {key: [r[0][key] for r in rows] for key in rows[0][0]}
        # each reward is a TimedReward under the run's own reward_timeout: no second limit around them
        total = torch.tensor(weighted_sum(self.reward_funcs, self.weights, completions, timeout=None, **columns))
        hidden = total.to(self.anchor.device, self.anchor.dtype)[:, None, None].expand(-1, input_ids.shape[1], 1)
        return BaseModelOutput(last_hidden_state=hidden, hidden_states=(hidden,))


class EpochSeededSampler(Sampler):
    """Shuffles with a generator seeded by (seed, epoch), not the global RNG, and can start mid-epoch: the data
    order of a resumed run is exactly that of an uninterrupted one."""

    def __init__(self, n: int, seed: int, batch_size: int, skip_batches: int = 0):
        self.n, self.seed = n, seed
        batches_per_epoch = n // batch_size
        self.epoch, self.offset = divmod(skip_batches, batches_per_epoch)
        self.offset *= batch_size

    def __len__(self):
        return self.n - self.offset

    def __iter__(self):
        order = torch.randperm(self.n, generator=torch.Generator().manual_seed(self.seed * 100_003 + self.epoch))
        start, self.offset = self.offset, 0
        self.epoch += 1
        return iter(order[start:].tolist())


class _RestoreProgress(TrainerCallback):
    """PPOTrainer.train() restarts its counters at 0; put them back to the checkpoint's before the first step."""

    def __init__(self, trainer, checkpoint: Path, step: int, total_batches: int):
        self.trainer, self.checkpoint, self.step, self.total_batches = trainer, checkpoint, step, total_batches

    def on_train_begin(self, args, state, control, **kwargs):
        state.global_step = self.step
        state.episode = self.step * args.batch_size
        state.max_steps = self.total_batches
        self.trainer._load_rng_state(str(self.checkpoint))


class ResumablePPOTrainer(PPOTrainer):
    VALUE_FILE = "value_model.safetensors"

    def __init__(self, *args, resume_from: str | None = None, value_learning_rate: float | None = None, **kwargs):
        self.value_learning_rate = value_learning_rate  # read by create_optimizer, which TRL's __init__ calls
        super().__init__(*args, **kwargs)
        done = 0
        if resume_from:
            done = self._load_checkpoint(Path(resume_from))
            total = self.args.num_total_batches
            self.args.num_total_batches = total - done  # train() loops this many more updates
            self.add_callback(_RestoreProgress(self, Path(resume_from), done, total))
        sampler = EpochSeededSampler(len(self.train_dataset), self.args.seed, self.local_dataloader_batch_size, done)
        # Its own generator: creating a DataLoader iterator draws a seed, which must not come from the global RNG
        # (a resumed run creates its iterator after the RNG restore, an uninterrupted one long before).
        self.dataloader = self.accelerator.prepare(
            DataLoader(
                self.train_dataset,
                batch_size=self.local_dataloader_batch_size,
                sampler=sampler,
                collate_fn=self.data_collator,
                drop_last=True,
                generator=torch.Generator().manual_seed(self.args.seed),
            )
        )

    def create_optimizer(self):
        optimizer = super().create_optimizer()
        # LoRA leaves transformers' no-weight-decay group empty; DeepSpeed drops empty groups when it wraps the
        # optimizer, after TRL's PPO has made the scheduler from it, and torch's scheduler then has one rate too many
        optimizer.param_groups[:] = [group for group in optimizer.param_groups if group["params"]]
        if self.value_learning_rate is not None:
            # TRL 1.12 trains policy and critic with one optimizer at one rate; a fresh critic head often wants its
            # own: its parameters move to groups of their own at value_learning_rate (the schedule scales both)
            critic = {id(p) for p in self.model.value_model.parameters()}
            groups = []
            for group in optimizer.param_groups:
                policy = [p for p in group["params"] if id(p) not in critic]
                value = [p for p in group["params"] if id(p) in critic]
                groups += [group | {"params": policy}] if policy else []
                groups += [group | {"params": value, "lr": self.value_learning_rate}] if value else []
            optimizer.param_groups[:] = groups
        return optimizer

    def save_model(self, output_dir: str | None = None, _internal_call: bool = False):
        if not self.is_deepspeed_enabled:
            return super().save_model(output_dir, _internal_call)
        # TRL's PPO hands transformers the policy where transformers 5 reads the DeepSpeed engine's config. Under
        # ZeRO-2 (the recipe refuses ZeRO-3) every rank holds the whole adapter: the main process writes it.
        if self.args.should_save:
            self.accelerator.unwrap_model(self.model).policy.save_pretrained(output_dir or self.args.output_dir)

    def _save_checkpoint(self, model, trial):
        folder = Path(self.args.output_dir) / f"checkpoint-{self.state.global_step}"
        folder.mkdir(parents=True, exist_ok=True)
        # Before super(): its trainer_state.json, written last, marks the checkpoint complete.
        value_model = self.accelerator.unwrap_model(self.model).value_model
        trainable = {k: v.detach().cpu().contiguous() for k, v in value_model.named_parameters() if v.requires_grad}
        save_file(trainable, str(folder / self.VALUE_FILE))
        super()._save_checkpoint(model, trial)

    def _load_checkpoint(self, checkpoint: Path) -> int:
        wrapper = self.accelerator.unwrap_model(self.model)
        set_peft_model_state_dict(wrapper.policy, load_file(str(checkpoint / "adapter_model.safetensors")))
        value_weights = load_file(str(checkpoint / self.VALUE_FILE))
        missing = set(value_weights) - set(dict(wrapper.value_model.named_parameters()))
        if missing:
            raise ValueError(f"{checkpoint}: value weights do not fit this value model: {sorted(missing)[:3]}")
        wrapper.value_model.load_state_dict(value_weights, strict=False)
        self.optimizer.load_state_dict(torch.load(checkpoint / "optimizer.pt", map_location="cpu", weights_only=True))
        self.lr_scheduler.load_state_dict(torch.load(checkpoint / "scheduler.pt", weights_only=True))
        return json.loads((checkpoint / "trainer_state.json").read_text())["global_step"]


def prompts_per_update(training_args) -> int:
    """Prompts one PPO update rolls out and trains on, over all processes: a micro-batch x accumulation x
    mini-batches x processes (TRL's batch_size)."""
    return (
        training_args.per_device_train_batch_size
        * training_args.gradient_accumulation_steps
        * training_args.num_mini_batches
        * training_args.distributed_state.num_processes  # PPOConfig's own `world_size` is filled in only by PPO
    )


def load_value_model(model_args: ModelConfig, base):
    """A same-size critic: the policy's 4-bit base with its own LoRA and a trainable scalar head.

    `base`: the policy's base model, before its adapter goes on. The critic's frozen weights (4-bit layers,
    embeddings, norms) are that model's own tensors, not a second copy of the same checkpoint quantized the same way:
    nothing changes but the memory (~4.3 GB at 7B) and a second load. The critic has its own modules, so its adapter
    and the policy's never mix.
    """
    model = _critic_on(base, model_args)
    model.config.pad_token_id = model.config.pad_token_id or model.config.eos_token_id
    lora = LoraConfig(
        task_type="SEQ_CLS",
        r=model_args.lora_r,
        lora_alpha=model_args.lora_alpha,
        lora_dropout=model_args.lora_dropout,
        target_modules=model_args.lora_target_modules,
        modules_to_save=["score"],
    )
    # TRL reaches the backbone through base_model_prefix, so hand it the LoRA-injected model, not the PeftModel.
    return get_peft_model(model, lora).base_model.model


def _critic_on(base, model_args: ModelConfig):
    """A sequence-classification model whose backbone is `base`'s, module for module, with every tensor shared."""
    config = AutoConfig.from_pretrained(
        model_args.model_name_or_path, revision=model_args.model_revision, num_labels=1
    )
    with torch.device("meta"):
        critic = AutoModelForSequenceClassification.from_config(config)
    prefix = base.base_model_prefix
    shared = {id(t): t for t in (*base.base_model.parameters(), *base.base_model.buffers())}
    setattr(critic, prefix, copy.deepcopy(base.base_model, memo=shared))
    head = base.get_output_embeddings().weight
    critic.score = nn.Linear(config.hidden_size, 1, bias=False, device=head.device, dtype=head.dtype)
    critic._init_weights(critic.score)
    # what transformers and accelerate read to leave a quantized model where it is
    for name in ("is_quantized", "quantization_method", "hf_quantizer", "is_loaded_in_4bit", "is_loaded_in_8bit"):
        if hasattr(base, name):
            setattr(critic, name, getattr(base, name))
    return critic


class ChunkedPPOTrainer(ChunkedPPO, ResumablePPOTrainer):
    """PPO with `logprobs: chunked` (core.trl_internals.ppo_loop's loop), resumable."""
