"""One edit applied by a model: build the prompt and the drafts, decode, parse the answer.

This is the model path shared by the CLI, ``bench``, ``eval`` and the server. It does not read or
write files, validate the result or print; the callers do.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from fastapply.decode import DecodeStats, speculative_generate
from fastapply.draft import DraftContext, ModelDrafters, make_drafter
from fastapply.errors import FastapplyError
from fastapply.merge import restyle_markers
from fastapply.prompt import (
    Preset,
    answer_ids,
    encode_text,
    get_preset,
    parse_answer,
    prompt_ids,
)
from fastapply.risk import file_risk, snippet_risk

if TYPE_CHECKING:
    from fastapply.validate import Problem, RefusalWatch

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EditPlan:
    """The token-level form of one request: what to prompt with and what to draft from."""

    preset: Preset
    prompt_ids: list[int]
    context: DraftContext
    stop_sequences: tuple[tuple[int, ...], ...]  # the closing tag, unless the file itself contains it

    @property
    def default_max_new_tokens(self) -> int:
        """Room for the answer to double the original's length and add the update twice over: an apply
        edit writes the original's code and the snippet's new code, not much else."""
        return 2 * (len(self.context.prediction_ids) + len(self.context.snippet_ids)) + 256


@dataclass(frozen=True)
class ApplyResult:
    text: str  # the new file, LF line endings
    closed: bool  # the answer's closing tag (or EOS) was reached; False means it was cut off
    answer: str  # the model's whole answer
    token_ids: list[int]
    stats: DecodeStats
    stopped: Problem | None = None  # what a ``RefusalWatch`` found, for which decoding stopped early


def plan_edit(tokenizer, original: str, update: str, instruction: str = "", preset: str | Preset = "default",
              merged: str | None = None, language: str | None = None) -> EditPlan:
    """Tokenize one request. ``merged`` is a merge-engine candidate for the new file, drafted first. With
    the file's ``language``, the update's markers are indented as the model was trained to read them
    (``merge.restyle_markers``)."""
    preset = get_preset(preset) if isinstance(preset, str) else preset
    update = restyle_markers(original, update, language)
    prediction = answer_ids(tokenizer, preset, original)
    merged_ids = answer_ids(tokenizer, preset, merged) if merged is not None else None
    snippet = encode_text(tokenizer, update)
    pieces = set(prediction) | set(snippet) | set(merged_ids or ())
    newlines = newline_ids(tokenizer, pieces)
    snippet_risky, markers = snippet_risk(tokenizer, snippet, newlines)
    risk = {"prediction": file_risk(tokenizer, prediction, newlines, update), "snippet": snippet_risky}
    if merged_ids is not None:
        risk["merged"] = file_risk(tokenizer, merged_ids, newlines, update)
    context = DraftContext(
        prompt_ids=prompt_ids(tokenizer, preset, original, update, instruction),
        prediction_ids=prediction,
        snippet_ids=snippet,
        merged_ids=merged_ids,
        newline_ids=newlines,
        risk=risk,
        snippet_markers=markers,
    )
    stops: tuple[tuple[int, ...], ...] = ()
    close_tag = preset.answer_close.strip()
    if close_tag not in original:
        stops = (_closing_tokens(tokenizer, prediction, close_tag),)
    return EditPlan(preset=preset, prompt_ids=context.prompt_ids, context=context, stop_sequences=stops)


def newline_ids(tokenizer, ids) -> frozenset[int]:
    """The ids among ``ids`` whose text contains a line break (re-sync points for the drafter)."""
    return frozenset(i for i in set(ids) if breaks_line(tokenizer, i))


def breaks_line(tokenizer, token: int) -> bool:
    """Whether the text of ``token`` alone contains a line break."""
    return "\n" in tokenizer.decode([token])


def _closing_tokens(tokenizer, prediction: Sequence[int], close_tag: str) -> tuple[int, ...]:
    """The shortest tail of the prediction (before EOS) whose text contains the closing tag."""
    body = list(prediction[:-1]) if tokenizer.eos_token_id is not None else list(prediction)
    for width in range(1, len(body) + 1):
        if close_tag in tokenizer.decode(body[-width:]):
            return tuple(body[-width:])
    return ()


def run_plan(target, tokenizer, plan: EditPlan, policy: str = "fastapply", max_new_tokens: int | None = None,
             stop_ids: Collection[int] = (), on_pass: Callable | None = None,
             models: ModelDrafters | None = None, trees: bool = True,
             watch: RefusalWatch | None = None) -> ApplyResult:
    """Decode one planned request on ``target`` with the draft ``policy`` and parse the answer;
    ``models`` builds the model-run drafters the policy may name (``draft.make_drafter``); ``trees``
    as ``decode.speculative_generate``'s; ``watch`` reads the answer's lines as they are written and
    stops decoding once it finds a problem that the finished answer is sure to have."""
    budget = max_new_tokens or plan.default_max_new_tokens
    drafter = make_drafter(policy, plan.context, models, target)
    stops = set(stop_ids) | ({tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set())
    log.info("prompt %d tokens, prediction %d, snippet %d, merged candidate %s; budget %d, draft %s",
             len(plan.prompt_ids), len(plan.context.prediction_ids), len(plan.context.snippet_ids),
             "yes" if plan.context.merged_ids is not None else "no", budget, policy)
    lines = AnswerLines(tokenizer, plan.preset, watch) if watch is not None else None
    tokens, stats = speculative_generate(target, drafter, plan.prompt_ids, budget, stops, plan.stop_sequences,
                                         on_pass, trees, lines)
    log.info("%d tokens in %d passes (%.1f per pass), %.2f s", stats.tokens, stats.passes, stats.tokens_per_pass,
             stats.seconds)
    result = finish(tokenizer, plan, tokens, stats, stops)
    if watch is not None and watch.problem is not None:
        log.info("stopped early: %s", watch.problem.message)
        return replace(result, stopped=watch.problem)
    return result


class AnswerLines:
    """The decode loop's ``give_up`` test for a ``RefusalWatch``: decodes the answer's new tokens up to
    their last line break and passes the file's complete lines (those after the opening tag's line) to
    the watch; true once it has found a problem. An answer that does not open with the tag on a line of
    its own is not watched (``parse_answer`` may then read the file from elsewhere in it), nor is one
    whose tokens' text changes with what comes before them beyond the few tokens read with them."""

    def __init__(self, tokenizer, preset: Preset, watch: RefusalWatch):
        self.tokenizer, self.watch = tokenizer, watch
        self.open_tag = preset.answer_open.strip()
        self.read = 0  # answer tokens decoded so far, up to and with the last one holding a line break
        self.carry = ""  # their text after that line break: the start of the next line
        self.opened: bool | None = None  # the first line was the opening tag (None: not read yet)
        self.breaks: dict[int, bool] = {}  # token id -> its text holds a line break

    def __call__(self, out: list[int]) -> bool:
        if self.opened is False:
            return False
        last = next((i for i in range(len(out) - 1, self.read - 1, -1) if self._breaks(out[i])), None)
        if last is None:
            return False
        # decoded with a few tokens before them, whose text is then cut off: a span decoded alone may lose
        # the space that opens it (SentencePiece's "▁" decoders drop it), and with it a line's indentation
        start = max(self.read - 4, 0)
        known = self.tokenizer.decode(out[start:self.read], skip_special_tokens=False)
        text = self.tokenizer.decode(out[start:last + 1], skip_special_tokens=False)
        if not text.startswith(known):
            self.opened = False  # a decoder whose spans do not add up: no reading it line by line
            return False
        self.read = last + 1
        *lines, self.carry = (self.carry + text[len(known):]).split("\n")
        if self.opened is None:
            self.opened = lines[0].strip() == self.open_tag
            lines = lines[1:] if self.opened else []
        return self.watch.lines(lines) is not None

    def _breaks(self, token: int) -> bool:
        if token not in self.breaks:
            self.breaks[token] = breaks_line(self.tokenizer, token)
        return self.breaks[token]


def finish(tokenizer, plan: EditPlan, tokens: list[int], stats: DecodeStats, stops: Collection[int]) -> ApplyResult:
    """Parse the answer ``tokens`` (however they were decoded) into an ``ApplyResult``."""
    ended = bool(tokens) and (tokens[-1] in stops or any(
        seq and tuple(tokens[-len(seq):]) == seq for seq in plan.stop_sequences))
    body = tokens[:-1] if tokens and tokens[-1] in stops else tokens
    answer = tokenizer.decode(body, skip_special_tokens=False)
    parsed = parse_answer(plan.preset, answer)
    return ApplyResult(text=parsed.file, closed=parsed.closed and ended, answer=answer, token_ids=tokens,
                       stats=replace(stats, chars=len(parsed.file)))


def apply_edit(model, tokenizer, original: str, update: str, instruction: str = "", *,
               preset: str = "default", policy: str = "fastapply", merged: str | None = None,
               max_new_tokens: int | None = None, temperature: float = 0.0, seed: int | None = None,
               on_pass: Callable | None = None, models: ModelDrafters | None = None,
               watch: RefusalWatch | None = None, language: str | None = None) -> ApplyResult:
    """Apply ``update`` to ``original`` (a file in ``language``) with a loaded transformers model (see
    ``loading.load_model``); ``models`` builds the model-run drafters ``policy`` may name
    (``draft.make_drafter``); ``watch`` as ``run_plan``'s."""
    from fastapply.loading import stop_ids_of
    from fastapply.target import HFTarget

    plan = plan_edit(tokenizer, original, update, instruction, preset, merged, language)
    budget = token_budget(model, plan, max_new_tokens)
    target = HFTarget(model, temperature=temperature, seed=seed)
    return run_plan(target, tokenizer, plan, policy, budget, stop_ids_of(model, tokenizer), on_pass, models,
                    watch=watch)


def load_model_drafters(model, tokenizer, draft_model: str | None = None,
                        medusa: str | None = None) -> dict[str, Callable]:
    """The ``models`` of ``run_plan`` for a loaded ``model``: a draft model (a checkpoint sharing its
    tokenizer) and Medusa heads trained for it, each where a path is given."""
    models: dict[str, Callable] = {}
    if draft_model:
        from fastapply.draftmodel import load_draft_model

        models["draft-model"] = load_draft_model(draft_model, model, tokenizer)
    if medusa:
        from fastapply.medusa import MedusaHeads, medusa_factory

        models["medusa"] = medusa_factory(MedusaHeads.load(medusa, model))
    return models


def default_policy(loaded: Collection[str]) -> str:
    """The draft policy when none is asked for: fastapply's own, with a ``loaded`` model-run drafter as
    its fallback (Medusa heads before a draft model: they cost a fraction of a pass, not a pass a token)."""
    for name in ("medusa", "draft-model"):
        if name in loaded:
            return f"fastapply+{name}"
    return "fastapply"


def token_budget(model, plan: EditPlan, max_new_tokens: int | None = None) -> int:
    """Most tokens the model may write for ``plan``: the asked-for (or default) budget, within the
    model's context; ``FastapplyError`` when even the unchanged file would not fit."""
    context_size = getattr(model.config, "max_position_embeddings", None)
    budget = max_new_tokens or plan.default_max_new_tokens
    if context_size is not None:
        room = context_size - len(plan.prompt_ids)
        if room < len(plan.context.prediction_ids):
            raise FastapplyError(
                f"the file is too long for this model: the prompt is {len(plan.prompt_ids)} tokens and the "
                f"answer needs about {len(plan.context.prediction_ids)} more, but the model's context is {context_size}"
            )
        budget = min(budget, room)
    return budget
