"""``fastapply bench``: one model, several (file, edit) cases, every decoding method in the same run.

Methods: ``plain`` (greedy ``model.generate``), ``prompt-lookup`` (``model.generate`` with
``prompt_lookup_num_tokens=10``, transformers' own implementation), ``ngram`` (vLLM's n-gram rule in
fastapply's loop) and ``fastapply`` (speculative edits). With ``acceptance="replay"`` the model's
choices are replaced by the reference answer while every forward pass still runs for real: that times
a model whose weights cannot do the task (random or untrained) as if it answered correctly, and then
``plain`` and ``prompt-lookup`` run in fastapply's loop with the ``none`` and ``pld`` drafters.
This module measures and returns rows; the CLI prints them.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

from fastapply.apply import ApplyResult, EditPlan, finish, plan_edit, run_plan
from fastapply.decode import DecodeStats
from fastapply.errors import UsageError
from fastapply.prompt import answer_ids

METHODS = ("plain", "prompt-lookup", "ngram", "fastapply")
REPLAY_POLICY = {"plain": "none", "prompt-lookup": "pld", "ngram": "ngram", "fastapply": "fastapply"}


@dataclass(frozen=True)
class BenchCase:
    name: str
    original: str
    update: str
    instruction: str = ""
    expected: str | None = None


@dataclass(frozen=True)
class BenchRow:
    case: str
    method: str
    passes: int  # forward passes after the prefill
    tokens: int
    chars: int
    prefill_s: float
    seconds: float  # wall time including the prefill
    same_as_plain: bool  # the same tokens as plain decoding
    speedup_plain: float = 0.0
    speedup_prompt_lookup: float = 0.0

    @property
    def tokens_per_pass(self) -> float:
        return self.tokens / self.passes if self.passes else 0.0

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds else 0.0

    @property
    def chars_per_s(self) -> float:
        return self.chars / self.seconds if self.seconds else 0.0

    def as_dict(self) -> dict:
        return {**asdict(self), "tokens_per_pass": round(self.tokens_per_pass, 3),
                "tokens_per_s": round(self.tokens_per_s, 2), "chars_per_s": round(self.chars_per_s, 1)}


def run_bench(model, tokenizer, cases: list[BenchCase], acceptance: str = "model", preset: str = "default",
              max_new_tokens: int | None = None, methods: tuple[str, ...] = METHODS) -> list[BenchRow]:
    """Every method on every case, in this order, after one untimed warm-up of each method."""
    if acceptance not in ("model", "replay"):
        raise UsageError("--acceptance must be 'model' or 'replay'")
    unknown = set(methods) - set(METHODS)
    if unknown:
        raise UsageError(f"unknown bench method {sorted(unknown)[0]!r}; choose from: {', '.join(METHODS)}")
    if acceptance == "replay" and any(case.expected is None for case in cases):
        raise UsageError("--acceptance replay needs the expected file of every case")
    for method in methods:  # warm-up: first-call overheads and the one-time verify-cost calibration
        _run(model, tokenizer, cases[0], method, acceptance, preset, 16)
    rows: list[BenchRow] = []
    for case in cases:
        measured = {m: _run(model, tokenizer, case, m, acceptance, preset, max_new_tokens) for m in methods}
        reference = measured.get("plain")
        base = {m: measured[m][1] for m in measured}
        for method, (tokens, seconds, prefill_s, passes, chars) in measured.items():
            rows.append(BenchRow(
                case=case.name, method=method, passes=passes, tokens=len(tokens), chars=chars,
                prefill_s=prefill_s, seconds=seconds,
                same_as_plain=reference is None or tokens == reference[0],
                speedup_plain=base["plain"] / seconds if "plain" in base and seconds else 0.0,
                speedup_prompt_lookup=base["prompt-lookup"] / seconds if "prompt-lookup" in base and seconds else 0.0,
            ))
    return rows


def _run(model, tokenizer, case: BenchCase, method: str, acceptance: str, preset: str,
         max_new_tokens: int | None) -> tuple[list[int], float, float, int, int]:
    """(tokens, seconds, prefill seconds, passes, characters) of one method on one case."""
    from fastapply.target import HFTarget, ReplayedHFTarget, stop_ids_of

    plan = plan_edit(tokenizer, case.original, case.update, case.instruction, preset)
    budget = max_new_tokens or plan.default_max_new_tokens
    stops = stop_ids_of(model, tokenizer)
    if acceptance == "replay":
        reference = answer_ids(tokenizer, plan.preset, case.expected)
        target = ReplayedHFTarget(model, reference, tokenizer.eos_token_id)
        result = run_plan(target, tokenizer, plan, REPLAY_POLICY[method], budget, stops)
        return _from_result(result)
    if method in ("ngram", "fastapply"):
        return _from_result(run_plan(HFTarget(model), tokenizer, plan, method, budget, stops))
    return _from_result(generate_baseline(model, tokenizer, plan, budget, stops,
                                          prompt_lookup=method == "prompt-lookup"))


def _from_result(result: ApplyResult) -> tuple[list[int], float, float, int, int]:
    s = result.stats
    return result.token_ids, s.seconds, s.prefill_s, s.passes, s.chars


def generate_baseline(model, tokenizer, plan: EditPlan, budget: int, stops: set[int],
                      prompt_lookup: bool = False) -> ApplyResult:
    """transformers' own ``generate``, greedy, optionally with its prompt lookup (10 tokens); forward
    passes counted by a hook, so the stats compare with fastapply's loop."""
    import torch

    calls = []
    hook = model.register_forward_pre_hook(lambda module, args: calls.append(time.perf_counter()))
    kwargs = {"prompt_lookup_num_tokens": 10} if prompt_lookup else {}
    prompt = torch.tensor([plan.prompt_ids], device=model.device)
    try:
        with torch.inference_mode():
            start = time.perf_counter()
            out = model.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=False,
                                 max_new_tokens=budget, eos_token_id=sorted(stops),
                                 pad_token_id=tokenizer.pad_token_id or sorted(stops)[0],
                                 stop_strings=[plan.preset.answer_close.strip()] if plan.stop_sequences else None,
                                 tokenizer=tokenizer, **kwargs)
            seconds = time.perf_counter() - start
    finally:
        hook.remove()
    tokens = out[0, len(plan.prompt_ids):].tolist()
    prefill_s = calls[1] - start if len(calls) > 1 else seconds
    stats = DecodeStats(passes=max(len(calls) - 1, 0), tokens=len(tokens), accepted=(), proposed=(),
                        prefill_s=prefill_s, decode_s=seconds - prefill_s)
    return finish(tokenizer, plan, tokens, stats, stops)
