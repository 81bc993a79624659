"""Per-token log-probabilities without the full-vocabulary logits: the 7B memory path of every recipe.

A method needs one number per token, the log-probability of the token that was sampled (or chosen), yet TRL's path
materialises [batch x length x vocabulary] logits and, under bf16 autocast, four fp32 copies of them at the start of
backward (9.3 of a 7B GRPO run's 15.7 GB). `token_logprobs` takes the last hidden states and the language-model
head instead and works through the tokens in chunks, so at most one chunk's logits exist at a time.

The gradient is exact and needs no second pass over the head: each token's log-probability depends only on its own
hidden state h, and d logp / d h = ((onehot - softmax) / T) W, which the forward computes chunk by chunk while the
chunk's probabilities are at hand. Backward only scales those rows by the incoming gradient. The head matmuls are
the same in number as TRL's (one forward, one for the gradient), and no gradient buffer is made for a frozen head;
a trainable head gets its gradient by recomputing each chunk in backward.

Numerics follow TRL's path: the head's matmul in the autocast dtype (else the head's), logits upcast to fp32, divided
by the temperature, log-softmax and entropy in fp32.
"""

from typing import NamedTuple

import torch
import torch.nn.functional as F

# fp32 logits per chunk (2**24 = 64 MB): 110 tokens at Qwen2.5's 152,064-token vocabulary. A few buffers of this
# size are the whole transient; larger chunks add memory, not speed, once the matmul is this big.
CHUNK_LOGITS = 2**24


class TokenLogProbs(NamedTuple):
    logps: torch.Tensor  # log-probability of each given token at the temperature, fp32, differentiable
    entropy: torch.Tensor  # entropy of the tempered distribution, fp32, differentiable
    logit_mean: torch.Tensor  # mean raw logit over the vocabulary (TRL's logits/* metrics), no gradient
    argmax: torch.Tensor  # the most likely token (token accuracy metrics), no gradient


def chunk_tokens(vocab: int, chunk_logits: int = CHUNK_LOGITS) -> int:
    """Tokens per chunk for a vocabulary: `chunk_logits` fp32 logits at most.

    >>> chunk_tokens(152_064), chunk_tokens(32_000)
    (110, 524)
    """
    return max(1, chunk_logits // vocab)


def _compute_dtype(weight: torch.Tensor) -> torch.dtype:
    device = weight.device.type
    return torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else weight.dtype


def _chunk_logits(h, weight, bias, dtype):
    with torch.autocast(h.device.type, enabled=False):
        return F.linear(h.to(dtype), weight.to(dtype), None if bias is None else bias.to(dtype)).float()


def _dlogp_dz(log_p, p, tokens):
    """d logp(token) / d z for tempered logits z: onehot - softmax (in p's buffer)."""
    grad = p.neg_()
    grad[torch.arange(len(tokens), device=tokens.device), tokens] += 1
    return grad


def _dentropy_dz(log_p, p, entropy):
    """d H / d z = -p (log p + H)."""
    return (log_p + entropy[:, None]).mul_(p).neg_()


def _forward_chunks(hidden, weight, bias, tokens, temperature, chunk, grad_logps, grad_entropy):
    """The four outputs, plus d logp / d h and d H / d h per token (fp32) when asked for."""
    dtype = _compute_dtype(weight)
    n = hidden.shape[0]
    logps = torch.empty(n, dtype=torch.float32, device=hidden.device)
    entropy, logit_mean = torch.empty_like(logps), torch.empty_like(logps)
    argmax = torch.empty(n, dtype=torch.long, device=hidden.device)
    jac_logps = hidden.new_empty(hidden.shape, dtype=torch.float32) if grad_logps else None
    jac_entropy = hidden.new_empty(hidden.shape, dtype=torch.float32) if grad_entropy else None
    for start in range(0, n, chunk):
        rows = slice(start, min(start + chunk, n))
        z = _chunk_logits(hidden[rows], weight, bias, dtype)
        logit_mean[rows] = z.mean(-1)
        argmax[rows] = z.argmax(-1)
        if temperature != 1.0:
            z.div_(temperature)
        lse = torch.logsumexp(z, dim=-1)
        log_p = z.sub_(lse[:, None])  # z's buffer now holds log-softmax
        logps[rows] = log_p.gather(1, tokens[rows, None]).squeeze(1)
        p = log_p.exp()
        entropy[rows] = -(p * log_p).sum(-1)
        if grad_entropy:
            dz = _dentropy_dz(log_p, p, entropy[rows]).div_(temperature)
            jac_entropy[rows] = (dz.to(dtype) @ weight.to(dtype)).float()
            del dz
        if grad_logps:
            dz = _dlogp_dz(log_p, p, tokens[rows]).div_(temperature)
            jac_logps[rows] = (dz.to(dtype) @ weight.to(dtype)).float()
            del dz  # p's buffer: it must not live on into the next chunk
        del z, log_p, p
    return logps, entropy, logit_mean, argmax, jac_logps, jac_entropy


class _TokenLogProbsFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden, weight, bias, tokens, temperature, chunk, entropy_grad):
        needs_hidden = ctx.needs_input_grad[0]
        logps, entropy, logit_mean, argmax, jac_logps, jac_entropy = _forward_chunks(
            hidden, weight, bias, tokens, temperature, chunk, needs_hidden, needs_hidden and entropy_grad
        )
        ctx.temperature, ctx.chunk, ctx.hidden_dtype = temperature, chunk, hidden.dtype
        ctx.entropy_grad = entropy_grad
        ctx.head_grad = ctx.needs_input_grad[1] or ctx.needs_input_grad[2]
        ctx.dtype = _compute_dtype(weight)
        # the hidden states and head only when the head trains (its gradient is recomputed chunk by chunk)
        saved = (hidden, weight, bias, tokens, entropy) if ctx.head_grad else (None, None, None, None, None)
        ctx.save_for_backward(jac_logps, jac_entropy, *saved)
        ctx.mark_non_differentiable(logit_mean, argmax, *(() if entropy_grad else (entropy,)))
        return logps, entropy, logit_mean, argmax

    @staticmethod
    def backward(ctx, grad_logps, grad_entropy, _grad_mean, _grad_argmax):
        jac_logps, jac_entropy, hidden, weight, bias, tokens, entropy = ctx.saved_tensors
        if not ctx.entropy_grad:
            grad_entropy = None
        grad_hidden = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_hidden = torch.zeros_like(jac_logps)
            if grad_logps is not None:
                grad_hidden += jac_logps * grad_logps[:, None]
            if grad_entropy is not None:
                grad_hidden += jac_entropy * grad_entropy[:, None]
            grad_hidden = grad_hidden.to(ctx.hidden_dtype)
        if ctx.head_grad:
            grad_weight = torch.zeros(weight.shape, dtype=torch.float32, device=weight.device)
            grad_bias = None if bias is None else torch.zeros(bias.shape, dtype=torch.float32, device=bias.device)
            for start in range(0, hidden.shape[0], ctx.chunk):
                rows = slice(start, start + ctx.chunk)
                z = _chunk_logits(hidden[rows], weight, bias, ctx.dtype).div_(ctx.temperature)
                log_p = z.sub_(torch.logsumexp(z, dim=-1, keepdim=True))
                p = log_p.exp()
                dz = torch.zeros_like(p)
                if grad_entropy is not None:
                    dz += _dentropy_dz(log_p, p, entropy[rows]).mul_(grad_entropy[rows, None])
                if grad_logps is not None:
                    dz += _dlogp_dz(log_p, p, tokens[rows]).mul_(grad_logps[rows, None])
                dz.div_(ctx.temperature)
                grad_weight += dz.t() @ hidden[rows].float()
                if grad_bias is not None:
                    grad_bias += dz.sum(0)
            grad_weight = grad_weight.to(weight.dtype)
            grad_bias = None if bias is None else grad_bias.to(bias.dtype)
        return grad_hidden, grad_weight, grad_bias, None, None, None, None


def token_logprobs(
    hidden: torch.Tensor,
    head: torch.nn.Module,
    tokens: torch.Tensor,
    temperature: float = 1.0,
    entropy_grad: bool = False,
    chunk: int | None = None,
) -> TokenLogProbs:
    """Log-probabilities of `tokens` under `head(hidden) / temperature`, without full-vocabulary logits.

    hidden: [..., H] last hidden states at the positions that predict `tokens` [...] (already shifted);
    head: the model's output embedding (a Linear; frozen or not). `entropy_grad`: the entropy is a loss term (else
    it is computed for logging and gets no gradient, as in TRL). Every output has `tokens`' shape.

    >>> head = torch.nn.Linear(4, 10, bias=False)
    >>> hidden, tokens = torch.randn(2, 3, 4), torch.randint(10, (2, 3))
    >>> out = token_logprobs(hidden, head, tokens, temperature=0.7, chunk=2)
    >>> full = torch.log_softmax(head(hidden) / 0.7, -1).gather(-1, tokens[..., None]).squeeze(-1)
    >>> torch.allclose(out.logps, full, atol=1e-6), out.logps.shape
    (True, torch.Size([2, 3]))
    """
    shape = tokens.shape
    flat_hidden = hidden.reshape(-1, hidden.shape[-1])
    flat_tokens = tokens.reshape(-1)
    chunk = chunk or chunk_tokens(head.weight.shape[0])
    weight, bias = head.weight, head.bias
    if flat_hidden.shape[0] == 0:
        empty = flat_hidden.new_zeros(shape, dtype=torch.float32)
        return TokenLogProbs(empty, empty, empty, torch.zeros(shape, dtype=torch.long, device=hidden.device))
    if torch.is_grad_enabled() and (hidden.requires_grad or weight.requires_grad):
        outputs = _TokenLogProbsFunction.apply(
            flat_hidden, weight, bias, flat_tokens, float(temperature), chunk, entropy_grad
        )
    else:
        with torch.no_grad():
            outputs = _forward_chunks(flat_hidden, weight, bias, flat_tokens, float(temperature), chunk, False, False)
    return TokenLogProbs(*(t.view(shape) for t in outputs[:4]))
