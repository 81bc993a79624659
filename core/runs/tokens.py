"""The tokens a run generated and trained on (cost.json's `tokens`), counted the same way for every method: completion
tokens only, special tokens (padding, end of turn) not counted, so a method's count does not depend on where its
trainer puts the end-of-turn token. Generated: every completion sampled (GRPO's groups, PPO's rollouts, the pairs'
samples). Trained: the completion tokens each loss was taken over, every pass counted (GRPO's `num_iterations`, PPO's
`num_ppo_epochs`, DPO/IPO/ORPO's chosen and rejected completions in each training batch).

>>> import torch
>>> completion_tokens(torch.tensor([[5, 6, 2, 0], [7, 2, 0, 0]]), torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]]), [0, 2])
3
"""

from dataclasses import dataclass

import torch


@dataclass
class TokenCount:
    """One process's counts since its training began (a resumed run's since it resumed)."""

    generated: int = 0
    trained: int = 0

    def clear(self) -> None:
        self.generated = self.trained = 0

    def record(self, generated: int = 0, trained: int = 0) -> None:
        self.generated += generated
        self.trained += trained

    def totals(self) -> dict[str, int]:
        """The counts of every process (a sum across ranks where training is distributed; every rank calls it)."""
        counts = torch.tensor([self.generated, self.trained], dtype=torch.long)
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            if torch.distributed.get_backend() == "nccl":
                counts = counts.cuda()
            torch.distributed.all_reduce(counts)
        generated, trained = counts.tolist()
        return {"generated": generated, "trained": trained}


def completion_tokens(ids: torch.Tensor, mask: torch.Tensor, special_ids) -> int:
    """The tokens of `ids` where `mask` is set that are not special."""
    special = torch.tensor(sorted(set(special_ids)), device=ids.device, dtype=ids.dtype)
    return int((mask.bool() & ~torch.isin(ids, special)).sum())
