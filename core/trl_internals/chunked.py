"""GRPO, DPO and ORPO on `core.logprobs.token_logprobs`: the one method of each TRL trainer that turns logits into
log-probs, overridden to read the backbone's hidden states and the head in chunks instead (`logprobs: chunked`).

- GRPO: `_get_per_token_logps_and_entropies`, which serves the training, old-policy and reference passes.
- DPO: `_compute_loss` (policy and reference in one method in TRL 1.12) and `compute_ref_log_probs`
  (precomputed references); the sigmoid and IPO losses, with TRL's metrics.
- ORPO: `concatenated_forward` (the log-odds term and the chosen half's NLL).
PPO's is a loop, not a method: core.trl_internals.ppo_loop (which shares ChunkedLogprobs and head_logprobs).

The backbone runs inside the prepared model's forward (TRL's `_ForwardRedirection`), so DDP's gradient hooks and
ZeRO-3's parameter gathering still fire, under the accelerator's autocast, as the model's own forward would; what
is skipped is the head's full output and accelerate's fp32 copy of it.
"""

from contextlib import nullcontext

import torch
import torch.nn.functional as F
from accelerate.utils import is_peft_model
from trl import DPOTrainer, GRPOTrainer
from trl.experimental.orpo import ORPOTrainer
from trl.models.utils import _ForwardRedirection, disable_gradient_checkpointing
from trl.trainer.dpo_trainer import use_adapter
from trl.trainer.utils import maybe_gather_lm_head_ctx

from core.errors import UserError
from core.logprobs.token_logprobs import TokenLogProbs, token_logprobs

LOGPROBS = ("full", "chunked")
CHUNKED_DPO_LOSSES = {"sigmoid", "ipo"}


def check_logprobs(mode: str, method: str, training_args) -> None:
    """Refuse, before any model loads, a `logprobs` value or a setting the chunked path does not implement."""
    if mode not in LOGPROBS:
        raise UserError(f"logprobs: {mode!r} is not one of {', '.join(LOGPROBS)}")
    if mode == "full":
        return
    unsupported = []
    if getattr(training_args, "use_liger_kernel", False):
        unsupported.append("use_liger_kernel: true (Liger fuses the head itself)")
    if method == "dpo":
        if not set(training_args.loss_type) <= CHUNKED_DPO_LOSSES:
            unsupported.append(f"loss_type: {training_args.loss_type} (only {', '.join(sorted(CHUNKED_DPO_LOSSES))})")
        if training_args.f_divergence_type != "reverse_kl":
            unsupported.append(f"f_divergence_type: {training_args.f_divergence_type}")
        if training_args.ld_alpha is not None:
            unsupported.append("ld_alpha")
        if training_args.use_weighting:
            unsupported.append("use_weighting: true")
    if unsupported:
        raise UserError(f"logprobs: chunked does not implement {'; '.join(unsupported)}; set logprobs: full")


def language_model(unwrapped):
    """The causal LM under a PEFT wrapper, and its backbone (the decoder without the head)."""
    model = unwrapped.base_model.model if is_peft_model(unwrapped) else unwrapped
    return model, model.base_model


def head_logprobs(unwrapped, hidden, tokens, temperature=1.0, entropy_grad=False) -> TokenLogProbs:
    """`token_logprobs` with the model's own head (gathered when ZeRO-3 partitions it)."""
    head = language_model(unwrapped)[0].get_output_embeddings()
    with maybe_gather_lm_head_ctx(head.weight, head.bias):
        return token_logprobs(hidden, head, tokens, temperature, entropy_grad)


class ChunkedLogprobs:
    """What the four trainers share: run a function on the unwrapped model inside the prepared model's forward."""

    def _inside_forward(self, model, fn, *args):
        unwrapped = self.accelerator.unwrap_model(model)
        with self.accelerator.autocast():
            if model is unwrapped:
                return fn(unwrapped, *args)
            return _ForwardRedirection()(model, unwrapped, fn, unwrapped, *args)

    def _sequence_logprobs(self, unwrapped, model_kwargs, positions):
        """Log-probs of each sequence's next tokens at `positions` ([B, L-1] bool): [B, L-1] tensors, 0 elsewhere."""
        hidden = language_model(unwrapped)[1](**model_kwargs).last_hidden_state[:, :-1]
        labels = model_kwargs["input_ids"][:, 1:]
        out = head_logprobs(unwrapped, hidden[positions], labels[positions])
        full = []
        for values in out:
            grid = torch.zeros(labels.shape, dtype=values.dtype, device=values.device)
            full.append(grid.index_put((positions,), values))
        return TokenLogProbs(*full)


class ChunkedGRPO(ChunkedLogprobs):
    def _get_per_token_logps_and_entropies(
        self,
        model,
        input_ids,
        attention_mask,
        logits_to_keep,
        batch_size=None,
        compute_entropy=False,
        compute_aux_loss=False,
        **multimodal,
    ):
        if compute_aux_loss or any(value is not None for value in multimodal.values()):
            raise ValueError("logprobs: chunked covers text-only models without MoE aux loss; set logprobs: full")
        batch_size = batch_size or input_ids.size(0)
        logps, entropies = [], []
        for start in range(0, input_ids.size(0), batch_size):
            rows = slice(start, start + batch_size)
            out = self._inside_forward(
                model, self._completion_logprobs, input_ids[rows], attention_mask[rows], logits_to_keep
            )
            logps.append(out.logps)
            entropies.append(out.entropy)
        return torch.cat(logps), torch.cat(entropies) if compute_entropy else None, None

    def _completion_logprobs(self, unwrapped, input_ids, attention_mask, logits_to_keep):
        hidden = self._get_last_hidden_state(unwrapped, input_ids, attention_mask, logits_to_keep)
        tokens = input_ids[:, -logits_to_keep:]
        return head_logprobs(unwrapped, hidden, tokens, self.temperature, self._entropy_bonus_enabled)


_DPO_INPUTS_NOT_FOR_THE_MODEL = {"completion_mask", "ref_chosen_logps", "ref_rejected_logps"}


class ChunkedDPO(ChunkedLogprobs):
    def _dpo_forward(self, model, inputs):
        kwargs = {k: v for k, v in inputs.items() if k not in _DPO_INPUTS_NOT_FOR_THE_MODEL}
        kwargs["use_cache"] = False
        completion = inputs["completion_mask"][:, 1:].bool()
        return self._inside_forward(model, self._sequence_logprobs, kwargs, completion), completion

    def _reference_logps(self, model, inputs):
        with torch.no_grad(), disable_gradient_checkpointing(self.model, self.args.gradient_checkpointing_kwargs):
            unwrapped = self.accelerator.unwrap_model(model)
            adapter = "ref" if "ref" in getattr(unwrapped, "peft_config", {}) else None
            with use_adapter(unwrapped, adapter_name=adapter) if self.ref_model is None else nullcontext():
                out, _ = self._dpo_forward(model if self.ref_model is None else self.ref_model, inputs)
        return out.logps.sum(1).chunk(2)

    def compute_ref_log_probs(self, model, inputs):
        return self._reference_logps(model, inputs)

    def _compute_loss(self, model, inputs, return_outputs):
        if return_outputs:
            raise ValueError("logprobs: chunked computes no logits to return; set logprobs: full")
        mode = "train" if self.model.training else "eval"
        out, completion = self._dpo_forward(model, inputs)
        chosen_logps, rejected_logps = out.logps.sum(1).chunk(2)
        if self.precompute_ref_logps:
            ref_chosen_logps, ref_rejected_logps = inputs["ref_chosen_logps"], inputs["ref_rejected_logps"]
        else:
            ref_chosen_logps, ref_rejected_logps = self._reference_logps(model, inputs)
        chosen_logratios = chosen_logps - ref_chosen_logps
        rejected_logratios = rejected_logps - ref_rejected_logps
        loss = 0.0
        for loss_type, weight in zip(self.loss_types, self.loss_weights, strict=True):
            if loss_type == "sigmoid":
                per_pair = -F.logsigmoid(self.beta * (chosen_logratios - rejected_logratios))
            else:  # ipo, in TRL's form: each log-ratio per completion token, so beta means the same at any length
                chosen_tokens, rejected_tokens = inputs["completion_mask"].sum(1).clamp(min=1.0).chunk(2)
                delta = chosen_logratios / chosen_tokens - rejected_logratios / rejected_tokens
                per_pair = (delta - 1 / (2 * self.beta)) ** 2
            loss = loss + per_pair.mean() * weight

        # TRL's metrics, from the per-token values (completion positions only, as TRL's)
        gather = self.accelerator.gather_for_metrics
        metrics = self._metrics[mode]
        tokens = gather(completion.sum()).sum()
        metrics["entropy"].append((gather(out.entropy.sum()).sum() / tokens).item() if tokens > 0 else 0.0)
        if mode == "train":
            self._total_train_tokens += gather(inputs["attention_mask"].sum()).sum().item()
        metrics["num_tokens"] = [self._total_train_tokens]
        for side, means, mask in zip(
            ("chosen", "rejected"), out.logit_mean.chunk(2), completion.chunk(2), strict=True
        ):
            total, count = gather(means.sum()).sum().item(), gather(mask.sum()).sum().item()
            metrics[f"logits/{side}"].append(total / count if count > 0 else 0.0)
        chosen_mask = completion.chunk(2)[0]
        labels = inputs["input_ids"][:, 1:].chunk(2)[0]
        correct = gather(((out.argmax.chunk(2)[0] == labels) & chosen_mask).sum()).sum()
        total = gather(chosen_mask.sum()).sum()
        metrics["mean_token_accuracy"].append((correct / total).item() if total > 0 else 0.0)
        chosen_rewards, rejected_rewards = (
            self.beta * chosen_logratios.detach(),
            self.beta * rejected_logratios.detach(),
        )
        metrics["rewards/chosen"].append(self.accelerator.gather(chosen_rewards).mean().item())
        metrics["rewards/rejected"].append(self.accelerator.gather(rejected_rewards).mean().item())
        accuracies = (chosen_rewards > rejected_rewards).float()
        metrics["rewards/accuracies"].append(self.accelerator.gather(accuracies).mean().item())
        metrics["rewards/margins"].append(self.accelerator.gather(chosen_rewards - rejected_rewards).mean().item())
        metrics["logps/chosen"].append(self.accelerator.gather(chosen_logps).mean().item())
        metrics["logps/rejected"].append(self.accelerator.gather(rejected_logps).mean().item())
        return loss


class ChunkedORPO(ChunkedLogprobs):
    def concatenated_forward(self, model, batch):
        if self.is_encoder_decoder or self.aux_loss_enabled:
            raise ValueError("logprobs: chunked covers decoder-only models without MoE aux loss; set logprobs: full")
        concatenated = self.concatenated_inputs(
            batch, is_encoder_decoder=False, padding_value=self.padding_value, device=self.accelerator.device
        )
        n_chosen = batch["chosen_labels"].shape[0]
        kwargs = {
            "input_ids": concatenated["concatenated_input_ids"],
            "attention_mask": concatenated["concatenated_attention_mask"],
            "use_cache": False,
        }
        # every position, as TRL's: the chosen half's NLL covers prompt and answer, the metrics average all of them
        positions = torch.ones_like(kwargs["input_ids"][:, 1:], dtype=torch.bool)
        out = self._inside_forward(model, self._sequence_logprobs, kwargs, positions)
        nll_positions = kwargs["attention_mask"][:n_chosen, 1:].bool()
        chosen_nll_loss = -out.logps[:n_chosen][nll_positions].mean()
        response = concatenated["concatenated_labels"][:, 1:] != -100
        average_logps = (out.logps * response).sum(-1) / response.sum(-1)
        # per-token mean logits stand in for the logits: the trainer only logs their mean
        return (
            average_logps[:n_chosen],
            average_logps[n_chosen:],
            out.logit_mean[:n_chosen],
            out.logit_mean[n_chosen:],
            chosen_nll_loss,
        )


class ChunkedGRPOTrainer(ChunkedGRPO, GRPOTrainer):
    """TRL's GRPOTrainer with `logprobs: chunked`."""


class ChunkedDPOTrainer(ChunkedDPO, DPOTrainer):
    """TRL's DPOTrainer (DPO's sigmoid and IPO's loss) with `logprobs: chunked`."""


class ChunkedORPOTrainer(ChunkedORPO, ORPOTrainer):
    """TRL's ORPOTrainer with `logprobs: chunked`."""


CHUNKED = {GRPOTrainer: ChunkedGRPOTrainer, DPOTrainer: ChunkedDPOTrainer, ORPOTrainer: ChunkedORPOTrainer}


def with_logprobs(trainer_class: type, mode: str) -> type:
    """`trainer_class` itself for `full`; its chunked subclass for `chunked`."""
    return trainer_class if mode == "full" else CHUNKED[trainer_class]
