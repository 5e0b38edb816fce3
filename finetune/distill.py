"""Distil a draft model for an apply model: the model's own answers to training prompts, then a small
Llama trained on them, ready for ``fastapply --draft-model``.

    python -m finetune.distill --target fastapply-small --train-file runs/mix4/train.jsonl.gz \\
        --out runs/distill-small --examples 300 --layers 4
    python -m finetune.distill ... --out runs/distill-small       # the same command again resumes
    fastapply FILE --edit "..." --draft-model runs/distill-small/model
    fastapply bench --tasks TASKS.jsonl --draft-model runs/distill-small/model

Four steps, each skipped or resumed when its output is already there:

1. ``answers.jsonl``: the target's greedy answer (fastapply's decoding: ``apply.run_plan`` on an
   ``HFTarget``) to the prompts of the first ``examples`` records of ``train_file`` that fit
   ``max_length``, one line each, appended as they come (the record with ``expected`` replaced by the
   target's file, and its token ids). Distilling the target's answers, not the references, teaches the
   student what the target writes, right or wrong: that is what its drafts are checked against.
2. ``student-init/``: the target cut to its first ``layers`` decoder layers, with its final norm and its
   (tied) output layer; or ``student``, any checkpoint with the target's tokenizer. A cut model starts
   far off (fastapply-small cut to 4 layers: ~20 nats per answer token, the target 0.02; other choices
   of 4 layers, 14 to 20): what it keeps is the embedding and the first layers, and it needs real
   training, not a few steps.
3. ``model/``: the student fully fine-tuned by ``finetune/train.py`` on the closed answers (loss on the
   answer tokens only), the last ``held_out`` kept for its held-out bits per byte; plus
   ``draft_vocab.json``, the ``vocab_size`` token ids the answers use most. The draft scores only
   those and the prompt's own (``fastapply/draftmodel.py``): ranked on 1,000 answers of
   ``runs/mix4``, the first 1,000 and the prompt's cover every token of 200 held-out answers, ~1,100
   rows of SmolLM2's 49,152, and the output layer is most of a small draft's step (fastapply-small
   cut to 4 layers, one CPU thread: 26 ms a token scoring every id, 11 ms scoring those).
4. ``model/distill.json``: what the draft is worth, on the held-out answers. Passes per answer with
   ``fastapply``, ``draft-model`` and ``fastapply+draft-model``, replayed (``ReplayTarget`` chooses the
   target's recorded tokens, so only the draft runs), the draft model's acceptance, and the seconds
   per token of the draft and of the target on this machine.

This module does not choose when the draft model drafts; ``draft.py`` and ``decode.py`` do.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from fastapply.draftvocab import VOCAB_SIZE, frequent_tokens, write_draft_vocab
from fastapply.errors import FastapplyError, UsageError
from finetune.examples import read_records

log = logging.getLogger("finetune")


@dataclass(frozen=True)
class DistillConfig:
    target: str  # the model to draft for: checkpoint directory, hub id, or fastapply's own name
    train_file: str  # JSONL records (finetune/examples.py); their prompts are used, not their answers
    examples: int = 200  # records the target answers (the first that fit max_length)
    held_out: int = 20  # of the closed answers, the last ones: held-out loss and the measurements
    layers: int = 4  # the student keeps the target's first `layers` decoder layers (SmolLM2-135M has 30)
    student: str | None = None  # start from this checkpoint (same tokenizer) instead of a cut target
    vocab_size: int = VOCAB_SIZE  # ids in draft_vocab.json; 0 writes none (the draft then scores every id)
    preset: str = "default"  # prompt preset; must be the one used at apply time
    max_length: int = 2560  # prompt + reference answer tokens; longer records are skipped
    device: str = "auto"
    # Training (finetune/train.py, full mode). A cut model must re-learn what its missing layers did:
    # a learning rate well above full fine-tuning's ~1e-5.
    epochs: float = 2.0
    max_steps: int | None = None  # when set, overrides epochs
    max_minutes: float | None = None  # stop training (saving a resumable state) after this long
    learning_rate: float = 2e-4
    grad_accum: int = 8  # examples per optimizer step
    autocast: str = "auto"  # bfloat16 on GPU; "bfloat16" also helps CPUs with AVX512-BF16
    num_threads: int | None = None  # torch CPU threads; None leaves torch's default
    save_every: int = 0  # steps between resumable checkpoints (each holds the weights and the optimizer
    # state: ~12 bytes a parameter); 0 saves at the end, or when max_minutes runs out
    seed: int = 0


def distill(config: DistillConfig, out: str | Path) -> dict:
    """Run the four steps into ``out``; returns the summary also written to ``out/model/distill.json``."""
    import torch

    from fastapply.loading import load_model

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if config.num_threads:
        torch.set_num_threads(config.num_threads)
    lm, tokenizer = load_model(config.target, config.device)
    if config.student is not None:  # before the hours of answers and training, not after
        from fastapply.draftmodel import check_vocabulary

        check_vocabulary(tokenizer, *load_model(config.student, "cpu"), config.student)
    answers = answer_records(config, lm, tokenizer, out / "answers.jsonl")
    closed = [a for a in answers if a["closed"]]
    if len(closed) <= config.held_out:
        raise UsageError(f"only {len(closed)} closed answers: too few to train on and hold {config.held_out} out")
    train_part, held_part = closed[:len(closed) - config.held_out], closed[len(closed) - config.held_out:]
    _write_jsonl(out / "train.jsonl", train_part)
    _write_jsonl(out / "valid.jsonl", held_part)

    student = config.student or str(out / "student-init")
    if config.student is None and not (out / "student-init" / "config.json").exists():
        from finetune.scratch import save_checkpoint

        save_checkpoint(truncated(lm, config.layers), tokenizer, out / "student-init")
    result = train_student(config, student, out)
    vocab = frequent_tokens([a["token_ids"] for a in train_part], config.vocab_size)
    if vocab:
        write_draft_vocab(out / "model", vocab)
    summary = {
        "config": dataclasses.asdict(config),
        "answers": {"records": len(answers), "closed": len(closed), "train": len(train_part),
                    "held_out": len(held_part),
                    "same_as_reference": sum(a["same_as_reference"] for a in answers),
                    "canonical_tokens": sum(a["canonical_tokens"] for a in closed)},
        "training": {"steps": result.steps, "train_loss": result.train_loss,
                     "held_out_bits_per_byte": result.eval_bits_per_byte,
                     "tokens_per_s": round(result.tokens_per_s, 1)},
        "draft": {"parameters": sum(p.numel() for p in result.model.parameters()),
                  "layers": result.model.config.num_hidden_layers, "draft_vocab": len(vocab),
                  "held_out_coverage": coverage(vocab, held_part, tokenizer, config.preset)},
        **measure(lm, tokenizer, str(out / "model"), held_part, config.preset),
    }
    (out / "model" / "distill.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def answer_records(config: DistillConfig, lm, tokenizer, path: Path) -> list[dict]:
    """The target's answers to the first ``config.examples`` records that fit, appended to ``path`` as
    they come; those already in ``path`` are kept, not redone."""
    from fastapply.apply import plan_edit, run_plan, token_budget
    from fastapply.loading import stop_ids_of
    from fastapply.prompt import answer_ids, get_preset
    from fastapply.target import HFTarget

    done = {a["index"]: a for a in _read_jsonl(path)}
    preset = get_preset(config.preset)
    stops = stop_ids_of(lm, tokenizer)
    answers = []
    with path.open("a", encoding="utf-8") as sink:
        for index, record in enumerate(read_records(config.train_file)):
            if len(answers) == config.examples:
                break
            if index in done:
                answers.append(done[index])
                continue
            plan = plan_edit(tokenizer, record["original"], record["update"], record.get("instruction") or "", preset)
            if len(plan.prompt_ids) + len(answer_ids(tokenizer, preset, record["expected"])) > config.max_length:
                continue
            result = run_plan(HFTarget(lm), tokenizer, plan, "fastapply", token_budget(lm, plan), stops)
            canonical = answer_ids(tokenizer, preset, result.text)
            answer = {"index": index, "id": record.get("id", ""), "original": record["original"],
                      "update": record["update"], "instruction": record.get("instruction") or "",
                      "expected": result.text, "closed": result.closed, "token_ids": result.token_ids,
                      "same_as_reference": result.text == record["expected"],
                      "canonical_tokens": canonical[:len(result.token_ids)] == result.token_ids,
                      "seconds": round(result.stats.seconds, 3)}
            sink.write(json.dumps(answer) + "\n")
            sink.flush()
            answers.append(answer)
            log.info("answer %d/%d (record %d): %d tokens in %.1f s%s", len(answers), config.examples, index,
                     len(result.token_ids), result.stats.seconds, "" if result.closed else ", not closed")
    return answers


def truncated(model, layers: int):
    """A new model: ``model``'s embeddings, first ``layers`` decoder layers, final norm and output layer.

    E.g. SmolLM2-135M (30 layers, 134.5M parameters, 28.3M of them the tied embedding) cut to 4 layers
    keeps 42.5M parameters, two thirds of them the embedding.
    """
    import copy

    from transformers import AutoModelForCausalLM

    total = model.config.num_hidden_layers
    if not 1 <= layers <= total:
        raise UsageError(f"--layers must be between 1 and the target's {total}, not {layers}")
    config = copy.deepcopy(model.config)
    config.num_hidden_layers = layers
    if getattr(config, "layer_types", None):
        config.layer_types = config.layer_types[:layers]
    student = AutoModelForCausalLM.from_config(config, dtype=next(model.parameters()).dtype)
    missing, _beyond = student.load_state_dict(model.state_dict(), strict=False)  # _beyond: the layers cut
    if missing:
        raise FastapplyError(f"cannot cut the target to {layers} layers: no weights for {missing[0]}")
    return student.eval()


def train_student(config: DistillConfig, student: str, out: Path):
    """Full fine-tuning of ``student`` on ``out/train.jsonl`` into ``out/model``, resuming a started run."""
    from finetune.config import TrainConfig
    from finetune.train import STATE_FILE, train

    model_dir = out / "model"
    train_config = TrainConfig(
        base_model=str(Path(student).resolve()) if Path(student).exists() else student,
        train_file=str(out / "train.jsonl"), eval_file=str(out / "valid.jsonl"), mode="full",
        preset=config.preset, learning_rate=config.learning_rate, warmup_steps=10, epochs=config.epochs,
        max_steps=config.max_steps, max_minutes=config.max_minutes, batch_size=1, grad_accum=config.grad_accum,
        max_length=config.max_length, device=config.device, autocast=config.autocast,
        gradient_checkpointing=False, seed=config.seed, log_every=5, save_every=config.save_every,
        num_threads=config.num_threads)
    started = (model_dir / STATE_FILE).exists() or any(model_dir.glob(f"checkpoint-*/{STATE_FILE}"))
    return train(train_config, model_dir, resume=model_dir if started else None)


def coverage(vocab: list[int], answers: list[dict], tokenizer, preset: str) -> float | None:
    """Share of the ``answers``' tokens the draft can propose: in ``vocab`` or in the answer's prompt."""
    from fastapply.prompt import get_preset, prompt_ids

    if not vocab or not answers:
        return None
    scored = set(vocab)
    hits = total = 0
    for a in answers:
        prompt = set(prompt_ids(tokenizer, get_preset(preset), a["original"], a["update"], a["instruction"]))
        hits += sum(1 for token in a["token_ids"] if token in scored or token in prompt)
        total += len(a["token_ids"])
    return round(hits / total, 5)


def measure(lm, tokenizer, draft_dir: str, answers: list[dict], preset: str) -> dict:
    """For each policy, passes over the held-out ``answers`` replayed on the target's recorded tokens
    (the draft model runs for real); and the seconds one token costs the target and the draft model
    (median of single-token steps after the first answer's prompt) on this machine."""
    from fastapply.apply import plan_edit, run_plan
    from fastapply.draftmodel import DraftEngine, load_draft_model
    from fastapply.replay import ReplayTarget
    from fastapply.target import HFTarget

    factory = load_draft_model(draft_dir, lm, tokenizer)
    plans = [plan_edit(tokenizer, a["original"], a["update"], a["instruction"], preset) for a in answers]
    replay = {}
    for policy in ("fastapply", "draft-model", "fastapply+draft-model"):
        runs = [run_plan(ReplayTarget(a["token_ids"], tokenizer.eos_token_id), tokenizer, plan, policy,
                         len(a["token_ids"]), models={"draft-model": factory}).stats for a, plan in zip(answers, plans)]
        passes, proposed = sum(s.passes for s in runs), sum(sum(s.proposed) for s in runs)
        replay[policy] = {
            "passes": passes, "tokens": sum(s.tokens for s in runs),
            "tokens_per_pass": round(sum(s.tokens - 1 for s in runs) / passes, 3) if passes else 0.0,
            "acceptance": round(sum(sum(s.accepted) for s in runs) / proposed, 4) if proposed else 0.0,
            "accepted_by_source": dict(sum((Counter(s.sources) for s in runs), Counter()))}
    drafter = factory(plans[0].context)
    target_s = step_seconds(HFTarget(lm), plans[0].prompt_ids)
    draft_s = step_seconds(DraftEngine(drafter.model, drafter.vocab), plans[0].prompt_ids)
    return {"replay": replay, "seconds_per_token": {"target": round(target_s, 5), "draft": round(draft_s, 5),
                                                    "ratio": round(draft_s / target_s, 4)}}


def step_seconds(engine, prompt: list[int], steps: int = 16) -> float:
    """Median seconds of one single-token step of ``engine`` (an ``HFTarget``) after ``prompt``."""
    engine.prefill(prompt)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        engine.verify([])
        engine.accept(0)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write_jsonl(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    defaults = DistillConfig(target="", train_file="")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True, help="the model to draft for (e.g. fastapply-small)")
    parser.add_argument("--train-file", required=True, help="JSONL records whose prompts the target answers")
    parser.add_argument("--out", required=True, help="run directory; the draft model goes to OUT/model")
    for field in dataclasses.fields(DistillConfig):
        if field.name not in ("target", "train_file"):
            kind = {"int": int, "float": float}.get(str(field.type).split(" ")[0], str)
            parser.add_argument(f"--{field.name.replace('_', '-')}", type=kind, default=getattr(defaults, field.name),
                                help=f"DistillConfig.{field.name} (default: {getattr(defaults, field.name)})")
    args = vars(parser.parse_args(argv))
    out = args.pop("out")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S", stream=sys.stderr)
    logging.getLogger("fastapply").setLevel(logging.WARNING)  # not a line per decoded answer
    try:
        summary = distill(DistillConfig(**args), out)
    except FastapplyError as exc:
        print(f"finetune: error: {exc}", file=sys.stderr)
        return exc.exit_code
    cost, replay = summary["seconds_per_token"], summary["replay"]
    print(f"{out}/model: {summary['draft']['parameters'] / 1e6:.1f}M parameters, "
          f"held-out {summary['training']['held_out_bits_per_byte']} bits/byte; draft acceptance "
          f"{replay['draft-model']['acceptance']:.1%}; tokens per pass: "
          + ", ".join(f"{policy} {r['tokens_per_pass']}" for policy, r in replay.items())
          + f"; a draft token costs {cost['ratio']:.1%} of a target token")
    return 0


if __name__ == "__main__":
    sys.exit(main())
