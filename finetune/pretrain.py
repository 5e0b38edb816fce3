"""Pretraining fastapply-small from scratch: a code tokenizer, a token file, and a resumable causal
language-model loop over it. Fine-tuning on apply examples is ``finetune.train`` (full mode) and the
release into ``models/`` is ``finetune.ship``; the whole recipe, with the GPU's figures, is in
finetune/README.md.

    python -m data.build_corpus --out runs/corpus
    python -m finetune.pretrain tokenizer --corpus runs/corpus --out runs/small/tokenizer --vocab-size 8192
    python -m finetune.pretrain tokens --corpus runs/corpus --tokenizer runs/small/tokenizer --out runs/small/tokens
    python -m finetune.pretrain train --tokens runs/small/tokens --tokenizer runs/small/tokenizer \\
        --out runs/small/pretrain --shape fastapply-small --context 8192 --batch-size 16 --steps 1500 --minutes 8
    python -m finetune.pretrain train ... --resume      # the same command again continues where it stopped

Documents are joined with ``</s>`` and cut into random windows of ``--context`` tokens (positions are
drawn from the step number and the seed, so a resumed run sees the batches an unbroken one would).
Every ``--eval-every`` steps and at the end the loss on held-out documents is logged in bits per byte.
A run stops at ``--steps``, at ``--stop-at`` or after ``--minutes``, saving a checkpoint that
``fastapply --model`` and ``finetune.train`` load as they are, plus ``trainer.pt`` for ``--resume``.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
import time
from collections.abc import Iterable
from functools import partial
from pathlib import Path

from fastapply.errors import FastapplyError, UsageError
from fastapply.prompt import encode_text, get_preset
from finetune.examples import bits_per_byte
from finetune.scratch import SHAPES, new_llama, train_tokenizer
from finetune.train import lr_factor

log = logging.getLogger("finetune.pretrain")

VALID_EVERY = 100  # every 100th document is held out
ENCODE_BATCH = 256  # documents per tokenizer call


def corpus_texts(corpus: str | Path) -> Iterable[str]:
    from data.build_corpus import iter_texts

    if not Path(corpus).is_dir():
        raise UsageError(f"corpus {corpus} is not a directory (build it with python -m data.build_corpus)")
    return iter_texts(corpus)


def build_tokenizer(corpus: str | Path, out: str | Path, vocab_size: int, max_bytes: int, preset: str = "default"):
    """Train the BPE tokenizer on the first ``max_bytes`` of the corpus, with the preset's tags as tokens."""
    def sample():
        seen = 0
        for text in corpus_texts(corpus):
            if seen >= max_bytes:
                return
            seen += len(text)
            yield text

    tokenizer = train_tokenizer(sample(), vocab_size, tags=get_preset(preset).tags())
    tokenizer.save_pretrained(out)
    return tokenizer


def encode_corpus(corpus: str | Path, tokenizer_dir: str | Path, out: str | Path, workers: int | None = None) -> dict:
    """Write ``train.bin`` and ``valid.bin`` (uint16 token ids, documents ended by EOS) and ``meta.json``.

    File text is encoded as fastapply encodes a user's file: text that looks like a tag stays text.
    Batches of documents are encoded by ``workers`` processes (default: one per core), in order."""
    import multiprocessing

    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    if len(tokenizer) > 2**16:
        raise UsageError(f"vocabulary of {len(tokenizer)} does not fit uint16 token files")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    meta = {split: {"documents": 0, "tokens": 0, "bytes": 0} for split in ("train", "valid")}
    files = {split: open(out / f"{split}.bin", "wb") for split in meta}
    index = 0
    try:
        with multiprocessing.get_context("spawn").Pool(workers, _load_encoder, (str(tokenizer_dir),)) as pool:
            for batch, encoded in pool.imap(_encode, _batches(corpus_texts(corpus), ENCODE_BATCH)):
                for n_bytes, ids in zip(batch, encoded):
                    split = "valid" if index % VALID_EVERY == VALID_EVERY - 1 else "train"
                    ids.tofile(files[split])
                    meta[split]["documents"] += 1
                    meta[split]["tokens"] += len(ids)
                    meta[split]["bytes"] += n_bytes
                    index += 1
    finally:
        for handle in files.values():
            handle.close()
    if not meta["train"]["tokens"] or not meta["valid"]["tokens"]:
        raise UsageError(f"corpus {corpus} has {index} documents; at least {VALID_EVERY} are needed")
    meta["vocab_size"] = len(tokenizer)
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


_encoder = None


def _load_encoder(tokenizer_dir: str) -> None:
    global _encoder
    from transformers import AutoTokenizer

    _encoder = AutoTokenizer.from_pretrained(tokenizer_dir)


def _encode(batch: list[str]):
    """(UTF-8 sizes, uint16 ids each ended by EOS) of a batch of documents, in a worker process."""
    import numpy as np

    eos = _encoder.eos_token_id
    return ([len(text.encode("utf-8")) for text in batch],
            [np.asarray([*encode_text(_encoder, text), eos], dtype=np.uint16) for text in batch])


def _batches(texts: Iterable[str], size: int) -> Iterable[list[str]]:
    batch: list[str] = []
    for text in texts:
        batch.append(text)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


class Windows:
    """Random training windows and fixed held-out windows of one token directory."""

    def __init__(self, tokens: str | Path, context: int, seed: int):
        import numpy as np

        tokens = Path(tokens)
        try:
            self.meta = json.loads((tokens / "meta.json").read_text())
        except OSError:
            raise UsageError(f"{tokens} has no meta.json (make it with: python -m finetune.pretrain tokens)") from None
        self.train = np.memmap(tokens / "train.bin", dtype=np.uint16, mode="r")
        self.valid = np.memmap(tokens / "valid.bin", dtype=np.uint16, mode="r")
        if min(len(self.train), len(self.valid)) <= context:
            raise UsageError(f"{tokens} holds too few tokens for windows of {context}")
        self.context, self.seed = context, seed

    def batch(self, step: int, micro: int, size: int):
        """``size`` windows of ``context`` + 1 tokens, the same for the same (seed, step, micro)."""
        import numpy as np
        import torch

        rng = np.random.default_rng([self.seed, step, micro])
        starts = rng.integers(0, len(self.train) - self.context - 1, size=size)
        return torch.from_numpy(np.stack([self.train[s:s + self.context + 1] for s in starts]).astype(np.int64))

    def held_out(self, count: int):
        """Up to ``count`` evenly spaced held-out windows."""
        import numpy as np
        import torch

        span = self.context + 1
        count = max(1, min(count, len(self.valid) // span))
        starts = np.linspace(0, len(self.valid) - span, count).astype(np.int64)
        return torch.from_numpy(np.stack([self.valid[s:s + span] for s in starts]).astype(np.int64))

    def bits_per_byte(self, nats_per_token: float) -> float:
        valid = self.meta["valid"]
        return bits_per_byte(nats_per_token / math.log(2) * valid["tokens"], valid["bytes"])


def pretrain(args: argparse.Namespace) -> dict:
    """Train (or resume) as the ``train`` command's arguments say; return the run's summary."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from fastapply.target import resolve_device

    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    out = Path(args.out)
    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    windows = Windows(args.tokens, args.context, args.seed)
    if windows.meta["vocab_size"] != len(tokenizer):
        raise UsageError(f"{args.tokens} was made with a vocabulary of {windows.meta['vocab_size']}, "
                         f"the tokenizer has {len(tokenizer)}")
    state = _resume_state(out) if args.resume else None
    if state is not None:
        model = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
    else:
        model = new_llama(len(tokenizer), args.shape, max_positions=max(args.context, 8192), seed=args.seed)
    model.to(device).train()
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1,
                                  fused=device == "cuda")
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, partial(lr_factor, warmup=args.warmup, total=args.steps))
    step, history = 0, {"log": [], "evals": []}
    if state is not None:
        step, history = state["step"], state["history"]
        if "optimizer" in state:
            optimizer.load_state_dict(state["optimizer"])
            scheduler.load_state_dict(state["scheduler"])
        else:  # weights only: fresh moments, the schedule picks up at the step reached
            scheduler.last_epoch = step
            for group in optimizer.param_groups:
                group["lr"] = args.lr * lr_factor(step, args.warmup, args.steps)
        log.info("resumed %s at step %d%s", out, step, "" if "optimizer" in state else " (new optimizer state)")
    forward = torch.compile(model) if args.compile else model
    autocast = (torch.autocast("cuda", dtype=torch.bfloat16) if device == "cuda"
                else torch.autocast("cpu", enabled=False))
    stop = min(args.steps, args.stop_at or args.steps)
    started = window_start = time.perf_counter()
    window_tokens, window_loss, window_steps = 0, 0.0, 0
    while step < stop and time.perf_counter() - started < args.minutes * 60:
        for micro in range(args.grad_accum):
            batch = windows.batch(step, micro, args.batch_size).to(device, non_blocking=True)
            with autocast:
                loss = forward(input_ids=batch, labels=batch).loss
            (loss / args.grad_accum).backward()
            window_loss += float(loss.detach()) / args.grad_accum
            window_tokens += batch.numel() - batch.shape[0]
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        window_steps += 1
        if step % args.log_every == 0 or step == stop:
            if device == "cuda":
                torch.cuda.synchronize()
            seconds = time.perf_counter() - window_start
            entry = {"step": step, "loss": round(window_loss / window_steps, 4),
                     "lr": scheduler.get_last_lr()[0], "tokens_per_s": round(window_tokens / seconds, 1)}
            history["log"].append(entry)
            log.info("step %d/%d  loss %.4f  lr %.2e  %.0f tok/s", step, args.steps, entry["loss"], entry["lr"],
                     entry["tokens_per_s"])
            window_start, window_tokens, window_loss, window_steps = time.perf_counter(), 0, 0.0, 0
        if args.eval_every and step % args.eval_every == 0 and step < stop:
            history["evals"].append(_evaluate(model, windows, args, device, autocast, step))
            window_start = time.perf_counter()
    if not history["evals"] or history["evals"][-1]["step"] != step:
        history["evals"].append(_evaluate(model, windows, args, device, autocast, step))
    history["seconds"] = history.get("seconds", 0.0) + round(time.perf_counter() - started, 1)
    summary = {"step": step, "steps": args.steps, "done": step >= args.steps, "device": device,
               "parameters": sum(p.numel() for p in model.parameters()), "shape": args.shape,
               "context": args.context, "trained_tokens": step * args.batch_size * args.grad_accum * args.context,
               **history}
    _save(model, tokenizer, optimizer, scheduler, step, history, summary, out)
    return summary


def _evaluate(model, windows: Windows, args, device: str, autocast, step: int) -> dict:
    import torch

    model.eval()
    nats, count = 0.0, 0
    with torch.no_grad():
        for window in windows.held_out(args.eval_windows).split(args.batch_size):
            window = window.to(device)
            with autocast:
                nats += float(model(input_ids=window, labels=window).loss) * window.shape[0]
            count += window.shape[0]
    model.train()
    loss = nats / count
    entry = {"step": step, "loss": round(loss, 4), "bits_per_byte": round(windows.bits_per_byte(loss), 4)}
    log.info("step %d  held-out loss %.4f  %.4f bits/byte", step, loss, entry["bits_per_byte"])
    return entry


def _save(model, tokenizer, optimizer, scheduler, step: int, history: dict, summary: dict, out: Path) -> None:
    """A loadable checkpoint in ``out`` (shards small enough to copy anywhere) and the trainer's state."""
    import torch

    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, max_shard_size="15MB")
    tokenizer.save_pretrained(out)
    torch.save({"step": step, "history": history, "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict()}, out / "trainer.pt")
    (out / "pretrain.json").write_text(json.dumps(summary, indent=2) + "\n")


def _resume_state(out: Path) -> dict:
    """The trainer state saved in ``out``. A checkpoint copied without ``trainer.pt`` (weights and
    ``pretrain.json`` only) gives the step and history alone, and training goes on with a fresh optimizer."""
    import torch

    if (out / "trainer.pt").exists():
        return torch.load(out / "trainer.pt", weights_only=False)
    if (out / "pretrain.json").exists() and (out / "config.json").exists():
        summary = json.loads((out / "pretrain.json").read_text())
        return {"step": summary["step"], "history": {k: summary[k] for k in ("log", "evals", "seconds")}}
    raise UsageError(f"--resume: {out} holds no checkpoint to resume")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    tok = commands.add_parser("tokenizer", help="train the BPE tokenizer on a corpus")
    tok.add_argument("--corpus", required=True)
    tok.add_argument("--out", required=True)
    tok.add_argument("--vocab-size", type=int, default=8192)
    tok.add_argument("--max-bytes", type=int, default=200_000_000, help="train on this much of the corpus")
    tok.add_argument("--preset", default="default", help="prompt preset whose tags become tokens")
    enc = commands.add_parser("tokens", help="encode a corpus into token files")
    enc.add_argument("--corpus", required=True)
    enc.add_argument("--tokenizer", required=True)
    enc.add_argument("--out", required=True)
    enc.add_argument("--workers", type=int, default=None, help="encoding processes (default: one per core)")
    run = commands.add_parser("train", help="pretrain (or --resume) a model on token files")
    run.add_argument("--tokens", required=True)
    run.add_argument("--tokenizer", required=True)
    run.add_argument("--out", required=True)
    run.add_argument("--shape", default="fastapply-small", choices=sorted(SHAPES))
    run.add_argument("--context", type=int, default=8192)
    run.add_argument("--batch-size", type=int, default=16)
    run.add_argument("--grad-accum", type=int, default=1)
    run.add_argument("--steps", type=int, required=True, help="length of the learning-rate schedule")
    run.add_argument("--stop-at", type=int, default=None, help="stop (and save) at this step")
    run.add_argument("--minutes", type=float, default=math.inf, help="stop (and save) after this long")
    run.add_argument("--lr", type=float, default=2e-3)
    run.add_argument("--warmup", type=int, default=100)
    run.add_argument("--eval-every", type=int, default=0)
    run.add_argument("--eval-windows", type=int, default=32)
    run.add_argument("--log-every", type=int, default=10)
    run.add_argument("--device", default="auto")
    run.add_argument("--threads", type=int, default=None)
    run.add_argument("--compile", action="store_true", help="torch.compile the model (GPU)")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--resume", action="store_true", help="continue the run saved in --out")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    try:
        if args.command == "tokenizer":
            tokenizer = build_tokenizer(args.corpus, args.out, args.vocab_size, args.max_bytes, args.preset)
            print(f"wrote {args.out}: vocabulary {len(tokenizer)}")
        elif args.command == "tokens":
            meta = encode_corpus(args.corpus, args.tokenizer, args.out, args.workers)
            print(json.dumps(meta))
        else:
            summary = pretrain(args)
            print(json.dumps({k: v for k, v in summary.items() if k != "log"}))
    except FastapplyError as exc:
        print(f"finetune.pretrain: error: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
