"""Teaching a small model to copy: the skill speculative edits rely on, learnt in seconds on a CPU.

Examples are small real edits of windows of source files (one line replaced, inserted or deleted),
prompted with a preset and answered with the edited window, loss on the answer only. A model trained
on them mostly copies its input, which is what makes the original file a good draft; tests and
benchmarks use it to measure acceptance end to end without a downloaded checkpoint.

    python -m finetune.echo --out runs/echo --shape small --steps 600
    python -m finetune.echo --out runs/copy-watchdog --file F.py --shape small --steps 150 --batch-size 1

With ``--file`` every example is an edit of that one whole file: the model learns to write the file
back (it memorises it), a stand-in for a model that copies, for end-to-end speed measurements on
that file without a downloaded checkpoint. It is not an apply model.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fastapply.prompt import answer_ids, get_preset, prompt_ids
from fastapply.snippet import make_snippet


@dataclass(frozen=True)
class Example:
    prompt_ids: list[int]
    answer_ids: list[int]


def edit_window(lines: Sequence[str], rng: random.Random, donor: str) -> str:
    """The window with one line replaced by ``donor``, ``donor`` inserted, or one line deleted."""
    edited = list(lines)
    i = rng.randrange(len(edited))
    kind = rng.choice(("replace", "insert", "delete"))
    if kind == "replace":
        edited[i] = donor
    elif kind == "insert":
        edited.insert(i, donor)
    elif len(edited) > 1:
        del edited[i]
    return "".join(edited)


def copy_examples(tokenizer, texts: Sequence[str], count: int, window: int = 12, seed: int = 0,
                  preset: str = "default") -> list[Example]:
    """``count`` edit examples from random ``window``-line stretches of ``texts``."""
    rng = random.Random(seed)
    chosen = get_preset(preset)
    files = [t.splitlines(keepends=True) for t in texts if len(t.splitlines()) > window]
    examples = []
    while len(examples) < count:
        lines = rng.choice(files)
        start = rng.randrange(len(lines) - window)
        stretch = lines[start:start + window]
        original = "".join(stretch)
        donor = rng.choice(rng.choice(files))
        edited = edit_window(stretch, rng, donor if donor.endswith("\n") else donor + "\n")
        if edited == original:
            continue
        update = make_snippet(original, edited, "python", context=rng.randint(1, 3))
        examples.append(Example(prompt_ids(tokenizer, chosen, original, update),
                                answer_ids(tokenizer, chosen, edited)))
    return examples


def train(model, examples: Sequence[Example], steps: int, batch_size: int = 8, lr: float = 3e-3,
          seed: int = 0, log_every: int = 0) -> list[float]:
    """Train ``model`` in place on ``examples`` (loss on answer tokens only); returns the loss per step."""
    import torch

    torch.manual_seed(seed)
    rng = random.Random(seed)
    pad = model.config.pad_token_id or 0
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=steps, pct_start=0.1)
    model.train()
    losses = []
    start = time.perf_counter()
    for step in range(steps):
        batch = [rng.choice(examples) for _ in range(batch_size)]
        length = max(len(e.prompt_ids) + len(e.answer_ids) for e in batch)
        ids = torch.full((batch_size, length), pad)
        labels = torch.full((batch_size, length), -100)
        mask = torch.zeros((batch_size, length), dtype=torch.long)
        for row, e in enumerate(batch):
            seq = e.prompt_ids + e.answer_ids
            ids[row, :len(seq)] = torch.tensor(seq)
            labels[row, len(e.prompt_ids):len(seq)] = torch.tensor(e.answer_ids)
            mask[row, :len(seq)] = 1
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        if log_every and (step + 1) % log_every == 0:
            print(f"step {step + 1}/{steps} loss {loss.item():.3f} ({time.perf_counter() - start:.0f}s)", flush=True)
    model.eval()
    return losses


def main() -> None:
    from finetune.scratch import new_llama, save_checkpoint, stdlib_corpus, train_tokenizer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--shape", default="small")
    parser.add_argument("--vocab-size", type=int, default=2048)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--examples", type=int, default=4000)
    parser.add_argument("--window", type=int, default=12)
    parser.add_argument("--file", help="learn edits of this one whole file instead of windows of many")
    parser.add_argument("--batch-size", type=int, default=8)
    args = parser.parse_args()
    corpus = stdlib_corpus()
    tokenizer = train_tokenizer(corpus, args.vocab_size)
    model = new_llama(len(tokenizer), args.shape)
    if args.file:
        text = Path(args.file).read_text(encoding="utf-8")
        examples = copy_examples(tokenizer, [text + "\n"], args.examples, len(text.splitlines()))
    else:
        examples = copy_examples(tokenizer, corpus[::2], args.examples, args.window)  # odd files held out
    train(model, examples, args.steps, batch_size=args.batch_size, log_every=10 if args.file else 50)
    save_checkpoint(model, tokenizer, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
