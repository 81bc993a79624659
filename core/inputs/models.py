"""Loading the base model (4-bit NF4 through TRL's quantization helper, or full precision) and its tokenizer."""

from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
from transformers.integrations import is_deepspeed_zero3_enabled
from trl import ModelConfig, get_quantization_config

from core.errors import UserError
from core.inputs.distributed import shards_parameters


def resolve_dtype(model_args: ModelConfig) -> ModelConfig:
    """bf16 compute on a GPU, fp32 on CPU (bitsandbytes' CPU 4-bit kernels and CPU training want fp32)."""
    if model_args.dtype in (None, "auto"):
        model_args.dtype = "bfloat16" if torch.cuda.is_available() else "float32"
    return model_args


def check_4bit_supported(model_args: ModelConfig) -> None:
    """Fail early, with the reason, where bitsandbytes cannot run the requested quantization."""
    if not (model_args.load_in_4bit or model_args.load_in_8bit):
        return
    try:
        import bitsandbytes  # noqa: F401
    except Exception as error:  # noqa: BLE001 - a broken native library raises anything at import
        raise RuntimeError(f"4-bit/8-bit loading requested, but bitsandbytes cannot be imported: {error}") from error
    if model_args.load_in_8bit and not torch.cuda.is_available():
        raise RuntimeError("load_in_8bit needs a CUDA GPU with this bitsandbytes; use load_in_4bit on CPU")


def check_model(model_args: ModelConfig, source: str = "the command line") -> None:
    """Before any weights load: the base model is a local model folder, or a hub id whose config the hub gives, and
    bitsandbytes can run the requested quantization. One line naming the value and where it came from otherwise."""
    name = model_args.model_name_or_path
    where = f"model_name_or_path {name!r} (from {source})"
    path = Path(name).expanduser()
    if path.exists() or name.startswith((".", "/", "~")) or name.count("/") > 1:  # a path, not a hub id
        if (path / "config.json").is_file():
            check_4bit_supported(model_args)
            return
        if (path / "adapter_config.json").is_file():
            raise UserError(f"{where} is a LoRA adapter, not a base model: give the base model it was trained on")
        raise UserError(
            f"{where} " + ("holds no config.json: not a model folder" if path.is_dir() else "does not exist")
        )
    try:
        AutoConfig.from_pretrained(name, revision=model_args.model_revision)
    except (OSError, ValueError) as error:
        raise UserError(
            f"{where}: not a local folder, and the hub gives no model config for it "
            f"({str(error).splitlines()[0][:200]})"
        ) from error
    check_4bit_supported(model_args)


def max_positions(model_args: ModelConfig) -> int | None:
    """The positions the model was built for (its config's max_position_embeddings), if it says."""
    config = AutoConfig.from_pretrained(model_args.model_name_or_path, revision=model_args.model_revision)
    return getattr(config, "max_position_embeddings", None)


def prompt_room(
    model_args: ModelConfig, completion_tokens: int, setting: str, source: str, hint: str = ""
) -> int | None:
    """Tokens a prompt may take so that a completion of `completion_tokens` (the value of `setting`, from `source`)
    still fits the model's positions (None: the model does not say); a budget that takes every position is refused,
    with `hint` (how to change it) or else the flag."""
    return completion_room(max_positions(model_args), completion_tokens, setting, source, hint)


def completion_room(
    positions: int | None, completion_tokens: int, setting: str, source: str, hint: str = ""
) -> int | None:
    """`prompt_room` for a model of `positions` positions.

    >>> completion_room(512, 128, "max_new_tokens", "the default")
    384
    """
    if not positions:
        return None
    if completion_tokens >= positions:
        raise UserError(
            f"{setting} {completion_tokens} (from {source}) is at or beyond the model's {positions} positions: the "
            f"completion budget leaves no room for a prompt; give fewer than {positions} tokens "
            f"({hint or f'e.g. --{setting} {positions // 2}'})"
        )
    return positions - completion_tokens


def check_adapter(adapter: str) -> None:
    """A LoRA adapter folder as the recipes save it; a run killed before its final save has only checkpoints."""
    path = Path(adapter)
    if (path / "adapter_config.json").is_file():
        return
    checkpoints = sorted(path.glob("checkpoint-*/adapter_config.json")) if path.is_dir() else []
    hint = (
        f"; its checkpoints hold adapters: {', '.join(str(c.parent) for c in checkpoints[-3:])}" if checkpoints else ""
    )
    state = "does not exist" if not path.exists() else "holds no adapter_config.json: not a LoRA adapter folder"
    raise UserError(f"adapter {adapter} {state}{hint}")


def model_kwargs(model_args: ModelConfig) -> dict:
    """from_pretrained kwargs: dtype, attention and, when asked, the 4-bit NF4 config from TRL's own helper (stored
    in the compute dtype where the launch shards parameters: ZeRO-3, FSDP)."""
    resolve_dtype(model_args)
    kwargs = {
        "revision": model_args.model_revision,
        "dtype": getattr(torch, model_args.dtype),
        "attn_implementation": model_args.attn_implementation,
    }
    if model_args.load_in_4bit and shards_parameters() and not model_args.bnb_4bit_quant_storage:
        model_args.bnb_4bit_quant_storage = model_args.dtype  # packed weights the engine can cut into shards
    quantization_config = get_quantization_config(model_args)
    if quantization_config is not None:
        kwargs["quantization_config"] = quantization_config
        if is_deepspeed_zero3_enabled():  # ZeRO-3 places (and partitions) the weights itself
            kwargs["device_map"] = None  # not absent: TRL's ORPO would fill in "auto"
        else:
            kwargs["device_map"] = {"": torch.cuda.current_device()} if torch.cuda.is_available() else {"": "cpu"}
    return kwargs


def load_model(model_args: ModelConfig, model_class=AutoModelForCausalLM, **extra):
    check_4bit_supported(model_args)
    return model_class.from_pretrained(model_args.model_name_or_path, **model_kwargs(model_args), **extra)


def on_device(model):
    """A model loaded for inference, on the GPU when there is one: loaded without quantization (no device map), it
    stays on the CPU otherwise."""
    return model.to("cuda") if torch.cuda.is_available() and model.device.type == "cpu" else model


def with_adapter(model, adapter: str | None, trainable: bool = False):
    """`model` with the LoRA adapter at `adapter` on it (None: the model as it is); `trainable`: to train on (an
    iterative method's next round starts from the last round's adapter)."""
    if adapter is None:
        return model
    from peft import PeftModel

    check_adapter(adapter)
    return PeftModel.from_pretrained(model, adapter, is_trainable=trainable)


def load_tokenizer(model_args: ModelConfig):
    tokenizer = AutoTokenizer.from_pretrained(model_args.model_name_or_path, revision=model_args.model_revision)
    pad_apart_from_end(tokenizer)
    return tokenizer


def pad_apart_from_end(tokenizer) -> None:
    """Give `tokenizer` a pad token that is not its end of sequence, where it has none or they coincide (SmolLM2's
    `<|im_end|>` is both): a special token the chat template never writes, else the end of sequence as before.

    PPO's loop (TRL's) takes every token equal to the pad for padding: an end of turn that is also the pad never
    enters the policy's loss, so PPO cannot learn to stop, and the turn ends inside its prompts are masked out.
    """
    end = tokenizer.eos_token_id
    if tokenizer.pad_token_id is not None and tokenizer.pad_token_id != end:
        return
    written = set()
    if tokenizer.chat_template:
        turns = [{"role": role, "content": "x"} for role in ("system", "user", "assistant")]
        text = tokenizer.apply_chat_template(turns, tokenize=False)
        written = set(tokenizer(text, add_special_tokens=False)["input_ids"])
    for token in dict.fromkeys([tokenizer.unk_token, *tokenizer.all_special_tokens]):
        token_id = None if token is None else tokenizer.convert_tokens_to_ids(token)
        if token_id is not None and token_id not in (end, tokenizer.bos_token_id) and token_id not in written:
            tokenizer.pad_token = token
            return
    tokenizer.pad_token = tokenizer.eos_token
