"""Which checkpoint to ship: score apply models on edits with known answers, without decoding.

    python -m finetune.score fastapply-small runs/my-apply/checkpoint-000040 runs/my-apply \\
        --records evals/tasks/simple.jsonl evals/tasks/stratified.jsonl.gz --max-lines 100 --out runs/score.json

One teacher-forced pass per record (the prompt and the expected answer) gives, for each checkpoint, the
records greedy decoding would write exactly (every answer token the model's top choice: the count
``fastapply eval --engine model`` would report, in minutes instead of the eval's decoding), the answer
tokens that are not the top choice per 1,000, and bits per byte (``heldout.evaluate``). Then the records
the checkpoints disagree on, with each one's misses: a run's later checkpoints often gain some
files and lose others, which one total hides. How many records miss by 0, 1, 2, 3 or more tokens is
printed too (a model one token short of many files is closer than its exact count says), and
``--where N`` shows each record's first N misses: the token the answer wants, the one the model chose,
by how many nats, and the text before it.

A checkpoint is a LoRA adapter directory (applied to the base its ``adapter_config.json`` names, or to
``--base-model``), a full checkpoint directory, or a model name ``fastapply --model`` takes
(``fastapply-small``: the shipped model). Records are JSONL with the eval-task fields ``original``,
``update``, ``instruction``, ``expected`` (and ``id`` to name them, ``language`` to indent the update's
markers as fastapply shows them to the model): suite tasks or training records. Each is shown as
fastapply shows it: the window of the file around the edit (``fastapply.focus``; ``--whole-file`` for
whole files, as ``fastapply --whole-file``). Scores run in float32, the dtype fastapply decodes in on a CPU.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from fastapply.errors import FastapplyError
from fastapply.focus import focus
from fastapply.merge import merge, restyle_markers
from fastapply.prompt import get_preset
from finetune.examples import IGNORE, Example, Miss, build_example, read_records
from finetune.heldout import HeldOut, evaluate
from finetune.merge import adapter_base


def load_checkpoint(checkpoint: str, base_model: str | None, device: str, dtype: str):
    """(model, tokenizer) of a checkpoint: an adapter merged into its base, or a whole model."""
    from fastapply.loading import load_model

    if not (Path(checkpoint) / "adapter_config.json").is_file():
        return load_model(checkpoint, device, dtype)
    model, tokenizer = load_model(base_model or adapter_base(checkpoint), device, dtype, adapter=checkpoint)
    return model.merge_and_unload(), tokenizer


def score(model, tokenizer, records: list[dict], preset: str = "default", device: str = "cpu",
          where: int = 0, focused: bool = True) -> tuple[HeldOut, list[list[dict]]]:
    """The teacher-forced verdict on ``records``, one pass each (``misses`` in the records' order), and
    each record's first ``where`` misses told in text (``describe``). Each record is shown as fastapply
    shows it to the model (``as_shown``)."""
    examples = [build_example(tokenizer, get_preset(preset), as_shown(record, focused)) for record in records]
    verdict = evaluate(model, examples, pad_id=tokenizer.pad_token_id or 0, device=device)
    told = [[describe(tokenizer, example, miss) for miss in found[:where]]
            for example, found in zip(examples, verdict.where)]
    return verdict, told


def as_shown(record: dict, focused: bool = True) -> dict:
    """``record`` as fastapply shows it to the model: with ``focused``, the original and the expected file
    cut to the window around the edit (``focus.py``; whole where the expected file changes outside it,
    which the model then cannot write), and the update's markers indented like the code they stand
    for (``merge.restyle_markers``, by the record's ``language``; as given without one)."""
    language, original, expected = record.get("language"), record["original"], record["expected"]
    window = focus(original, record["update"], merge(original, record["update"], language), language,
                   record.get("instruction", "")) if focused else None
    if window is not None and window.splice(original, window.cut(expected)) == expected:
        record = {**record, "original": window.cut(original), "expected": window.cut(expected)}
    return {**record, "update": restyle_markers(record["original"], record["update"], language)}


def describe(tokenizer, example: Example, miss: Miss, context: int = 12) -> dict:
    """A miss in text: the token wanted, the one chosen, by how many nats, the ``context`` tokens before."""
    answer = [t for t, label in zip(example.input_ids, example.labels) if label != IGNORE]
    return {"at": miss.at, "wanted": tokenizer.decode([miss.wanted]), "chosen": tokenizer.decode([miss.chosen]),
            "regret": round(miss.regret, 2), "after": tokenizer.decode(answer[max(0, miss.at - context):miss.at])}


def by_misses(misses: Sequence[int], most: int = 3) -> str:
    """How many records miss by each count up to ``most``, and more.
    E.g. [0, 1, 1, 5] -> "0: 1, 1: 2, 2: 0, 3: 0, more: 1"."""
    counts = [sum(m == n for m in misses) for n in range(most + 1)]
    return ", ".join(f"{n}: {c}" for n, c in enumerate(counts)) + f", more: {sum(m > most for m in misses)}"


def disagreements(misses: dict[str, dict[str, int]]) -> list[str]:
    """The records some checkpoints write exactly and others do not, with each checkpoint's misses.
    E.g. {"a": {"t1": 0, "t2": 1}, "b": {"t1": 2, "t2": 1}} -> ["t1: a 0, b 2"]."""
    checkpoints = list(misses)
    names = list(misses[checkpoints[0]]) if checkpoints else []
    return [f"{name}: " + ", ".join(f"{c} {misses[c][name]}" for c in checkpoints) for name in names
            if len({misses[c][name] == 0 for c in checkpoints}) > 1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkpoints", nargs="+", help="adapter or checkpoint directories, or model names")
    parser.add_argument("--records", nargs="+", required=True, help="JSONL files of edits with their answers")
    parser.add_argument("--max-lines", type=int, default=None,
                        help="only records whose original has at most this many lines")
    parser.add_argument("--base-model", default=None, help="the base for adapters (default: the one each names)")
    parser.add_argument("--preset", default="default", help="the prompt format (fastapply's --preset)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--where", type=int, default=0, metavar="N",
                        help="print each record's first N misses (wanted, chosen, the text before)")
    parser.add_argument("--out", type=Path, default=None, help="JSON: each checkpoint's figures and misses per record")
    parser.add_argument("--whole-file", action="store_true",
                        help="show the model whole files, as `fastapply --whole-file` does (default: focused)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    try:
        records, names = [], []  # a record is named by its id, or by its file and line number
        for path in args.records:
            for number, record in enumerate(read_records(path), 1):
                if args.max_lines is None or len(record["original"].splitlines()) <= args.max_lines:
                    records.append(record)
                    names.append(record.get("id") or f"{path}:{number}")
        if not records:
            raise FastapplyError("no records to score (check --records and --max-lines)")
        results = {}
        for checkpoint in args.checkpoints:
            model, tokenizer = load_checkpoint(checkpoint, args.base_model, args.device, "float32")
            verdict, told = score(model, tokenizer, records, args.preset, args.device, args.where,
                                  not args.whole_file)
            results[checkpoint] = {"greedy_exact": verdict.greedy_exact, "records": verdict.examples,
                                   "misses_per_1000": round(verdict.misses_per_1000, 3),
                                   "bits_per_byte": round(verdict.bits_per_byte, 5),
                                   "misses": dict(zip(names, verdict.misses))}
            if args.where:
                results[checkpoint]["where"] = {name: found for name, found in zip(names, told) if found}
            print(f"{checkpoint}: greedy writes {verdict.greedy_exact} of {verdict.examples} exactly; "
                  f"{verdict.misses_per_1000:.2f} misses per 1,000 answer tokens; "
                  f"{verdict.bits_per_byte:.5f} bits per byte", flush=True)
            print(f"  records by their misses: {by_misses(verdict.misses)}")
            for name, count, found in zip(names, verdict.misses, told):
                for miss in found:
                    print(f"  {name} ({count} missed): token {miss['at']} wants {miss['wanted']!r}, chose "
                          f"{miss['chosen']!r} by {miss['regret']:.2f} nats, after {miss['after']!r}")
    except FastapplyError as exc:
        print(f"finetune.score: error: {exc}", file=sys.stderr)
        return 1
    differing = disagreements({c: r["misses"] for c, r in results.items()})
    if len(results) > 1:
        print(f"records the checkpoints disagree on ({len(differing)}), misses each:")
        print("\n".join(f"  {line}" for line in differing))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"records": args.records, "max_lines": args.max_lines,
                                        "checkpoints": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
