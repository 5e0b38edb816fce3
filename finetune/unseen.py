"""The records of a run's training file that the run has not trained on, so that a run continuing it
(``--init-adapter``) goes on with new examples instead of repeating them.

    python -m finetune.unseen runs/fastapply-small-r13 --out runs/mix40/train.jsonl.gz
    python -m finetune.train runs/r14.yaml --init-adapter fastapply-small     # r14.yaml: train_file runs/mix40/...

The run's ``train_config.json`` and the step its ``metrics.json`` reached say which examples it drew:
``finetune.train`` tokenizes the records, leaves out those longer than ``max_length``, and takes
``step * grad_accum`` batches of its seeded ``batch_stream``. This module rebuilds that stream
(tokenizing every record again, as the run did) and returns the trainable records no batch of it
held, in the file's order. A run past one epoch has seen every record. It trains nothing and changes
no record.
"""

from __future__ import annotations

import argparse
import json
import sys
from itertools import islice
from pathlib import Path

from fastapply.errors import FastapplyError, UsageError
from fastapply.tasks import dump_tasks
from finetune.config import load_config
from finetune.examples import batch_stream, build_example, read_records


def unseen(run: str | Path) -> list[dict]:
    """The trainable records of ``run``'s training file that none of its steps trained on."""
    from transformers import AutoTokenizer

    from fastapply.loading import resolve_named
    from fastapply.prompt import get_preset

    run = Path(run)
    if not (run / "train_config.json").is_file() or not (run / "metrics.json").is_file():
        raise UsageError(f"{run} is not a training run (no train_config.json and metrics.json there)")
    config = load_config(run / "train_config.json")
    step = json.loads((run / "metrics.json").read_text())["step"]
    tokenizer = AutoTokenizer.from_pretrained(resolve_named(config.base_model))
    preset = get_preset(config.preset)
    records = read_records(config.train_file)
    lengths = [len(build_example(tokenizer, preset, record).input_ids) for record in records]
    trainable = [index for index, length in enumerate(lengths) if length <= config.max_length]
    kept = [lengths[index] for index in trainable]
    stream = batch_stream(kept, config.batch_size, config.batch_tokens, config.seed)
    seen = {index for batch in islice(stream, step * config.grad_accum) for index in batch}
    return [records[original] for position, original in enumerate(trainable) if position not in seen]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", help="a training run or checkpoint directory (finetune.train --out)")
    parser.add_argument("--out", type=Path, required=True, help="JSONL (.gz too) of the records it has not seen")
    args = parser.parse_args(argv)
    try:
        records = unseen(args.run)
    except FastapplyError as exc:
        print(f"finetune.unseen: error: {exc}", file=sys.stderr)
        return exc.exit_code
    dump_tasks(args.out, records)
    print(f"{len(records)} records {args.run} has not trained on -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
