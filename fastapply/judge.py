"""An LLM judge: a chat model behind any OpenAI-compatible endpoint grades an apply result against the
reference file with a score from 0 to 1.

Optional: when no judge is configured no score exists anywhere, and a judge that fails or answers
without a usable score gives an error, never a guessed score. This module does not run engines or
compute the other metrics (``metrics.py``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from fastapply.errors import FastapplyError

SYSTEM = (
    "You grade code edits. A tool was asked to apply an update snippet to a file. Compare the tool's "
    "result with the reference result. Score 1 when the result is the reference, or differs only in ways "
    "that do not change the code's meaning or the intended edit (formatting, equivalent comments). Score 0 "
    "when the edit is missing, wrong, or the result breaks or loses code. Use values in between for partly "
    "correct results. Answer with a single JSON object and nothing else: "
    '{"score": <number from 0 to 1>, "reason": "<one sentence>"}'
)

USER = """<original>
{original}
</original>
<update>
{update}
</update>
<reference>
{expected}
</reference>
<result>
{output}
</result>"""


@dataclass(frozen=True)
class JudgeConfig:
    url: str  # the endpoint's base URL (".../v1") or its full ".../chat/completions" URL
    model: str
    key: str | None = None  # sent as a Bearer token; never written into results
    timeout_s: float = 120.0  # a slow judge model may take a while on a 400-line file

    @property
    def chat_url(self) -> str:
        base = self.url.rstrip("/")
        return base if base.endswith("/chat/completions") else base + "/chat/completions"


@dataclass(frozen=True)
class Verdict:
    score: float  # 0..1
    reason: str


class JudgeError(FastapplyError):
    """The judge could not be reached or did not answer with a score."""


def grade(config: JudgeConfig, original: str, update: str, expected: str, output: str, client=None) -> Verdict:
    """Ask the judge for a score of ``output`` against ``expected``. ``client``: an ``httpx.Client`` to reuse."""
    import httpx

    body = {
        "model": config.model,
        "temperature": 0,
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": USER.format(original=original, update=update, expected=expected,
                                                    output=output)},
        ],
    }
    headers = {"Authorization": f"Bearer {config.key}"} if config.key else {}
    try:
        if client is None:
            with httpx.Client(timeout=config.timeout_s) as own:
                response = own.post(config.chat_url, json=body, headers=headers)
        else:
            response = client.post(config.chat_url, json=body, headers=headers, timeout=config.timeout_s)
        response.raise_for_status()
        content = response.json()["choices"][0]["message"]["content"]
    except httpx.HTTPStatusError as exc:
        raise JudgeError(f"judge at {config.chat_url} answered HTTP {exc.response.status_code}") from None
    except httpx.HTTPError as exc:
        raise JudgeError(f"cannot reach the judge at {config.chat_url}: {exc}") from None
    except (ValueError, KeyError, IndexError, TypeError):
        raise JudgeError("the judge's reply is not an OpenAI chat completion") from None
    return parse_verdict(content)


def parse_verdict(content: str) -> Verdict:
    """The score in a judge's reply: the first JSON object in it with a numeric ``score`` in [0, 1].

    >>> parse_verdict('Sure. {"score": 0.5, "reason": "half"}')
    Verdict(score=0.5, reason='half')
    """
    for match in re.finditer(r"\{[^{}]*\}", content or ""):
        try:
            obj = json.loads(match.group(0))
        except ValueError:
            continue
        score = obj.get("score") if isinstance(obj, dict) else None
        if isinstance(score, (int, float)) and not isinstance(score, bool) and 0 <= score <= 1:
            return Verdict(float(score), str(obj.get("reason", "")))
    raise JudgeError(f"the judge's reply holds no score from 0 to 1: {(content or '')[:80]!r}")
