import pytest
import torch
from transformers import AutoTokenizer

QWEN_VOCAB = 152_064


@pytest.fixture(scope="session")
def big_vocab_model(tiny_world, tmp_path_factory):
    """Random Qwen2 with Qwen2.5's vocabulary and untied head (logits dominate, as at 7B); the tiny tokenizer."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    out = tmp_path_factory.mktemp("big-vocab")
    tokenizer = AutoTokenizer.from_pretrained(tiny_world / "model")
    config = Qwen2Config(
        vocab_size=QWEN_VOCAB,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        tie_word_embeddings=False,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(0)
    Qwen2ForCausalLM(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
