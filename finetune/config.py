"""The training configuration: one frozen dataclass, read from a YAML file in ``finetune/configs/``.

A YAML file names only the fields it changes; everything else keeps the default below. Unknown keys
are an error (a typo must not silently train with a default). This module does not load models or
data; ``train.py`` does.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from fastapply.errors import UsageError

MODES = ("lora", "full")
AUTOCAST = ("auto", "bfloat16", "off")

# Every linear layer of a Llama block. Adapting the MLP as well as attention is what makes LoRA
# approach full fine-tuning on code tasks; it costs ~2.5x the adapter parameters of attention alone.
LLAMA_LINEAR_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True)
class TrainConfig:
    base_model: str  # local checkpoint directory or hub id of a Llama-family causal LM
    train_file: str  # JSONL records with original, update, instruction, expected (data/build_train.py)
    eval_file: str | None = None  # held-out JSONL in the same schema; reported in bits per byte
    mode: str = "lora"  # "lora" trains an adapter; "full" trains every weight (small models only)
    preset: str = "default"  # prompt preset (fastapply.prompt); must match the one used at apply time

    # LoRA. alpha / rank is the scale of the update; alpha = 2 * rank is the usual starting point.
    lora_rank: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    target_modules: tuple[str, ...] = LLAMA_LINEAR_MODULES
    # A trained LoRA adapter to start from (its own rank and modules replace the three above; the
    # optimizer and schedule start fresh): a directory, or "fastapply-small" for the shipped one.
    init_adapter: str | None = None

    # Optimisation. One step is one optimizer update = batch_size * grad_accum examples.
    learning_rate: float = 2e-4  # right for LoRA; full fine-tuning wants ~1e-5
    weight_decay: float = 0.0
    warmup_steps: int = 20  # linear warm-up, then cosine decay to 10% of the peak
    max_grad_norm: float = 1.0
    epochs: float = 1.0  # may be fractional
    max_steps: int | None = None  # when set, overrides epochs
    max_minutes: float | None = None  # stop (saving a resumable checkpoint) after this long; the schedule stays
    batch_size: int = 1  # examples per forward pass; whole files are long, so accumulate instead
    # On a GPU: a forward pass takes examples of similar length up to this many tokens, padding included
    # (batch_size is then not used for training); 0 batches by batch_size. Launching a pass's kernels
    # costs the host as much time as a short example's arithmetic: batch 1 leaves a GPU waiting.
    batch_tokens: int = 0
    grad_accum: int = 16
    max_length: int = 8192  # prompt + answer tokens; longer examples are skipped (and counted), not cut
    edit_weight: float = 1.0  # loss weight of answer tokens that are not a copy of the original (1: plain mean)

    # Runtime.
    device: str = "auto"  # auto, cpu, cuda, mps
    dtype: str = "auto"  # base weights: bfloat16 on GPU, float32 on CPU (full mode keeps float32 master weights)
    # auto: bfloat16 matmuls on a GPU and on a CPU with AVX512-BF16 or AMX (~1.35x there); bfloat16: on
    # any device (emulated, several times slower than float32, on other CPUs); off
    autocast: str = "auto"
    gradient_checkpointing: bool = True  # recompute activations in backward: ~30% slower, far less memory
    seed: int = 0
    log_every: int = 10  # steps
    eval_every: int = 0  # steps; 0 evaluates only at the end
    save_every: int = 0  # steps; 0 saves a resumable checkpoint only at the end
    eval_limit: int | None = None  # evaluate on at most this many held-out examples
    num_threads: int | None = None  # torch CPU threads; None leaves torch's default

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise UsageError(f"unknown mode {self.mode!r}; choose one of: {', '.join(MODES)}")
        if self.batch_tokens < 0:
            raise UsageError(f"batch_tokens must be 0 or more, not {self.batch_tokens}")
        for name in ("lora_rank", "batch_size", "grad_accum", "max_length"):
            if getattr(self, name) < 1:
                raise UsageError(f"{name} must be at least 1, not {getattr(self, name)}")
        if self.autocast not in AUTOCAST:
            raise UsageError(f"unknown autocast {self.autocast!r}; choose one of: {', '.join(AUTOCAST)}")
        if self.max_steps is None and self.epochs <= 0:
            raise UsageError("set epochs > 0 or max_steps")
        if self.init_adapter is not None and self.mode != "lora":
            raise UsageError("init_adapter starts a LoRA run; it does not apply to mode: full")
        object.__setattr__(self, "target_modules", tuple(self.target_modules))

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["target_modules"] = list(self.target_modules)
        return d

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.as_dict(), indent=1) + "\n")


def load_config(path: str | Path, **overrides) -> TrainConfig:
    """A ``TrainConfig`` from a YAML (or JSON) file, with ``overrides`` (not None) applied on top.

    Relative data paths in the file are taken relative to the current directory, as on the command line.
    """
    import yaml

    try:
        values = yaml.safe_load(Path(path).read_text()) or {}
    except OSError as exc:
        raise UsageError(f"cannot read config {path}: {exc.strerror}") from None
    if not isinstance(values, dict):
        raise UsageError(f"config {path} must be a mapping of field: value")
    values.update({k: v for k, v in overrides.items() if v is not None})
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise UsageError(f"unknown config keys in {path}: {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    missing = [name for name in ("base_model", "train_file") if name not in values]
    if missing:
        raise UsageError(f"config {path} must set {', '.join(missing)}")
    return TrainConfig(**values)
