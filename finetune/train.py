"""Fine-tune a Llama-family model to apply code edits: LoRA (peft) or full fine-tuning, a plain PyTorch loop.

    python -m finetune.scratch --out runs/tiny --shape tiny                # a tiny base model, for a smoke run
    python -m finetune.demo_data --out runs/demo                            # stand-in data for a smoke run
    python -m finetune.train finetune/configs/tiny.yaml --out runs/tiny-lora
    python -m finetune.train finetune/configs/llama-3.2-1b.yaml --out runs/llama-1b-lora
    python -m finetune.train finetune/configs/llama-3.2-1b.yaml --out runs/llama-1b-lora \\
        --resume runs/llama-1b-lora/checkpoint-000400                       # continue an interrupted run
    python -m finetune.train finetune/configs/fastapply-small.yaml --out runs/my-apply \\
        --init-adapter fastapply-small --train-file my-edits.jsonl          # fastapply-small on your own edits
    fastapply FILE --edit "..." --model meta-llama/Llama-3.2-1B-Instruct --adapter runs/llama-1b-lora

The loss is on the answer tokens only (the prompt is labelled -100), averaged over the answer tokens
of each optimizer step. Held-out loss is reported in bits per byte of answer text, beside how many
held-out examples greedy decoding would write exactly (every answer token the model's top choice).
``--out`` receives the adapter (LoRA) or the whole checkpoint with its tokenizer (full),
``train_config.json``, ``metrics.json`` and ``trainer_state.pt`` (optimizer, scheduler, step, random
state), so it can be resumed or extended; ``save_every`` adds resumable ``checkpoint-NNNNNN/`` folders inside it.
This module does not build data (``data/build_train.py``) or merge adapters (``merge.py``).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import resource
import sys
import time
import warnings
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from fastapply.errors import FastapplyError, UsageError
from fastapply.loading import synchronize
from fastapply.prompt import get_preset
from finetune.config import TrainConfig, load_config
from finetune.examples import (IGNORE, answer_nats, batch_stream, build_examples, collate, epoch_token_batches,
                               label_weights, read_records)
from finetune.heldout import answer_logits, evaluate
from finetune.ship import training_record

log = logging.getLogger("finetune")
STATE_FILE = "trainer_state.pt"


@dataclass(frozen=True)
class TrainResult:
    out_dir: Path
    steps: int
    train_loss: float  # mean NLL per answer token (nats) over the last logging window
    eval_bits_per_byte: float | None  # held-out, at the end; None without an eval file
    tokens_per_s: float  # prompt + answer tokens through forward and backward, per second of training
    peak_rss_mib: float  # peak resident memory of this process
    peak_gpu_mib: float | None  # peak CUDA memory allocated; None off CUDA
    model: object = field(default=None, repr=False, compare=False)  # the trained model, still in memory


def train(config: TrainConfig, out_dir: str | Path, resume: str | Path | None = None) -> TrainResult:
    """Train as ``config`` says, writing the result to ``out_dir``; ``resume`` is a directory with a trainer state."""
    import torch

    from fastapply.loading import resolve_device

    out_dir = Path(out_dir)
    resume_dir = _resume_dir(resume, config) if resume is not None else None
    if config.num_threads:
        torch.set_num_threads(config.num_threads)
    torch.manual_seed(config.seed)
    device = resolve_device(config.device)
    model, tokenizer = load_for_training(config, device, resume_dir)
    preset = get_preset(config.preset)
    records = read_records(config.train_file)
    # Thousands of whole files: tokenized on every core (a GPU would otherwise wait minutes for one).
    workers = min(os.cpu_count() or 1, 16) if len(records) >= 1000 else 1
    train_set = build_examples(tokenizer, preset, records, config.max_length, config.edit_weight, workers)
    if not train_set.examples:
        raise UsageError(f"no training examples in {config.train_file} fit max_length {config.max_length}")
    eval_set = None
    if config.eval_file:
        eval_records = read_records(config.eval_file)[:config.eval_limit]
        eval_set = build_examples(tokenizer, preset, eval_records, config.max_length)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    lengths = [len(e.input_ids) for e in train_set.examples]
    per_epoch = len(epoch_token_batches(lengths, config.batch_tokens, config.seed)) if config.batch_tokens else \
        math.ceil(len(train_set.examples) / config.batch_size)
    total_steps = config.max_steps or math.ceil(config.epochs * per_epoch / config.grad_accum)

    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer, scheduler, step, history = optimizer_state(trainable, config, total_steps, resume_dir,
                                                          fused=device == "cuda")

    metrics = {
        "init_adapter": starting_record(config, resume_dir),
        "device": device, "mode": config.mode, "total_steps": total_steps,
        "trainable_parameters": sum(p.numel() for p in trainable),
        "parameters": sum(p.numel() for p in model.parameters()),
        "train_examples": len(train_set.examples), "train_tokens": train_set.tokens,
        "skipped_too_long": {"train": train_set.skipped_too_long,
                             "eval": eval_set.skipped_too_long if eval_set else 0},
        **history,
    }
    log.info("%d training examples (%d skipped as longer than %d tokens), %d steps, %d trainable parameters",
             len(train_set.examples), train_set.skipped_too_long, config.max_length, total_steps,
             metrics["trainable_parameters"])
    autocast = autocast_context(device, config.autocast)
    if eval_set is not None and step == 0:
        _record_eval(model, eval_set.examples, pad_id, config.batch_size, device, autocast, step, metrics)

    start = step * config.grad_accum
    stream = batch_stream(lengths, config.batch_size, config.batch_tokens, config.seed, start)
    window_nats = window_answer = window_tokens = 0.0
    window_start, train_seconds, trained_tokens, loss = time.perf_counter(), 0.0, 0, float("nan")
    model.train()
    deadline = time.perf_counter() + config.max_minutes * 60 if config.max_minutes else math.inf
    while step < total_steps and time.perf_counter() < deadline:
        batches = [[train_set.examples[i] for i in next(stream)] for _ in range(config.grad_accum)]
        group = [collate(batch, pad_id) for batch in batches]
        answer_tokens = sum(int((labels != IGNORE).sum()) for _, _, labels in group)
        weights = [label_weights(batch, labels.shape[1]) * (labels != IGNORE) for batch, (_, _, labels) in
                   zip(batches, group)] if config.edit_weight != 1.0 else None
        total_weight = sum(float(w.sum()) for w in weights) if weights else answer_tokens
        for index, (input_ids, mask, labels) in enumerate(group):
            input_ids, mask, labels = input_ids.to(device), mask.to(device), labels.to(device)
            with autocast:
                logits, targets = answer_logits(model, input_ids, mask, labels)
                token_nats = answer_nats(logits, targets)  # [B, S]: one log-softmax serves both sums
                nats = token_nats.sum()
                weighted = nats if weights is None else (
                    token_nats * weights[index][:, -targets.shape[1]:].to(device)).sum()
            (weighted / total_weight).backward()
            window_nats += float(nats.detach())
            window_tokens += int(mask.sum())
        window_answer += answer_tokens
        torch.nn.utils.clip_grad_norm_(trainable, config.max_grad_norm)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        if step % config.log_every == 0 or step == total_steps or time.perf_counter() >= deadline:
            synchronize(device)
            seconds = time.perf_counter() - window_start
            loss = window_nats / window_answer
            metrics["log"].append({"step": step, "loss": round(loss, 5), "lr": scheduler.get_last_lr()[0],
                                   "tokens_per_s": round(window_tokens / seconds, 1)})
            log.info("step %d/%d  loss %.4f  lr %.2e  %.0f tok/s", step, total_steps, loss,
                     scheduler.get_last_lr()[0], window_tokens / seconds)
            train_seconds += seconds
            trained_tokens += int(window_tokens)
            window_nats = window_answer = window_tokens = 0.0
            window_start = time.perf_counter()
        if step < total_steps and config.eval_every and step % config.eval_every == 0 and eval_set is not None:
            _record_eval(model, eval_set.examples, pad_id, config.batch_size, device, autocast, step, metrics)
            window_start = time.perf_counter()
        if step < total_steps and config.save_every and step % config.save_every == 0:
            _save(model, tokenizer, config, out_dir / f"checkpoint-{step:06d}", optimizer, scheduler, step, metrics)
            window_start = time.perf_counter()

    if eval_set is not None and (not metrics["evals"] or metrics["evals"][-1]["step"] != step):
        _record_eval(model, eval_set.examples, pad_id, config.batch_size, device, autocast, step, metrics)
    scale = 1024 if sys.platform != "darwin" else 2**20  # ru_maxrss is KiB on Linux, bytes on macOS
    result = TrainResult(
        out_dir=out_dir, steps=step, train_loss=loss,
        eval_bits_per_byte=metrics["evals"][-1]["bits_per_byte"] if metrics["evals"] else None,
        tokens_per_s=trained_tokens / train_seconds if train_seconds else 0.0,
        peak_rss_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale,
        peak_gpu_mib=torch.cuda.max_memory_allocated() / 2**20 if device == "cuda" else None,
        model=model,
    )
    metrics.update({"train_loss": result.train_loss, "eval_bits_per_byte": result.eval_bits_per_byte,
                    "tokens_per_s": round(result.tokens_per_s, 1), "peak_rss_mib": round(result.peak_rss_mib, 1),
                    "peak_gpu_mib": result.peak_gpu_mib and round(result.peak_gpu_mib, 1)})
    _save(model, tokenizer, config, out_dir, optimizer, scheduler, step, metrics)
    return result


def load_for_training(config: TrainConfig, device: str, resume_dir: Path | None = None):
    """(model, tokenizer) ready to train: LoRA-wrapped (or whole, in full mode), checkpointing set up."""
    from fastapply.loading import load_model

    if config.mode == "full":
        # Full fine-tuning keeps float32 master weights; on a GPU the forward runs under bf16 autocast.
        model, tokenizer = load_model(str(resume_dir or absolute_if_local(config.base_model)), device, "float32")
    else:
        model, tokenizer = load_model(absolute_if_local(config.base_model), device, config.dtype)
    model.config.use_cache = False
    if config.gradient_checkpointing:
        enable = getattr(model, "activation_checkpointing_enable", None) or model.gradient_checkpointing_enable
        enable({"use_reentrant": False})  # non-reentrant: works with frozen embeddings, no input-grad hook
    if config.mode == "full":
        return model, tokenizer
    from peft import LoraConfig, PeftModel, get_peft_model

    with warnings.catch_warnings():
        # peft asks the model for `is_gradient_checkpointing`, which transformers 5 deprecates loudly.
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing", category=FutureWarning)
        start = resume_dir or initial_adapter(config.init_adapter)
        if start is not None:
            return PeftModel.from_pretrained(model, str(start), is_trainable=True), tokenizer
        lora = LoraConfig(r=config.lora_rank, lora_alpha=config.lora_alpha, lora_dropout=config.lora_dropout,
                          target_modules=list(config.target_modules), bias="none", task_type="CAUSAL_LM")
        return get_peft_model(model, lora), tokenizer


def _saved_embeddings(model) -> bool | str:
    """peft's ``save_embedding_layers`` for a LoRA model: its own choice (``"auto"``) where the adapter may
    train the embeddings or the output layer, else False. peft's choice for an adapter that trains
    neither asks the model hub for the base's config to compare vocabularies: a network request at every
    checkpoint, and a warning where the base is a name of fastapply's own (``smollm2-135m-instruct``)."""
    from peft.utils.constants import EMBEDDING_LAYER_NAMES

    targets = model.peft_config[model.active_adapter].target_modules or ()
    if isinstance(targets, str) or any(name.rsplit(".", 1)[-1] in EMBEDDING_LAYER_NAMES for name in targets):
        return "auto"
    return False


def initial_adapter(name: str | None) -> Path | None:
    """The adapter directory a run starts from: ``fastapply-small`` is the one shipped in the package."""
    from finetune.merge import adapter_dir

    return None if name is None else adapter_dir(name, "init_adapter")


def starting_record(config: TrainConfig, resume_dir: Path | None) -> dict | None:
    """What the adapter the run starts from records of its own training (``finetune.ship.training_record``),
    named as the config names it: kept in the run's metrics, so that a release of a run that continued
    another still says how that one was trained. A resumed run keeps what its first stretch recorded;
    None for a run from the bare base."""
    if resume_dir is not None:
        return json.loads((resume_dir / "metrics.json").read_text()).get("init_adapter")
    start = initial_adapter(config.init_adapter)
    return None if start is None else {"name": config.init_adapter, **training_record(start)}


def absolute_if_local(model: str) -> str:
    """A local checkpoint as an absolute path (the adapter records it, for merge.py), a hub id as it is."""
    path = Path(model).expanduser()
    return str(path.resolve()) if path.exists() else model


def lr_factor(step: int, warmup: int, total: int) -> float:
    """Learning-rate multiplier: linear warm-up over ``warmup`` steps, then cosine decay to 0.1 at ``total``.
    E.g. warmup=10, total=110: step 0 -> 0.1, step 9 -> 1.0, step 60 -> 0.55, step 110 -> 0.1."""
    if step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress))


def _record_eval(model, examples, pad_id, batch_size, device, autocast, step, metrics) -> None:
    held_out = evaluate(model, examples, pad_id, batch_size, device, autocast)
    metrics["evals"].append({"step": step, "bits_per_byte": round(held_out.bits_per_byte, 5),
                             "greedy_exact": held_out.greedy_exact, "examples": held_out.examples,
                             "misses_per_1000": round(held_out.misses_per_1000, 3)})
    log.info("step %d  held-out %.4f bits per byte; greedy writes %d of %d exactly (%.2f misses per 1,000 "
             "answer tokens)", step, held_out.bits_per_byte, held_out.greedy_exact, held_out.examples,
             held_out.misses_per_1000)


def autocast_context(device: str, setting: str = "auto"):
    """The context the forward passes run in: bfloat16 autocast (trainable weights stay float32) under
    "auto" on a GPU and on a CPU that computes bfloat16 natively, on any device under "bfloat16" (with a
    warning on a CPU that does not: it is emulated there, several times slower than float32), nowhere
    under "off"."""
    import contextlib

    import torch

    native = setting != "off" and (device == "cuda" or (device == "cpu" and cpu_has_bfloat16()))
    if setting == "bfloat16" and device == "cpu" and not native:
        log.warning("this CPU has no native bfloat16 (AVX512-BF16 or AMX): bfloat16 autocast is emulated, "
                    "several times slower than float32 (autocast: off or auto)")
    if setting == "bfloat16" or (setting == "auto" and native):
        return torch.autocast(device, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def cpu_has_bfloat16(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether this machine's CPU computes bfloat16 natively (the avx512_bf16 or amx_bf16 flag; False
    where the flags cannot be read)."""
    try:
        flags = set(Path(cpuinfo).read_text().split())
    except OSError:
        return False
    return bool(flags & {"avx512_bf16", "amx_bf16"})


def _save(model, tokenizer, config: TrainConfig, directory: Path, optimizer, scheduler, step: int,
          metrics: dict) -> None:
    """Weights (adapter, or the whole model and its tokenizer), config, metrics and the trainer state."""
    directory.mkdir(parents=True, exist_ok=True)
    if config.mode == "full":
        model.save_pretrained(directory)
        tokenizer.save_pretrained(directory)
    else:
        model.save_pretrained(directory, save_embedding_layers=_saved_embeddings(model))
    config.save(directory / "train_config.json")
    save_state(directory, optimizer, scheduler, step, metrics)


def save_state(directory: Path, optimizer, scheduler, step: int, metrics: dict) -> None:
    """The run's metrics and the trainer state (step, optimizer, schedule, random generators): what
    ``_load_state`` resumes from."""
    import torch

    (directory / "metrics.json").write_text(json.dumps({**metrics, "step": step}, indent=1) + "\n")
    state = {"step": step, "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
             "torch_rng": torch.get_rng_state(),
             "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}
    torch.save(state, directory / STATE_FILE)
    log.info("saved %s (step %d)", directory, step)


def latest_state(resume: str | Path) -> Path:
    """``resume`` itself when it holds a trainer state, else its latest ``checkpoint-*`` folder."""
    path = Path(resume)
    if (path / STATE_FILE).exists():
        return path
    checkpoints = sorted(path.glob("checkpoint-*/" + STATE_FILE))
    if not checkpoints:
        raise UsageError(f"nothing to resume in {path}: no {STATE_FILE} there or in a checkpoint-* folder")
    return checkpoints[-1].parent


def _resume_dir(resume: str | Path, config: TrainConfig) -> Path:
    """``latest_state(resume)``, refused when it was trained in another mode than ``config``'s."""
    path = latest_state(resume)
    saved_mode = json.loads((path / "train_config.json").read_text())["mode"]
    if saved_mode != config.mode:
        raise UsageError(f"{path} was trained in {saved_mode} mode, the config asks for {config.mode}")
    return path


def optimizer_state(parameters, config, total_steps: int, resume_dir: Path | None, fused: bool = False):
    """AdamW over ``parameters`` with the warm-up then cosine schedule (``lr_factor``), and the step and
    history to start from: 0 and empty, or what ``resume_dir``'s saved state holds (restoring the
    optimizer and scheduler too). ``config`` needs learning_rate, weight_decay and warmup_steps."""
    import torch

    optimizer = torch.optim.AdamW(parameters, lr=config.learning_rate, weight_decay=config.weight_decay, fused=fused)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, partial(lr_factor, warmup=config.warmup_steps, total=total_steps))
    step, history = 0, {"log": [], "evals": []}
    if resume_dir is not None:
        step, history = _load_state(resume_dir, optimizer, scheduler)
        log.info("resumed from %s at step %d", resume_dir, step)
    return optimizer, scheduler, step, history


def _load_state(directory: Path, optimizer, scheduler) -> tuple[int, dict]:
    import torch

    state = torch.load(directory / STATE_FILE, map_location="cpu", weights_only=False)  # our own file (_save)
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["torch_rng"])
    if state["cuda_rng"] is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda_rng"])
    previous = json.loads((directory / "metrics.json").read_text())
    return state["step"], {"log": previous.get("log", []), "evals": previous.get("evals", [])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", help="YAML config (finetune/configs/)")
    parser.add_argument("--out", required=True, help="output directory: adapter or model, config, metrics")
    parser.add_argument("--resume", help="a directory with trainer_state.pt, or a run whose latest checkpoint to take")
    parser.add_argument("--base-model", help="override the config's base_model")
    parser.add_argument("--train-file", help="override the config's train_file")
    parser.add_argument("--eval-file", help="override the config's eval_file")
    parser.add_argument("--max-steps", type=int, help="override the config's max_steps")
    parser.add_argument("--max-minutes", type=float, help="override the config's max_minutes")
    parser.add_argument("--learning-rate", type=float, help="override the config's learning_rate (a run that "
                                                              "starts from a trained adapter may want a lower one)")
    parser.add_argument("--device", help="override the config's device")
    parser.add_argument("--seed", type=int, help="override the config's seed (the batches' order and a new "
                                                 "adapter's start): a second pass over the same edits in another order")
    parser.add_argument("--init-adapter", help="start from this LoRA adapter (fastapply-small: the shipped one), "
                                               "with a fresh optimizer; override the config's init_adapter")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S", stream=sys.stderr)
    try:
        config = load_config(args.config, base_model=args.base_model, train_file=args.train_file,
                             eval_file=args.eval_file, max_steps=args.max_steps,
                             max_minutes=args.max_minutes, device=args.device, init_adapter=args.init_adapter,
                             learning_rate=args.learning_rate, seed=args.seed)
        result = train(config, args.out, args.resume)
    except FastapplyError as exc:
        print(f"finetune: error: {exc}", file=sys.stderr)
        return exc.exit_code
    bpb = "-" if result.eval_bits_per_byte is None else f"{result.eval_bits_per_byte:.4f}"
    print(f"{result.out_dir}: {result.steps} steps, train loss {result.train_loss:.4f}, held-out {bpb} bits/byte, "
          f"{result.tokens_per_s:.0f} tok/s, peak RSS {result.peak_rss_mib:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
