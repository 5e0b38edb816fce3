"""Train Medusa heads on a frozen apply model: extra heads that guess several tokens ahead from its last
hidden state (``fastapply/medusa.py``), drafting where no pointer source has a match.

    python -m finetune.medusa --model fastapply-small --train-file runs/mix4/train.jsonl.gz \\
        --eval-file runs/mix/valid.jsonl.gz --out runs/medusa-small --heads 4 --epochs 1
    python -m finetune.medusa --model fastapply-small --train-file runs/mix4/train.jsonl.gz \\
        --eval-file runs/mix/valid.jsonl.gz --out runs/medusa-small --heads 4 --epochs 1 \\
        --resume runs/medusa-small                                        # continue an interrupted run
    fastapply FILE --edit "..." --draft fastapply+medusa --medusa runs/medusa-small

Each step runs the frozen base once, without gradients, over a batch of examples built as ``train.py``
builds them, takes its final hidden states at ``positions`` sampled answer positions per example, and
trains the heads there: head i at position t learns the token at t+1+i. The targets are by default the
base's own greedy choices under teacher forcing (``--targets greedy``, self-distillation at the cost of
one more ``lm_head`` product): what verification accepts, which is what a draft is for, even where the
base departs from the data; ``--targets labels`` trains on the data itself. Only the heads are trained
and saved. Held out: per head, top-1 and top-k accuracy and loss, and the tokens per pass the heads'
argmax chain would give, on a fixed sample of positions. ``--out`` receives the heads
(``medusa_heads.safetensors``, ``medusa_config.json`` with the final metrics, ``draft_vocab.json`` with
the ``--vocab-size`` ids the training answers use most), ``train_config.json``,
``metrics.json`` and ``trainer_state.pt``; ``--save-every`` adds resumable ``checkpoint-NNNNNN/`` folders.
This module does not fine-tune the base (``train.py``) or draft with the heads (``fastapply/medusa.py``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import math
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from fastapply.draftvocab import VOCAB_SIZE, frequent_tokens
from fastapply.errors import FastapplyError, UsageError
from fastapply.loading import synchronize
from fastapply.prompt import get_preset
from finetune.config import AUTOCAST
from finetune.examples import (
    IGNORE,
    Example,
    build_examples,
    collate,
    label_weights,
    micro_batches,
    read_records,
)
from finetune.train import (
    absolute_if_local,
    autocast_context,
    latest_state,
    optimizer_state,
    save_state,
)

log = logging.getLogger("finetune")
TARGETS = ("greedy", "labels")


@dataclass(frozen=True)
class MedusaTrainConfig:
    model: str  # the frozen base: checkpoint directory, hub id, or fastapply's own name (fastapply-small)
    train_file: str  # JSONL records (data/build_train.py), as for train.py
    eval_file: str | None = None  # held-out records; without one, the last `holdout` training records
    holdout: int = 32  # held-out records (from eval_file, or taken off the end of train_file)
    n_heads: int = 4  # head i guesses the token i after the base's own; later heads are right less often
    targets: str = "greedy"  # greedy: the base's own choices (what verification accepts); labels: the data's
    preset: str = "default"  # prompt preset; the one the base was fine-tuned with
    max_length: int = 8192  # prompt + answer tokens; longer examples are skipped (and counted)

    # Sampling. The frozen forward pass is paid per example, the heads' lm_head products per position.
    positions: int = 256  # answer positions sampled per example per step (all of them when fewer)
    edit_weight: float = 1.0  # sample positions after written (not copied) tokens this many times as often
    eval_positions: int = 256  # per held-out example; the same positions at every evaluation

    # Optimisation. One step is one batch of examples.
    batch_size: int = 4
    learning_rate: float = 1e-3  # Medusa's own for heads on a frozen base
    weight_decay: float = 0.0
    warmup_steps: int = 20  # linear warm-up, then cosine decay to 10% of the peak (train.lr_factor)
    max_grad_norm: float = 1.0
    epochs: float = 1.0  # may be fractional
    max_steps: int | None = None  # when set, overrides epochs
    max_minutes: float | None = None  # stop (saving a resumable state) after this long; the schedule stays
    top_k: int = 4  # held-out top-k accuracy: a candidate tree with k options per head reaches these
    vocab_size: int = VOCAB_SIZE  # the answers' most frequent ids saved as the heads' draft vocabulary; 0: none

    # Runtime.
    device: str = "auto"
    dtype: str = "auto"  # the base's weights: bfloat16 on GPU, float32 on CPU; the heads train in float32
    autocast: str = "auto"  # as train.py: bfloat16 on GPU under auto; "bfloat16" on any device; "off"
    seed: int = 0
    log_every: int = 10  # steps
    eval_every: int = 0  # steps; 0 evaluates only at the start and the end
    save_every: int = 0  # steps; 0 saves a resumable state only at the end
    num_threads: int | None = None  # torch CPU threads; None leaves torch's default

    def __post_init__(self) -> None:
        if self.targets not in TARGETS:
            raise UsageError(f"unknown targets {self.targets!r}; choose one of: {', '.join(TARGETS)}")
        if self.autocast not in AUTOCAST:
            raise UsageError(f"unknown autocast {self.autocast!r}; choose one of: {', '.join(AUTOCAST)}")
        for name in ("n_heads", "holdout", "batch_size", "positions", "eval_positions", "top_k", "max_length"):
            if getattr(self, name) < 1:
                raise UsageError(f"{name} must be at least 1, not {getattr(self, name)}")
        if self.vocab_size < 0:
            raise UsageError(f"vocab_size must be at least 0, not {self.vocab_size}")
        if self.max_steps is None and self.epochs <= 0:
            raise UsageError("set epochs > 0 or max_steps")


@dataclass(frozen=True)
class MedusaTrainResult:
    out_dir: Path
    steps: int
    train_loss: float  # mean NLL per (head, position) in nats over the last logging window
    evaluation: dict  # the last held-out evaluation (see ``evaluate_heads``)
    positions_per_s: float  # sampled positions through base forward and heads' forward and backward, per second
    heads: object = field(default=None, repr=False, compare=False)  # the trained heads, still in memory


def train_heads(config: MedusaTrainConfig, out_dir: str | Path, resume: str | Path | None = None) -> MedusaTrainResult:
    """Train heads on ``config.model`` (kept frozen) as ``config`` says, writing them to ``out_dir``;
    ``resume`` is a directory with a trainer state (or a run whose latest ``checkpoint-*`` to take)."""
    import torch

    from fastapply.medusa import MedusaHeads
    from fastapply.loading import load_model, resolve_device

    out_dir = Path(out_dir)
    resume_dir = latest_state(resume) if resume is not None else None
    if config.num_threads:
        torch.set_num_threads(config.num_threads)
    torch.manual_seed(config.seed)
    device = resolve_device(config.device)
    model, tokenizer = load_model(absolute_if_local(config.model), device, config.dtype)
    model.requires_grad_(False)
    preset = get_preset(config.preset)
    records = read_records(config.train_file)
    if config.eval_file:
        eval_records = read_records(config.eval_file)[:config.holdout]
    else:
        records, eval_records = records[:-config.holdout], records[-config.holdout:]
    train_set = build_examples(tokenizer, preset, records, config.max_length, config.edit_weight)
    eval_set = build_examples(tokenizer, preset, eval_records, config.max_length)
    if not train_set.examples or not eval_set.examples:
        raise UsageError(f"no training or held-out examples fit max_length {config.max_length}")
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    total_steps = config.max_steps or math.ceil(config.epochs * math.ceil(len(train_set.examples) / config.batch_size))

    heads = (MedusaHeads.load(resume_dir, model) if resume_dir else MedusaHeads.new(model, config.n_heads,
                                                                                 absolute_if_local(config.model)))
    heads.float().train()
    heads.vocab = frequent_tokens(([t for t in e.labels if t != IGNORE] for e in train_set.examples),
                                  config.vocab_size) or None
    optimizer, scheduler, step, history = optimizer_state(list(heads.parameters()), config, total_steps, resume_dir)
    metrics = {"device": device, "total_steps": total_steps, "n_heads": heads.config.n_heads, "targets": config.targets,
               "trainable_parameters": sum(p.numel() for p in heads.parameters()),
               "train_examples": len(train_set.examples), "eval_examples": len(eval_set.examples),
               "skipped_too_long": {"train": train_set.skipped_too_long, "eval": eval_set.skipped_too_long},
               **history}
    log.info("%d training examples (%d skipped as longer than %d tokens), %d held out, %d steps, %d heads",
             len(train_set.examples), train_set.skipped_too_long, config.max_length, len(eval_set.examples),
             total_steps, heads.config.n_heads)
    autocast = autocast_context(device, config.autocast)
    decoder = model.get_decoder()  # the final hidden states, without the lm_head product
    evaluate = partial(evaluate_heads, heads, decoder, eval_set.examples, pad_id, config, device, autocast)
    if step == 0:
        _record_eval(evaluate(), step, metrics)

    stream = micro_batches(len(train_set.examples), config.batch_size, config.seed, start=step)
    window_nats = window_count = window_positions = window_examples = 0.0
    window_start, train_seconds, trained_positions, loss = time.perf_counter(), 0.0, 0, float("nan")
    deadline = time.perf_counter() + config.max_minutes * 60 if config.max_minutes else math.inf
    while step < total_steps and time.perf_counter() < deadline:
        batch = [train_set.examples[i] for i in next(stream)]
        generator = torch.Generator().manual_seed(config.seed * 1_000_003 + step)  # the same on resume
        hidden, targets = head_targets(heads, decoder, batch, pad_id, config, device, autocast, generator)
        with autocast:
            logits = heads(hidden)  # [n, N, V]
        nats = torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), targets.T.flatten(),
                                                 ignore_index=IGNORE, reduction="sum")
        count = int((targets != IGNORE).sum())
        (nats / max(count, 1)).backward()
        torch.nn.utils.clip_grad_norm_(heads.parameters(), config.max_grad_norm)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        window_nats, window_count = window_nats + float(nats.detach()), window_count + count
        window_positions += targets.shape[0]
        window_examples += len(batch)
        if step % config.log_every == 0 or step == total_steps or time.perf_counter() >= deadline:
            synchronize(device)
            seconds = time.perf_counter() - window_start
            loss = window_nats / max(window_count, 1)
            metrics["log"].append({"step": step, "loss": round(loss, 5), "lr": scheduler.get_last_lr()[0],
                                   "positions_per_s": round(window_positions / seconds, 1),
                                   "examples_per_s": round(window_examples / seconds, 3)})
            log.info("step %d/%d  loss %.4f  lr %.2e  %.0f positions/s  %.2f examples/s", step, total_steps,
                     loss, scheduler.get_last_lr()[0], window_positions / seconds, window_examples / seconds)
            train_seconds += seconds
            trained_positions += int(window_positions)
            window_nats = window_count = window_positions = window_examples = 0.0
            window_start = time.perf_counter()
        if step < total_steps and config.eval_every and step % config.eval_every == 0:
            _record_eval(evaluate(), step, metrics)
            window_start = time.perf_counter()
        if step < total_steps and config.save_every and step % config.save_every == 0:
            _save(heads, config, out_dir / f"checkpoint-{step:06d}", optimizer, scheduler, step, metrics)
            window_start = time.perf_counter()

    if metrics["evals"][-1]["step"] != step:
        _record_eval(evaluate(), step, metrics)
    positions_per_s = trained_positions / train_seconds if train_seconds else 0.0
    metrics.update({"train_loss": loss, "positions_per_s": round(positions_per_s, 1)})
    _save(heads, config, out_dir, optimizer, scheduler, step, metrics)
    return MedusaTrainResult(out_dir=out_dir, steps=step, train_loss=loss, evaluation=metrics["evals"][-1],
                             positions_per_s=positions_per_s, heads=heads)


def sample_positions(labels, count: int, generator, weights=None):
    """(rows, positions) of up to ``count`` positions per row of ``labels`` [B, L] whose next token is
    labelled: where the base has just chosen an answer token and the heads guess the ones after it.
    ``weights`` [B, L] weigh each position by its next token's weight (none: uniform)."""
    import torch

    rows, positions = [], []
    for row in range(labels.shape[0]):
        where = (labels[row, 1:] != IGNORE).nonzero().squeeze(1)  # t whose token t+1 is an answer token
        if len(where) > count:
            chance = weights[row, where + 1] if weights is not None else torch.ones(len(where))
            where = where[torch.multinomial(chance, count, replacement=False, generator=generator)].sort().values
        rows.append(torch.full_like(where, row))
        positions.append(where)
    return torch.cat(rows), torch.cat(positions)


def head_targets(heads, decoder, batch: list[Example], pad_id: int, config: MedusaTrainConfig, device: str,
                 autocast, generator, base_agreement: list[int] | None = None):
    """The frozen base's hidden states at sampled answer positions of ``batch`` and the heads' targets:
    ``(hidden [N, H], targets [N, n])``, target IGNORE where position t+1+i is past the answer.

    With ``config.targets == "greedy"`` head i's target at t is the base's own choice at t+i (it predicts
    token t+1+i given the data up to t+i); ``base_agreement``, when given, is increased by [positions where
    the base's next token equals the data's, positions].
    """
    import torch

    input_ids, mask, labels = collate(batch, pad_id)
    weights = label_weights(batch, labels.shape[1]) if config.edit_weight != 1.0 else None
    rows, positions = sample_positions(labels, config.positions, generator, weights)
    n = heads.config.n_heads
    ahead = positions[:, None] + torch.arange(n + 1)  # [N, n+1]: t, t+1, ..., t+n
    padded = torch.cat([labels, torch.full((labels.shape[0], n + 1), IGNORE)], dim=1)
    data = padded[rows[:, None], ahead + 1]  # [N, n+1]: the data's token at t+1+i, IGNORE past the answer
    with torch.no_grad(), autocast:
        states = decoder(input_ids=input_ids.to(device), attention_mask=mask.to(device),
                         use_cache=False).last_hidden_state  # [B, L, H]
        hidden = states[rows.to(device), positions.to(device)].float()  # [N, H]
        if config.targets == "labels" and base_agreement is None:
            return hidden, data[:, 1:].to(device)
        valid = data != IGNORE
        needed = ahead[valid]  # positions whose base choice a target needs
        needed_rows = rows[:, None].expand_as(ahead)[valid]
        choices = torch.full_like(data, IGNORE)
        choices[valid] = heads.lm_head(states[needed_rows.to(device), needed.to(device)]).argmax(-1).cpu()
    if base_agreement is not None:  # the base's choice at t against the data's token t+1
        base_agreement[0] += int((choices[:, 0] == data[:, 0]).sum())
        base_agreement[1] += len(data)
    targets = choices if config.targets == "greedy" else data
    return hidden, targets[:, 1:].to(device)


def evaluate_heads(heads, decoder, examples, pad_id: int, config: MedusaTrainConfig, device: str, autocast) -> dict:
    """Held-out measures of the heads on a fixed sample of ``config.eval_positions`` positions per example:
    per head loss (nats), top-1 and top-k accuracy; ``chain_tokens_per_pass``, the tokens a verify pass
    would give when drafting the heads' argmax chain (1 + the mean number of leading heads right); and
    ``base_agrees_with_labels``, how often the base's own greedy choice is the data's token.
    """
    import torch

    n, was_training = heads.config.n_heads, heads.training
    heads.eval()
    nats, top1, topk, counts = (torch.zeros(n, dtype=torch.float64) for _ in range(4))
    chain, chained, agreement = 0, 0, [0, 0]
    sampling = dataclasses.replace(config, positions=config.eval_positions)
    generator = torch.Generator().manual_seed(config.seed)
    with torch.no_grad():
        for start in range(0, len(examples), config.batch_size):
            batch = list(examples[start:start + config.batch_size])
            hidden, targets = head_targets(heads, decoder, batch, pad_id, sampling, device, autocast, generator,
                                           base_agreement=agreement)
            with autocast:
                logits = heads(hidden).float()  # [n, N, V]
            targets = targets.T.cpu()  # [n, N]
            valid = targets != IGNORE
            safe = targets.clamp(min=0)
            nats += (torch.nn.functional.cross_entropy(logits.flatten(0, 1), safe.flatten().to(logits.device),
                                                       reduction="none").cpu().view(n, -1) * valid).sum(1)
            best = logits.topk(config.top_k, dim=-1).indices.cpu()  # [n, N, k]
            hit = (best[..., 0] == safe) & valid
            top1 += hit.sum(1)
            topk += ((best == safe[..., None]).any(-1) & valid).sum(1)
            counts += valid.sum(1)
            whole = valid.all(0)  # positions where every head has a target
            chain += int(hit[:, whole].int().cumprod(0).sum())
            chained += int(whole.sum())
    heads.train(was_training)
    counts = counts.clamp(min=1)
    return {
        "loss": [round(float(x), 4) for x in nats / counts],
        "top1": [round(float(x), 4) for x in top1 / counts],
        f"top{config.top_k}": [round(float(x), 4) for x in topk / counts],
        "chain_tokens_per_pass": round(1 + chain / max(chained, 1), 4),
        "base_agrees_with_labels": round(agreement[0] / max(agreement[1], 1), 4),
        "positions": int(counts[0]),
    }


def _record_eval(evaluation: dict, step: int, metrics: dict) -> None:
    metrics["evals"].append({"step": step, **evaluation})
    log.info("step %d  held-out top-1 per head %s, argmax chain %.3f tokens per pass", step,
             " ".join(f"{x:.3f}" for x in evaluation["top1"]), evaluation["chain_tokens_per_pass"])


def _save(heads, config: MedusaTrainConfig, directory: Path, optimizer, scheduler, step: int, metrics: dict) -> None:
    """The heads with their config and latest metrics, the run's config and metrics, and the trainer state
    in the layout ``train._load_state`` reads."""
    summary = {"step": step, "targets": config.targets, "train_file": config.train_file,
               "eval": metrics["evals"][-1] if metrics["evals"] else None}
    heads.save(directory, summary)
    (directory / "train_config.json").write_text(json.dumps(dataclasses.asdict(config), indent=1) + "\n")
    save_state(directory, optimizer, scheduler, step, metrics)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="the frozen base: directory, hub id or fastapply-small")
    parser.add_argument("--train-file", required=True, help="JSONL(.gz) training records")
    parser.add_argument("--out", required=True, help="output directory: heads, config, metrics, trainer state")
    parser.add_argument("--eval-file", help="held-out records (default: the last --holdout training records)")
    parser.add_argument("--resume", help="a directory with trainer_state.pt, or a run whose latest checkpoint to take")
    parser.add_argument("--heads", type=int, dest="n_heads")
    parser.add_argument("--targets", choices=TARGETS)
    parser.add_argument("--positions", type=int, help="answer positions sampled per example per step")
    parser.add_argument("--eval-positions", type=int)
    parser.add_argument("--edit-weight", type=float, help="sample positions after written tokens this much more")
    parser.add_argument("--holdout", type=int)
    parser.add_argument("--vocab-size", type=int, help="ids kept in the heads' draft vocabulary (0: none)")
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--lr", type=float, dest="learning_rate")
    parser.add_argument("--epochs", type=float)
    parser.add_argument("--max-steps", type=int)
    parser.add_argument("--max-minutes", type=float)
    parser.add_argument("--max-length", type=int)
    parser.add_argument("--log-every", type=int)
    parser.add_argument("--eval-every", type=int)
    parser.add_argument("--save-every", type=int)
    parser.add_argument("--device")
    parser.add_argument("--dtype")
    parser.add_argument("--autocast", choices=AUTOCAST)
    parser.add_argument("--threads", type=int, dest="num_threads")
    parser.add_argument("--seed", type=int)
    args = vars(parser.parse_args(argv))
    out, resume = args.pop("out"), args.pop("resume")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S", stream=sys.stderr)
    try:
        config = MedusaTrainConfig(**{k: v for k, v in args.items() if v is not None})
        result = train_heads(config, out, resume)
    except FastapplyError as exc:
        print(f"finetune.medusa: error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(f"{result.out_dir}: {result.steps} steps, train loss {result.train_loss:.4f}, held-out top-1 per head "
          f"{' '.join(f'{x:.3f}' for x in result.evaluation['top1'])}, argmax chain "
          f"{result.evaluation['chain_tokens_per_pass']:.3f} tokens per pass, {result.positions_per_s:.0f} positions/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
