"""core.logprobs.token_logprobs against TRL's own full-logits path (selective_log_softmax, entropy_from_logits), values
and gradients, fp32 and bf16 autocast, at Qwen2.5's vocabulary size; and the memory it saves, measured."""

import pytest
import torch
from trl.trainer.utils import entropy_from_logits, selective_log_softmax

from core.logprobs.token_logprobs import chunk_tokens, token_logprobs
from core.training.memory_meter import LiveTensorMeter
from tests.conftest import slow_without_native_bf16

QWEN_VOCAB = 152_064


def trl_path(hidden, head, tokens, temperature):
    """What TRL's trainers do: full logits, upcast to fp32, tempered, log-softmax gathered; entropy beside."""
    logits = head(hidden).float() / temperature
    return selective_log_softmax(logits, tokens), entropy_from_logits(logits), logits


def relative_error(a, b):
    return ((a - b).abs().max() / b.abs().max()).item()


@pytest.fixture
def world():
    torch.manual_seed(0)
    head = torch.nn.Linear(64, QWEN_VOCAB, bias=False)
    hidden = torch.randn(3, 40, 64)
    tokens = torch.randint(QWEN_VOCAB, (3, 40))
    return head, hidden, tokens


def test_values_equal_trls_in_fp32(world):
    head, hidden, tokens = world
    head.weight.requires_grad_(False)
    with torch.no_grad():
        ours = token_logprobs(hidden, head, tokens, temperature=0.7, chunk=16)
        logps, entropy, logits = trl_path(hidden, head, tokens, 0.7)
    assert ours.logps.shape == tokens.shape and ours.logps.dtype == torch.float32
    assert relative_error(ours.logps, logps) < 1e-5
    assert relative_error(ours.entropy, entropy) < 1e-5
    assert relative_error(ours.logit_mean, (logits * 0.7).mean(-1)) < 1e-5
    assert torch.equal(ours.argmax, logits.argmax(-1))


@pytest.mark.parametrize("entropy_grad", [False, True])
def test_hidden_gradient_equals_trls_in_fp32(world, entropy_grad):
    head, hidden, tokens = world
    head.weight.requires_grad_(False)
    weights = torch.randn(tokens.shape)  # an arbitrary loss, so every token's gradient differs

    ours_hidden = hidden.clone().requires_grad_()
    out = token_logprobs(ours_hidden, head, tokens, temperature=0.7, entropy_grad=entropy_grad, chunk=16)
    loss = (weights * out.logps).sum() + (out.entropy.sum() if entropy_grad else 0)
    loss.backward()

    trl_hidden = hidden.clone().requires_grad_()
    logps, _, logits = trl_path(trl_hidden, head, tokens, 0.7)
    trl_loss = (weights * logps).sum()
    if entropy_grad:
        log_p = logits.log_softmax(-1)
        trl_loss = trl_loss - (log_p.exp() * log_p).sum()
    trl_loss.backward()

    assert abs(loss.item() - trl_loss.item()) / abs(trl_loss.item()) < 1e-5
    assert relative_error(ours_hidden.grad, trl_hidden.grad) < 1e-5
    assert head.weight.grad is None  # a frozen head gets no gradient buffer


def test_entropy_without_entropy_grad_is_not_differentiable(world):
    head, hidden, tokens = world
    head.weight.requires_grad_(False)
    out = token_logprobs(hidden.requires_grad_(), head, tokens, chunk=16)
    assert out.logps.requires_grad and not out.entropy.requires_grad


def test_trainable_head_gets_trls_gradient():
    torch.manual_seed(1)
    head = torch.nn.Linear(32, 5000, bias=True)
    hidden, tokens, weights = torch.randn(2, 9, 32), torch.randint(5000, (2, 9)), torch.randn(2, 9)
    out = token_logprobs(hidden, head, tokens, temperature=1.3, entropy_grad=True, chunk=4)
    ((weights * out.logps).sum() + out.entropy.sum()).backward()
    ours = head.weight.grad.clone(), head.bias.grad.clone()
    head.zero_grad()
    logps, _, logits = trl_path(hidden, head, tokens, 1.3)
    log_p = logits.log_softmax(-1)
    ((weights * logps).sum() - (log_p.exp() * log_p).sum()).backward()
    assert relative_error(ours[0], head.weight.grad) < 1e-5
    assert relative_error(ours[1], head.bias.grad) < 1e-5


@slow_without_native_bf16  # 19 s on an AVX2-only EPYC with the three sequences; 14.6 -> 4.4 s with one under CPU=avx2
def test_bf16_autocast_within_bf16_rounding(world):
    """Under bf16 autocast both paths do the head's matmul in bf16; what differs is where bf16 rounds the
    gradient (TRL: incoming gradient x softmax term, then bf16; here: softmax term in bf16, then x gradient)."""
    head, hidden, tokens = world
    hidden, tokens = hidden[:1], tokens[:1]  # one sequence, three chunks: without native bf16 ~1 GFLOP/s
    head = head.to(torch.bfloat16).requires_grad_(False)
    weights = torch.randn(tokens.shape)
    grads, values = [], []
    for path in ("ours", "trl"):
        h = hidden.to(torch.bfloat16).requires_grad_()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            if path == "ours":
                logps = token_logprobs(h, head, tokens, temperature=0.7, chunk=16).logps
            else:
                logps = trl_path(h, head, tokens, 0.7)[0]
        (weights * logps).sum().backward()
        values.append(logps.detach())
        grads.append(h.grad.float())
    assert relative_error(values[0], values[1]) < 1e-5  # same bf16 logits, same fp32 arithmetic after
    assert relative_error(grads[0], grads[1]) < 2**-7  # two bf16 roundings apart at most


def test_empty_selection(world):
    head, _, _ = world
    out = token_logprobs(torch.zeros(0, 64), head, torch.zeros(0, dtype=torch.long))
    assert out.logps.shape == (0,)


def test_peak_memory_is_a_chunk_not_the_logits(world):
    """Forward and backward of 120 tokens at Qwen2.5's vocabulary: TRL's path holds several fp32 copies of the
    [120 x 152,064] logits (73 MB each); the chunked path's peak is three buffers of one chunk of 16 tokens."""
    head, hidden, tokens = world
    head.weight.requires_grad_(False)
    logits_bytes = tokens.numel() * QWEN_VOCAB * 4
    peaks = {}
    for path in ("ours", "trl"):
        h = hidden.clone().requires_grad_()
        with LiveTensorMeter() as meter:
            meter.track([head.weight, h, tokens])
            before = meter.live_bytes
            if path == "ours":
                logps = token_logprobs(h, head, tokens, chunk=16).logps
            else:
                logps = trl_path(h, head, tokens, 1.0)[0]
            logps.sum().backward()
        peaks[path] = meter.peak_bytes - before
    assert peaks["trl"] > 2 * logits_bytes
    # three fp32 chunk buffers (log-softmax, softmax, a temporary), not one more: no chunk's buffer outlives it
    assert peaks["ours"] < 3.2 * 16 * QWEN_VOCAB * 4 + 2 * hidden.numel() * 4
    assert chunk_tokens(QWEN_VOCAB) * QWEN_VOCAB * 4 <= 2**26
