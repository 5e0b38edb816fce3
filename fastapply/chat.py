"""Chat completions on a loaded model, the way OpenAI's API defines them, with predicted outputs.

A request's ``prediction`` text becomes the draft: its tokens are the prediction that fastapply's
pointer policy follows and re-synchronises on, so a prediction that is mostly right is verified many
tokens per pass. Without a prediction the same policy falls back to the output's own history.
Stop strings, text deltas for streaming and usage (``accepted_prediction_tokens`` /
``rejected_prediction_tokens``) are worked out here. This module knows nothing of HTTP, queues or
cancellation; ``server.py`` does, and stops a request by raising from ``check``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fastapply.apply import newline_ids
from fastapply.decode import DecodeStats, speculative_generate
from fastapply.draft import DraftContext, make_drafter
from fastapply.errors import FastapplyError
from fastapply.prompt import chat_ids, encode_text


@dataclass(frozen=True)
class ChatPlan:
    """One chat request in tokens: the prompt, the draft context and the budget."""

    prompt_ids: list[int]
    context: DraftContext
    prediction_tokens: int  # tokens of the prediction text (EOS not counted)
    max_new_tokens: int
    stop: tuple[str, ...]  # stop strings; the text ends before the first one found
    temperature: float
    seed: int | None


@dataclass(frozen=True)
class ChatResult:
    text: str
    finish_reason: str  # "stop" (EOS or a stop string) or "length" (the budget ran out)
    prompt_tokens: int
    completion_tokens: int
    accepted_prediction_tokens: int  # prediction tokens that the model's output took over
    rejected_prediction_tokens: int  # prediction tokens that did not appear in the output
    stats: DecodeStats

    def usage(self) -> dict:
        """The ``usage`` object of OpenAI's chat completion response."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "accepted_prediction_tokens": self.accepted_prediction_tokens,
                "rejected_prediction_tokens": self.rejected_prediction_tokens,
            },
        }


def plan_chat(model, tokenizer, messages: Sequence[dict[str, str]], prediction: str | None = None,
              max_tokens: int | None = None, stop: Sequence[str] = (), temperature: float = 0.0,
              seed: int | None = None) -> ChatPlan:
    """Tokenize one request. The budget is ``max_tokens`` cut to the room left in the model's context."""
    prompt = chat_ids(tokenizer, [dict(m) for m in messages])
    predicted = encode_text(tokenizer, prediction) if prediction else []
    draft = [*predicted, tokenizer.eos_token_id] if predicted and tokenizer.eos_token_id is not None else predicted
    context_size = getattr(model.config, "max_position_embeddings", None) or len(prompt) + (max_tokens or 4096)
    room = context_size - len(prompt)
    if room < 1:
        raise FastapplyError(f"the prompt is {len(prompt)} tokens but the model's context is {context_size}")
    return ChatPlan(
        prompt_ids=prompt,
        context=DraftContext(prompt_ids=prompt, prediction_ids=draft, newline_ids=newline_ids(tokenizer, draft)),
        prediction_tokens=len(predicted),
        max_new_tokens=min(max_tokens or room, room),
        stop=tuple(s for s in stop if s),
        temperature=temperature,
        seed=seed,
    )


class TextDeltas:
    """Text of a growing token list, released in pieces that never split a character or a stop string.

    Each push decodes from a few tokens back (a tokenizer may render a token differently at the start
    of a text) and releases only text that ends on a whole character; text that could be the start of
    a stop string is held back until it is known not to be.
    """

    def __init__(self, tokenizer, stop: Sequence[str] = ()):
        self.tokenizer = tokenizer
        self.stop = tuple(stop)
        self.hold = max((len(s) for s in stop), default=1) - 1
        self.prefix = 0  # tokens[prefix:read] were decoded last time, as the context of the new ones
        self.read = 0
        self.text = ""  # all text decoded so far
        self.sent = 0  # characters of text released
        self.stopped = False

    def push(self, tokens: Sequence[int], final: bool = False) -> str:
        """The new text releasable after ``tokens`` (all output so far); ``final`` releases the rest."""
        if not self.stopped:
            before = self._decode(tokens[self.prefix:self.read])
            after = self._decode(tokens[self.prefix:])
            if len(after) > len(before) and (final or not after.endswith("\ufffd")):
                searched_from = max(0, len(self.text) - self.hold)
                self.text += after[len(before):]
                self.prefix, self.read = self.read, len(tokens)
                cut = min((i for i in (self.text.find(s, searched_from) for s in self.stop) if i >= 0), default=-1)
                if cut >= 0:
                    self.text, self.stopped = self.text[:cut], True
        end = len(self.text) if final or self.stopped else max(self.sent, len(self.text) - self.hold)
        delta, self.sent = self.text[self.sent:end], end
        return delta

    def _decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=False)  # a stop token is never passed in


class _StopString(Exception):
    """Raised from the pass callback to end decoding once a stop string has appeared."""


def run_chat(target, tokenizer, plan: ChatPlan, stop_ids: set[int], on_text: Callable[[str], None] | None = None,
             check: Callable[[], None] | None = None) -> ChatResult:
    """Decode ``plan`` on ``target``; ``on_text`` receives text deltas, ``check`` runs after every pass
    (it may raise to abandon the request)."""
    deltas = TextDeltas(tokenizer, plan.stop)
    drafter = make_drafter("fastapply", plan.context)
    last: list = [[], None]  # output and stats as of the latest pass

    def on_pass(out: list[int], stats: DecodeStats) -> None:
        if check is not None:
            check()
        ended = next((i + 1 for i, t in enumerate(out) if t in stop_ids), len(out))  # a pass may run past EOS
        last[0], last[1] = out[:ended], stats
        delta = deltas.push(_text_tokens(last[0], stop_ids)) if (on_text is not None or plan.stop) else ""
        if delta and on_text is not None:
            on_text(delta)
        if deltas.stopped:
            raise _StopString

    try:
        tokens, stats = speculative_generate(target, drafter, plan.prompt_ids, plan.max_new_tokens, stop_ids,
                                             on_pass=on_pass)
        finish = "stop" if tokens and tokens[-1] in stop_ids else "length"
    except _StopString:
        tokens, stats, finish = last[0], last[1], "stop"
    if on_text is not None or plan.stop:
        tail = deltas.push(_text_tokens(tokens, stop_ids), final=True)
        if tail and on_text is not None:
            on_text(tail)
        text = deltas.text
        finish = "stop" if deltas.stopped else finish
    else:
        text = tokenizer.decode(_text_tokens(tokens, stop_ids), skip_special_tokens=False)
    accepted = min(stats.sources.get("prediction", 0), plan.prediction_tokens)
    return ChatResult(text=text, finish_reason=finish, prompt_tokens=len(plan.prompt_ids),
                      completion_tokens=len(tokens), accepted_prediction_tokens=accepted,
                      rejected_prediction_tokens=plan.prediction_tokens - accepted, stats=stats)


def _text_tokens(tokens: list[int], stop_ids: set[int]) -> list[int]:
    """The tokens that make the text: all but a final stop token. Special-token text the model wrote
    elsewhere stays in the text, as in ``apply.finish``."""
    return tokens[:-1] if tokens and tokens[-1] in stop_ids else tokens
