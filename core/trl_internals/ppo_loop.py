"""PPO on `core.logprobs.token_logprobs` (`logprobs: chunked`): TRL 1.12's PPOTrainer.train(), whose three uses of
full-vocabulary logits live inside one loop rather than in a method a subclass could replace, so the loop is here.

What differs from TRL's, and nothing else:
- the rollout generates without `output_scores` (TRL stacks every step's fp32 scores into [rollout x response x
  vocabulary] and keeps them through the epochs); the rollout's log-probs come from a no-grad forward of the policy,
  the same computation as the training forward, so the first epoch's ratio is exactly 1;
- the reference and training forwards read the backbone's hidden states at the response positions and the head in
  chunks (TRL's forward returns logits for every position of prompt and response);
- the entropy statistic comes from the same pass.
The loop structure, statistics and metric names are TRL's. Resume comes from ResumablePPOTrainer
(core.trl_internals.ppo); the source it was forked from is pinned in core.trl_internals.contract.FORKED.
"""

import gc
import math
import time
from contextlib import nullcontext

import numpy as np
import torch
from transformers import GenerationConfig
from trl.experimental.ppo.ppo_trainer import INVALID_LOGPROB, masked_mean, masked_whiten, truncate_response
from trl.experimental.utils import empty_cache, first_true_indices, get_reward
from trl.models.utils import unwrap_model_for_generation
from trl.trainer.utils import pad

from core.trl_internals.chunked import ChunkedLogprobs, head_logprobs, language_model


def _model_inputs(query_responses, pad_token_id):
    """TRL's PPO `forward` inputs: pads masked to 0, positions counted over real tokens."""
    attention_mask = query_responses != pad_token_id
    return {
        "input_ids": torch.masked_fill(query_responses, ~attention_mask, 0),
        "attention_mask": attention_mask,
        "position_ids": attention_mask.cumsum(1) - attention_mask.long(),
    }


def _response_logprobs(policy, query_responses, context_length, pad_token_id, temperature):
    """Per-token log-probs (and entropies) of the response tokens under `policy` at the temperature."""
    backbone = language_model(policy)[1]
    inputs = _model_inputs(query_responses, pad_token_id)
    hidden = backbone(**inputs, use_cache=False).last_hidden_state[:, context_length - 1 : -1]
    return head_logprobs(policy, hidden, query_responses[:, context_length:], temperature)


def _policy_and_values(wrapper, query_responses, context_length, pad_token_id, temperature):
    """PolicyAndValueWrapper's forward (critic values over the sequence), with log-probs in place of logits."""
    inputs = _model_inputs(query_responses, pad_token_id)
    critic = wrapper.critic_backbone(**inputs, return_dict=True, output_hidden_states=True)
    values = wrapper.value_model.score(critic.hidden_states[-1])
    out = _response_logprobs(wrapper.policy, query_responses, context_length, pad_token_id, temperature)
    return out, values


def _generate(policy, queries, batch_size, pad_token_id, generation_config):
    """TRL's batch_generation without the stacked scores: query + response tokens only."""
    query_responses = []
    for start in range(0, queries.shape[0], batch_size):
        query = queries[start : start + batch_size]
        attention_mask = query != pad_token_id
        output = policy.generate(
            input_ids=torch.masked_fill(query, ~attention_mask, 0),
            attention_mask=attention_mask,
            generation_config=generation_config,
            return_dict_in_generate=True,
        )
        query_responses.append(torch.cat((query, output.sequences[:, query.shape[1] :]), dim=1))
    padded = pad(query_responses, padding_value=pad_token_id, padding_side="right")
    return padded.view(-1, padded.shape[-1])[: queries.shape[0]]


class ChunkedPPO(ChunkedLogprobs):
    """TRL's PPO loop on chunked log-probs, on top of `core.trl_internals.ppo.ResumablePPOTrainer` (its resume and
    reward adapter)."""

    def _temperature(self):
        return self.args.temperature + 1e-7  # as TRL's loop divides

    def _training_forward(self, model, query_responses, context_length):
        pad_token_id, temperature = self.processing_class.pad_token_id, self._temperature()
        return self._inside_forward(
            model, _policy_and_values, query_responses, context_length, pad_token_id, temperature
        )

    @torch.no_grad()
    def _rollout(self, queries):
        """Generate, score and compute advantages for one batch of queries (TRL's loop, steps 1-6)."""
        args, model, pad_token_id = self.args, self.model, self.processing_class.pad_token_id
        context_length = queries.shape[1]
        step = args.local_rollout_forward_batch_size
        with unwrap_model_for_generation(
            model,
            self.accelerator,
            gather_deepspeed3_params=args.ds3_gather_for_generation,
            generation_kwargs=self._generation_kwargs,
        ) as unwrapped_model:
            query_responses = _generate(unwrapped_model.policy, queries, step, pad_token_id, self._generation_config)
        responses, postprocessed_responses, logprobs, ref_logprobs = [], [], [], []
        scores, sequence_lengths, values = [], [], []
        policy = self.accelerator.unwrap_model(model).policy
        for i in range(0, queries.shape[0], step):
            query, query_response = queries[i : i + step], query_responses[i : i + step]
            response = query_response[:, context_length:]
            # outside autocast, as TRL's generation and reference forward run (they call the policy, not the
            # prepared wrapper whose forward autocasts)
            logprob = _response_logprobs(policy, query_response, context_length, pad_token_id, self._temperature())
            with self.null_ref_context() if self.ref_model is None else nullcontext():
                reference = policy if self.ref_model is None else self.ref_model
                ref = _response_logprobs(reference, query_response, context_length, pad_token_id, self._temperature())
            postprocessed_response = response
            if self.stop_token_id is not None:
                postprocessed_response = truncate_response(self.stop_token_id, pad_token_id, response)
            postprocessed_query_response = torch.cat((query, postprocessed_response), 1)
            sequence_length = first_true_indices(postprocessed_response == pad_token_id) - 1
            value_model = self.accelerator.unwrap_model(model).value_model
            full_value, _, _ = get_reward(value_model, query_response, pad_token_id, context_length)
            _, score, _ = get_reward(self.reward_model, postprocessed_query_response, pad_token_id, context_length)
            responses.append(response)
            postprocessed_responses.append(postprocessed_response)
            logprobs.append(logprob.logps)
            ref_logprobs.append(ref.logps)
            sequence_lengths.append(sequence_length)
            scores.append(score)
            values.append(full_value[:, context_length - 1 : -1].squeeze(-1))
        batch = {
            "query_responses": query_responses,
            "responses": torch.cat(responses, 0),
            "postprocessed_responses": torch.cat(postprocessed_responses, 0),
            "logprobs": torch.cat(logprobs, 0),
            "ref_logprobs": torch.cat(ref_logprobs, 0),
            "sequence_lengths": torch.cat(sequence_lengths, 0),
            "scores": torch.cat(scores, 0),
            "values": torch.cat(values, 0),
        }
        empty_cache()
        gc.collect()
        return self._advantages(batch)

    def _advantages(self, b):
        args = self.args
        contain_eos_token = torch.any(b["postprocessed_responses"] == self.processing_class.eos_token_id, dim=-1)
        if args.missing_eos_penalty is not None:
            b["scores"][~contain_eos_token] -= args.missing_eos_penalty
        responses, sequence_lengths = b["responses"], b["sequence_lengths"]
        response_idxs = torch.arange(responses.shape[1], device=responses.device).repeat(responses.shape[0], 1)
        padding_mask = response_idxs > sequence_lengths.unsqueeze(1)
        logprobs = torch.masked_fill(b["logprobs"], padding_mask, INVALID_LOGPROB)
        ref_logprobs = torch.masked_fill(b["ref_logprobs"], padding_mask, INVALID_LOGPROB)
        sequence_lengths_p1 = sequence_lengths + 1
        padding_mask_p1 = response_idxs > (sequence_lengths_p1.unsqueeze(1))
        values = torch.masked_fill(b["values"], padding_mask_p1, 0)
        logr = ref_logprobs - logprobs
        kl = -logr if args.kl_estimator == "k1" else (logr.exp() - 1) - logr
        non_score_reward = -args.kl_coef * kl
        rewards = non_score_reward.clone()
        actual_start = torch.arange(rewards.size(0), device=rewards.device)
        actual_end = torch.where(sequence_lengths_p1 < rewards.size(1), sequence_lengths_p1, sequence_lengths)
        rewards[actual_start, actual_end] += b["scores"]
        if args.whiten_rewards:
            rewards = masked_whiten(rewards, mask=~padding_mask_p1, shift_mean=False)
            rewards = torch.masked_fill(rewards, padding_mask_p1, 0)
        lastgaelam = 0
        advantages_reversed = []
        gen_length = responses.shape[1]
        for t in reversed(range(gen_length)):
            nextvalues = values[:, t + 1] if t < gen_length - 1 else 0.0
            delta = rewards[:, t] + args.gamma * nextvalues - values[:, t]
            lastgaelam = delta + args.gamma * args.lam * lastgaelam
            advantages_reversed.append(lastgaelam)
        advantages = torch.stack(advantages_reversed[::-1], axis=1)
        returns = advantages + values
        advantages = masked_whiten(advantages, ~padding_mask)
        advantages = torch.masked_fill(advantages, padding_mask, 0)
        b.update(
            logprobs=logprobs,
            padding_mask=padding_mask,
            padding_mask_p1=padding_mask_p1,
            values=values,
            kl=kl,
            non_score_reward=non_score_reward,
            advantages=advantages,
            returns=returns,
        )
        return b

    def _epochs(self, b, context_length, stats):
        """TRL's PPO epochs over the rollout: clipped policy loss + clipped value loss, per micro-batch."""
        args, model, accelerator, optimizer = self.args, self.model, self.accelerator, self.optimizer
        for ppo_epoch_idx in range(args.num_ppo_epochs):
            b_inds = np.random.permutation(args.local_batch_size)
            for minibatch_idx, mini_batch_start in enumerate(
                range(0, args.local_batch_size, args.local_mini_batch_size)
            ):
                mini_batch_inds = b_inds[mini_batch_start : mini_batch_start + args.local_mini_batch_size]
                for gradient_accumulation_idx, micro_batch_start in enumerate(
                    range(0, args.local_mini_batch_size, args.per_device_train_batch_size)
                ):
                    with accelerator.accumulate(model):
                        inds = mini_batch_inds[
                            micro_batch_start : micro_batch_start + args.per_device_train_batch_size
                        ]
                        mb_advantage, mb_logprobs = b["advantages"][inds], b["logprobs"][inds]
                        mb_return, mb_values = b["returns"][inds], b["values"][inds]
                        padding_mask, padding_mask_p1 = b["padding_mask"][inds], b["padding_mask_p1"][inds]
                        out, vpred_temp = self._training_forward(model, b["query_responses"][inds], context_length)
                        new_logprobs = torch.masked_fill(out.logps, padding_mask, INVALID_LOGPROB)
                        vpred = vpred_temp[:, context_length - 1 : -1].squeeze(-1)
                        vpred = torch.masked_fill(vpred, padding_mask_p1, 0)
                        vpredclipped = torch.clamp(
                            vpred, mb_values - args.cliprange_value, mb_values + args.cliprange_value
                        )
                        vf_losses1 = torch.square(vpred - mb_return)
                        vf_losses2 = torch.square(vpredclipped - mb_return)
                        vf_loss_max = torch.max(vf_losses1, vf_losses2)
                        vf_loss = 0.5 * masked_mean(vf_loss_max, ~padding_mask_p1)
                        vf_clipfrac = masked_mean((vf_losses2 > vf_losses1).float(), ~padding_mask_p1)
                        logprobs_diff = new_logprobs - mb_logprobs
                        ratio = torch.exp(logprobs_diff)
                        pg_losses = -mb_advantage * ratio
                        pg_losses2 = -mb_advantage * torch.clamp(ratio, 1.0 - args.cliprange, 1.0 + args.cliprange)
                        pg_loss_max = torch.max(pg_losses, pg_losses2)
                        pg_loss = masked_mean(pg_loss_max, ~padding_mask)
                        loss = pg_loss + args.vf_coef * vf_loss
                        accelerator.backward(loss)
                        optimizer.step()
                        optimizer.zero_grad()
                        with torch.no_grad():
                            at = (ppo_epoch_idx, minibatch_idx, gradient_accumulation_idx)
                            stats["approxkl"][at] = 0.5 * (logprobs_diff**2).mean()
                            stats["pg_clipfrac"][at] = masked_mean((pg_losses2 > pg_losses).float(), ~padding_mask)
                            stats["pg_loss"][at] = pg_loss
                            stats["vf_loss"][at] = vf_loss
                            stats["vf_clipfrac"][at] = vf_clipfrac
                            stats["entropy"][at] = out.entropy.mean()
                            stats["ratio"][at] = ratio.mean()
                    del out, vpred_temp, new_logprobs, loss, pg_loss, vf_loss
                empty_cache()

    def train(self):
        args, accelerator = self.args, self.accelerator
        device = accelerator.device
        iter_dataloader = iter(_repeat(self.dataloader))
        self._generation_kwargs = {
            "max_new_tokens": args.response_length,
            "temperature": (args.temperature + 1e-7),
            "top_k": 0.0,
            "top_p": 1.0,
            "do_sample": True,
        }
        self._generation_config = GenerationConfig(**self._generation_kwargs)
        accelerator.print("===training policy===")
        start_time = time.time()
        stats_shape = (args.num_ppo_epochs, args.num_mini_batches, args.gradient_accumulation_steps)
        names = ("approxkl", "pg_clipfrac", "pg_loss", "vf_loss", "vf_clipfrac", "entropy", "ratio")
        stats = {name: torch.zeros(stats_shape, device=device) for name in names}
        self.model.train()
        self._begin_state()
        self.control = self.callback_handler.on_train_begin(args, self.state, self.control)
        if self.is_deepspeed_enabled:
            self.deepspeed = self.model_wrapped = self.model
        for update in range(1, args.num_total_batches + 1):
            self.state.episode += 1 * args.batch_size
            queries = next(iter_dataloader)["input_ids"].to(device)
            b = self._rollout(queries)
            self._epochs(b, queries.shape[1], stats)
            self._log_update(b, stats, start_time)
            self.lr_scheduler.step()
            self.control = self.callback_handler.on_step_end(args, self.state, self.control)
            if self.control.should_save:
                self._save_checkpoint(self.model, trial=None)
                self.control = self.callback_handler.on_save(self.args, self.state, self.control)
            del b
            empty_cache()
            gc.collect()
            if args.num_sample_generations > 0 and (update - 1) % self.sample_generations_freq == 0:
                self.generate_completions(sampling=True)
                empty_cache()
        self.control = self.callback_handler.on_train_end(args, self.state, self.control)
        if self.control.should_save:
            self._save_checkpoint(self.model, trial=None)
            self.control = self.callback_handler.on_save(self.args, self.state, self.control)

    def _begin_state(self):
        args, state = self.args, self.state
        state.global_step = 0
        state.episode = 0
        state.max_steps = args.num_total_batches
        state.num_train_epochs = args.total_episodes / self.train_dataset_len
        for name in ("logging_steps", "eval_steps", "save_steps"):
            value = getattr(args, name)
            if value is not None:
                setattr(state, name, math.ceil(state.max_steps * value) if value < 1 else value)

    def _log_update(self, b, stats, start_time):
        gather = self.accelerator.gather_for_metrics
        with torch.no_grad():
            mean_kl = b["kl"].sum(1).mean()
            mean_entropy = ((-b["logprobs"]) * (~b["padding_mask"]).float()).sum(1).mean()
            mean_non_score_reward = b["non_score_reward"].sum(1).mean()
            rlhf_reward = mean_non_score_reward + b["scores"].mean()
            metrics = {"eps": int(self.state.episode / (time.time() - start_time))}
            metrics["objective/kl"] = gather(mean_kl).mean().item()
            metrics["objective/entropy"] = gather(mean_entropy).mean().item()
            metrics["objective/non_score_reward"] = gather(mean_non_score_reward).mean().item()
            metrics["objective/rlhf_reward"] = gather(rlhf_reward).mean().item()
            metrics["objective/scores"] = gather(b["scores"].mean()).mean().item()
            metrics["policy/approxkl_avg"] = gather(stats["approxkl"]).mean().item()
            metrics["policy/clipfrac_avg"] = gather(stats["pg_clipfrac"]).mean().item()
            metrics["loss/policy_avg"] = gather(stats["pg_loss"]).mean().item()
            metrics["loss/value_avg"] = gather(stats["vf_loss"]).mean().item()
            metrics["val/clipfrac_avg"] = gather(stats["vf_clipfrac"]).mean().item()
            metrics["policy/entropy_avg"] = gather(stats["entropy"]).mean().item()
            metrics["val/ratio"] = gather(stats["ratio"]).mean().item()
            metrics["val/ratio_var"] = gather(stats["ratio"]).var().item()
            metrics["val/num_eos_tokens"] = (b["responses"] == self.processing_class.eos_token_id).sum().item()
            metrics["lr"] = self.lr_scheduler.get_last_lr()[0]
            metrics["episode"] = self.state.episode
            self.state.epoch = self.state.episode / self.train_dataset_len
            self.state.global_step += 1
            self.log(metrics)


def _repeat(dataloader):
    while True:
        yield from dataloader
