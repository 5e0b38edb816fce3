"""Loading a model for decoding: the device and dtype, a checkpoint by path, hub id or one of fastapply's
own names (fetched or merged into fastapply's cache on first use), a LoRA adapter on top, and the token
ids that end generation; what the decoder and the timers read off a loaded model (the cache keyword, the
output layer, the device's queue). ``target.py`` decodes what this loads.
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path

from fastapply.errors import FastapplyError, UsageError

log = logging.getLogger(__name__)

DTYPES = ("auto", "float32", "bfloat16", "float16")
DEVICES = ("auto", "cpu", "cuda", "mps")


def resolve_device(device: str) -> str:
    import torch

    if device not in DEVICES:
        raise UsageError(f"unknown device {device!r}; choose one of: {', '.join(DEVICES)}")
    if device == "auto":
        if torch.cuda.is_available():
            return "cuda"
        if torch.backends.mps.is_available():
            return "mps"
        return "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise FastapplyError("--device cuda was asked for but no CUDA device is available")
    if device == "mps" and not torch.backends.mps.is_available():
        raise FastapplyError("--device mps was asked for but MPS is not available")
    return device


def resolve_dtype(dtype: str, device: str):
    import torch

    if dtype not in DTYPES:
        raise UsageError(f"unknown dtype {dtype!r}; choose one of: {', '.join(DTYPES)}")
    if dtype == "auto":
        return torch.float32 if device == "cpu" else torch.bfloat16
    return getattr(torch, dtype)


def load_model(model: str, device: str = "auto", dtype: str = "auto", adapter: str | None = None):
    """Load (model, tokenizer) from a local checkpoint directory or a hub id, ready for decoding.

    Two names are fastapply's own: ``fastapply-small`` (the default model, merged and cached on first
    use, ``bundled.py``) and ``smollm2-135m-instruct`` (its base, from the package registry,
    ``basemodel.py``); a directory of that name in the current directory wins over them.
    ``adapter`` is a LoRA adapter directory (peft) applied on top of the base without merging.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    model = resolve_named(model)
    looks_local = model.startswith((".", "/", "~")) or Path(model).exists()
    if looks_local and not Path(model).expanduser().exists():
        raise FastapplyError(f"model path {model} does not exist")
    if looks_local:
        model = str(Path(model).expanduser())
    device = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, device)
    try:
        tokenizer = AutoTokenizer.from_pretrained(model)
        lm = AutoModelForCausalLM.from_pretrained(model, dtype=torch_dtype)
    except (OSError, ValueError) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise FastapplyError(f"cannot load model {model}: {first_line}") from None
    if adapter is not None:
        lm = with_adapter(lm, adapter)
    lm.to(device).eval()
    log.info("loaded %s (%.1fM parameters) on %s in %s", model, sum(p.numel() for p in lm.parameters()) / 1e6,
             device, torch_dtype)
    return lm, tokenizer


def resolve_named(model: str, progress: bool = False) -> str:
    """The checkpoint directory behind fastapply's own model names (fetched or merged on first use);
    any other name or path as it is."""
    if Path(model).exists():
        return model
    from fastapply import basemodel, bundled

    if model == bundled.NAME:
        return str(bundled.checkpoint(progress))
    if model == basemodel.BASE.name:
        return str(basemodel.checkpoint(progress=progress))
    return model


def with_adapter(lm, adapter: str):
    from peft import PeftModel

    if not Path(adapter).exists():
        raise FastapplyError(f"adapter path {adapter} does not exist")
    with warnings.catch_warnings():
        # peft asks the model for `is_gradient_checkpointing`, which transformers 5 deprecates loudly.
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing", category=FutureWarning)
        return PeftModel.from_pretrained(lm, adapter)


def stop_ids_of(model, tokenizer) -> set[int]:
    """Token ids that end generation: the tokenizer's EOS and the model's generation-config EOS ids."""
    ids: set[int] = set()
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(configured, int):
        ids.add(configured)
    elif configured:
        ids.update(configured)
    return ids


def synchronize(device) -> None:
    """Wait for ``device``'s queued work (a CUDA device; nothing to wait for elsewhere), so a timer reads
    the work's end, not its launch."""
    import torch

    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def cache_keyword(model) -> str:
    """The keyword ``model``'s forward takes its KV cache under: ``cache`` from transformers 5.24 on,
    ``past_key_values`` before (5.24 still takes that with a deprecation warning, a later 5.x will not).
    Read off the decoder's forward, which names its keywords where a wrapper's (peft's, or a subclass
    that scales the logits) may take ``**kwargs`` and pass them on."""
    import inspect

    core = model.get_base_model() if hasattr(model, "get_base_model") else model
    decoder = core.get_decoder() if hasattr(core, "get_decoder") else core
    return "cache" if "cache" in inspect.signature(decoder.forward).parameters else "past_key_values"


def output_head(model):
    """The ``lm_head`` of a transformers causal LM, or of the model under a peft adapter."""
    core = model.get_base_model() if hasattr(model, "get_base_model") else model
    return core.get_output_embeddings()


def expect_many_requests(model) -> None:
    """``model`` will serve many requests in this process (a bench, an eval, a server): its output layer's
    int8 screen, where one is used, is built at the first request instead of mid-run (``screen.build_early``),
    so the verify costs measured with it are too, in the first request or a warm-up, not in a timed one."""
    from fastapply.screen import build_early

    head = output_head(model)
    if head is not None:
        build_early(head.weight)


def cache_dir() -> Path:
    """fastapply's cache: the fetched base, merged models, measured verify costs."""
    return Path(os.environ.get("FASTAPPLY_CACHE_DIR", Path.home() / ".cache" / "fastapply"))
