"""``fastapply bench``: one model, several (file, edit) cases, every decoding method in the same run.

Methods: ``plain`` (greedy ``model.generate``), ``prompt-lookup`` (``model.generate`` with
``prompt_lookup_num_tokens=10``, transformers' own implementation), ``ngram`` (vLLM's n-gram rule in
fastapply's loop) and ``fastapply`` (speculative edits); with a draft model loaded by the caller,
``draft-model`` (it drafts alone) and ``fastapply+draft-model`` (it drafts where no pointer source is
live). With ``acceptance="replay"`` the model's
choices are replaced by the reference answer while every forward pass still runs for real: that times
a model whose weights cannot do the task (random or untrained) as if it answered correctly, and then
``plain`` and ``prompt-lookup`` run in fastapply's loop with the ``none`` and ``pld`` drafters.

The fastapply methods draft the merge engine's candidate first where it builds one, as ``fastapply FILE``
does (DESIGN §4, draft source 1); the merge's own time is counted in their prefill. ``merge_draft=False``
leaves it out. With ``focus``, every method is shown the window of the file that ``fastapply FILE`` shows
the model (``fastapply.focus``), the merge that places it timed into every method's prefill: what a
user's rewrite costs, where the default compares the methods on whole files.

Every case also gets its limit: the time of one forward pass over the prompt and the answer written
(plain decoding's, which every lossless method writes too), which no rewrite of that answer can beat on
the same model; each row's ``vs_limit`` is its wall time over that. This module measures and returns rows;
the CLI prints them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from fastapply.apply import ApplyResult, EditPlan, finish, plan_edit, run_plan, token_budget
from fastapply.decode import DecodeStats, stop_index
from fastapply.draft import MODEL_POLICIES, ModelDrafters
from fastapply.errors import UsageError
from fastapply.focus import focus as window_of
from fastapply.prompt import answer_ids

METHODS = ("plain", "prompt-lookup", "ngram", "fastapply")  # the default; MODEL_POLICIES need their model
REPLAY_POLICY = {"plain": "none", "prompt-lookup": "pld", "ngram": "ngram", "fastapply": "fastapply",
                 **{policy: policy for policy in MODEL_POLICIES}}


@dataclass(frozen=True)
class BenchCase:
    name: str
    original: str
    update: str
    instruction: str = ""
    expected: str | None = None
    language: str | None = None  # the file's language, for the merge engine's candidate


@dataclass(frozen=True)
class BenchRow:
    case: str
    method: str
    stats: DecodeStats  # passes, tokens, seconds (prefill included), characters
    same_as_plain: bool | None  # the same tokens as plain decoding; None when plain did not run
    speedup_plain: float = 0.0
    speedup_prompt_lookup: float = 0.0
    limit_s: float = 0.0  # one forward pass over prompt + the answer written: the floor of any rewrite
    vs_limit: float = 0.0  # this method's seconds over limit_s (1.0 would be the limit itself)
    lines: int = 0  # lines of the case's original file
    position: int = 0  # when it ran among its case's methods (0: first)
    window: list[int] | None = None  # with focus: the first and last original line shown, 1-based

    def as_dict(self) -> dict:
        """The row as JSON data: what ``summarize`` and the CLI's table read."""
        return {"case": self.case, "method": self.method, "lines": self.lines, "same_as_plain": self.same_as_plain,
                "speedup_plain": round(self.speedup_plain, 3),
                "speedup_prompt_lookup": round(self.speedup_prompt_lookup, 3),
                "limit_s": round(self.limit_s, 4), "vs_limit": round(self.vs_limit, 3), "position": self.position,
                **({"window": self.window} if self.window else {}), **self.stats.as_dict()}


def run_bench(model, tokenizer, cases: list[BenchCase], acceptance: str = "model", preset: str = "default",
              max_new_tokens: int | None = None, methods: tuple[str, ...] = METHODS,
              models: ModelDrafters | None = None, merge_draft: bool = True, focus: bool = False,
              on_case: Callable[[list[BenchRow]], None] | None = None) -> list[BenchRow]:
    """Every method on every case, after one untimed warm-up of each method; ``models``
    builds the model-run drafters the methods in ``draft.MODEL_POLICIES`` need (``draft.make_drafter``);
    ``merge_draft``: the fastapply methods draft the merge engine's candidate first; ``focus``: every
    method rewrites the window ``fastapply FILE`` would show the model.
    ``on_case`` gets each case's rows as soon as they are measured. The methods take turns going first:
    case ``i`` runs them from the ``i``-th on, wrapping around, so that no method always runs first or
    after the same one (each row's ``position`` says when it ran); rows keep the order of ``methods``."""
    if acceptance not in ("model", "replay"):
        raise UsageError("--acceptance must be 'model' or 'replay'")
    unknown = set(methods) - set(REPLAY_POLICY)
    if unknown:
        raise UsageError(f"unknown bench method {min(unknown)!r}; choose from: {', '.join(REPLAY_POLICY)}")
    if acceptance == "replay" and any(case.expected is None for case in cases):
        raise UsageError("--acceptance replay needs the expected file of every case")
    from fastapply.loading import expect_many_requests

    expect_many_requests(model)  # the output layer's screen is built, and its costs measured, in the warm-up
    for method in methods:  # warm-up: first-call overheads and the one-time verify-cost calibration
        _run(model, tokenizer, Shown.of(cases[0], merge_draft, focus), method, acceptance, preset, 16, models)
    rows: list[BenchRow] = []
    for index, whole in enumerate(cases):
        turn = index % len(methods)
        order = (*methods[turn:], *methods[:turn])
        shown = Shown.of(whole, merge_draft, focus)
        case = shown.case
        ran = {m: _run(model, tokenizer, shown, m, acceptance, preset, max_new_tokens, models) for m in order}
        measured = {m: ran[m] for m in methods}
        seconds = {m: result.stats.seconds for m, result in measured.items()}
        written = (measured.get("plain") or next(iter(measured.values()))).token_ids  # every method's, when lossless
        prompt = plan_edit(tokenizer, case.original, case.update, case.instruction, preset,
                           language=case.language).prompt_ids
        limit = limit_seconds(model, [*prompt, *written])
        mine = []
        for method, result in measured.items():
            own = result.stats.seconds
            mine.append(BenchRow(
                case=case.name, method=method, stats=result.stats,
                same_as_plain=result.token_ids == measured["plain"].token_ids if "plain" in measured else None,
                speedup_plain=seconds["plain"] / own if "plain" in seconds and own else 0.0,
                speedup_prompt_lookup=seconds["prompt-lookup"] / own if "prompt-lookup" in seconds and own else 0.0,
                limit_s=limit, vs_limit=own / limit if limit else 0.0, lines=len(whole.original.splitlines()),
                position=order.index(method), window=shown.window,
            ))
        rows += mine
        if on_case is not None:
            on_case(mine)
    return rows


def summarize(rows: list[dict]) -> dict[str, dict]:
    """Per method, over the cases of ``rows`` (``BenchRow.as_dict()``): the median and spread (min,
    quartiles, max) of its speedups over plain decoding and over prompt lookup and of its time over the
    limit, how many cases gave plain's tokens, and its total seconds.

    >>> from fastapply.decode import DecodeStats
    >>> stats = DecodeStats(passes=1, tokens=2, accepted=(), proposed=(), prefill_s=0.5, decode_s=0.5)
    >>> rows = [BenchRow(str(i), "fastapply", stats, True, s, s / 2) for i, s in enumerate([2.0, 4.0, 9.0])]
    >>> summarize([row.as_dict() for row in rows])["fastapply"]["speedup_plain"]
    {'median': 4.0, 'min': 2.0, 'q1': 3.0, 'q3': 6.5, 'max': 9.0}
    """
    from fastapply.metrics import median

    def spread(values: list[float]) -> dict | None:
        if not values:
            return None
        values = sorted(values)
        lower, upper = values[: (len(values) + 1) // 2], values[len(values) // 2:]  # halves share an odd median
        return {"median": round(median(values), 3), "min": round(values[0], 3), "q1": round(median(lower), 3),
                "q3": round(median(upper), 3), "max": round(values[-1], 3)}

    out = {}
    for method in dict.fromkeys(r["method"] for r in rows):
        mine = [r for r in rows if r["method"] == method]
        compared = [r["same_as_plain"] for r in mine if r["same_as_plain"] is not None]
        out[method] = {"cases": len(mine), "same_as_plain": sum(compared) if compared else None,
                       "seconds": round(sum(r["seconds"] for r in mine), 2),
                       **{key: spread([r[key] for r in mine if r[key]])
                          for key in ("speedup_plain", "speedup_prompt_lookup", "vs_limit")}}
    return out


def cpu_model(cpuinfo: str = "/proc/cpuinfo") -> str:
    """The CPU's model name, which a speed figure depends on: Python's ``platform`` where it knows it,
    else Linux's ``cpuinfo``, else the architecture."""
    import platform

    name = platform.processor()
    if name and name != platform.machine():
        return name
    try:
        with open(cpuinfo, encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return name or platform.machine()


def limit_seconds(model, token_ids: list[int], repeats: int = 2) -> float:
    """The fastest of ``repeats`` prefills of ``token_ids``: one forward pass (cache written, one
    position's logits kept), as the first pass of a rewrite runs."""
    import torch

    from fastapply.loading import synchronize

    ids = torch.tensor([token_ids], device=model.device)
    best = float("inf")
    with torch.inference_mode():
        for _ in range(repeats):
            start = time.perf_counter()
            model(input_ids=ids, use_cache=True, logits_to_keep=1)
            synchronize(model.device)
            best = min(best, time.perf_counter() - start)
    return best


@dataclass(frozen=True)
class Shown:
    """A case as the methods are shown it: the whole file, or with focus the window ``fastapply FILE``
    shows the model; the merge's candidate (cut to the window) for the fastapply methods to draft, and
    the seconds the merge (and the window's placement) took."""

    case: BenchCase
    merged: str | None = None
    merge_s: float = 0.0
    window: list[int] | None = None
    placed: bool = False  # with focus the merge ran to place the window (or find none): every method pays for it

    @classmethod
    def of(cls, case: BenchCase, merge_draft: bool, focus: bool) -> Shown:
        from fastapply.engine import merge_reading, read_edit

        start = time.perf_counter()
        read = read_edit(case.original, case.update, case.language, case.instruction)
        case = replace(case, update=read.update, instruction=read.instruction)  # as `fastapply FILE` shows it
        if not (merge_draft or focus):
            return cls(case)
        result = merge_reading(case.original, read, case.language)
        window = window_of(case.original, case.update, result, case.language, case.instruction) if focus else None
        seconds = time.perf_counter() - start
        merged = result.text if merge_draft else None
        if window is None:
            return cls(case, merged, seconds, placed=focus)
        cut = replace(case, original=window.cut(case.original),
                      expected=None if case.expected is None else window.cut(case.expected))
        return cls(cut, window.cut_draft(merged), seconds, window.shown, placed=True)


def _run(model, tokenizer, shown: Shown, method: str, acceptance: str, preset: str,
         max_new_tokens: int | None, models: ModelDrafters | None = None) -> ApplyResult:
    """One method on one case as shown; a fastapply method drafts the merge's candidate where there is
    one. The merge's time goes into the prefill of the methods that needed it: the fastapply methods
    drafting its candidate, and with focus every method."""
    from fastapply.loading import stop_ids_of
    from fastapply.replay import ReplayedHFTarget
    from fastapply.target import HFTarget

    case = shown.case
    drafts = REPLAY_POLICY[method].startswith("fastapply")
    merged = shown.merged if drafts else None
    merge_s = shown.merge_s if shown.placed or drafts else 0.0
    plan = plan_edit(tokenizer, case.original, case.update, case.instruction, preset, merged, case.language)
    budget = token_budget(model, plan, max_new_tokens)
    stops = stop_ids_of(model, tokenizer)
    if acceptance == "replay":
        reference = answer_ids(tokenizer, plan.preset, case.expected)
        target = ReplayedHFTarget(model, reference, tokenizer.eos_token_id)
        result = run_plan(target, tokenizer, plan, REPLAY_POLICY[method], budget, stops, models=models)
    elif method in ("ngram", "fastapply", *MODEL_POLICIES):
        result = run_plan(HFTarget(model), tokenizer, plan, method, budget, stops, models=models)
    else:
        result = generate_baseline(model, tokenizer, plan, budget, stops, prompt_lookup=method == "prompt-lookup")
    return replace(result, stats=replace(result.stats, prefill_s=result.stats.prefill_s + merge_s))


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
    cut = stop_index(tokens, 0, stops, plan.stop_sequences)  # assisted generation may overshoot the stop
    if cut is not None:
        del tokens[cut:]
    prefill_s = calls[1] - start if len(calls) > 1 else seconds
    stats = DecodeStats(passes=max(len(calls) - 1, 0), tokens=len(tokens), accepted=(), proposed=(),
                        prefill_s=prefill_s, decode_s=seconds - prefill_s)
    return finish(tokenizer, plan, tokens, stats, stops)
