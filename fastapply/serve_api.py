"""The request bodies ``fastapply serve`` accepts, checked strictly, and its error answers.

Bodies are read with a size limit (413), parsed as JSON and validated against the models below;
malformed JSON, unknown fields and values fastapply cannot honour are 400 with a message naming the
field. Errors have OpenAI's shape: ``{"error": {"message", "type", "param", "code"}}``.
This module does no decoding and no routing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class ApiError(Exception):
    """An answer other than 200: HTTP status, a one-line message and OpenAI's error type."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error"):
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind


def error_body(message: str, kind: str) -> dict:
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TextPart(_Strict):
    type: Literal["text"]
    text: str


def _text(content: str | list[TextPart]) -> str:
    return content if isinstance(content, str) else "".join(part.text for part in content)


class Message(_Strict):
    role: Literal["system", "developer", "user", "assistant"]
    content: str | list[TextPart]
    name: str | None = None


class Prediction(_Strict):
    type: Literal["content"]
    content: str | list[TextPart]


class StreamOptions(_Strict):
    include_usage: bool = False


class ChatRequest(_Strict):
    """OpenAI's chat completion request, the fields fastapply honours."""

    model: str = ""  # any name is accepted: the server has one model
    messages: list[Message] = Field(min_length=1)
    prediction: Prediction | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)  # greedy by default, unlike OpenAI's 1.0
    seed: int | None = None
    stop: str | list[str] | None = None
    n: Literal[1] = 1
    top_p: float = Field(default=1.0, ge=1.0, le=1.0)  # nucleus sampling is not offered
    user: str | None = None

    def message_dicts(self) -> list[dict[str, str]]:
        # "developer" is OpenAI's newer name for the system role; chat templates know "system"
        return [{"role": "system" if m.role == "developer" else m.role, "content": _text(m.content)}
                for m in self.messages]

    def prediction_text(self) -> str | None:
        return _text(self.prediction.content) if self.prediction is not None else None

    def token_budget(self) -> int | None:
        return self.max_completion_tokens or self.max_tokens

    def stop_list(self) -> list[str]:
        if self.stop is None:
            return []
        return [self.stop] if isinstance(self.stop, str) else list(self.stop)

    def apply_form(self) -> ChatEdit | None:
        """The edit this request asks for in the apply form, or None for any other chat: one user message,
        ``<instruction>...</instruction>`` (optional), ``<code>FILE</code>``, ``<update>SNIPPET</update>``."""
        if len(self.messages) != 1 or self.messages[0].role != "user":
            return None
        found = _APPLY_FORM.fullmatch(_text(self.messages[0].content))
        if found is None:
            return None
        return ChatEdit(found["code"], found["update"], found["instruction"] or "")


# the file is everything up to the last "</code>" that the update's opening tag follows
_APPLY_FORM = re.compile(r"\s*(?:<instruction>(?P<instruction>.*?)</instruction>\s*)?"
                         r"<code>(?P<code>.*)</code>\s*<update>(?P<update>.*)</update>\s*", re.S)


@dataclass(frozen=True)
class ChatEdit:
    """An edit sent as a chat message in the apply form, the form Morph's API and fastapply's own apply
    models read: the file, the update snippet and the instruction, verbatim."""

    original: str
    update: str
    instruction: str


class ApplyRequest(_Strict):
    """fastapply's own route: one edit applied to one file."""

    original: str
    update: str
    instruction: str = ""
    language: str | None = None  # a name from fastapply.syntax.LANGUAGES; None: the path's, else no syntax checks
    path: str | None = None  # the file's path: its language, and its code blocks of a chat model's answer
    engine: Literal["auto", "merge", "model"] = "auto"  # auto: the model, drafting from the merge engine's candidate
    force: bool = False  # return output that fails validation (its problems are reported) instead of refusing it
    focus: bool = True  # the model rewrites the top-level statements around the edit, not the whole file (focus.py)
    preset: str | None = None  # a prompt preset's name; None: the server's (``--preset``)
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    seed: int | None = None


class CodeApplyRequest(_Strict):
    """Relace's instant-apply route, ``/v1/code/apply``: the file and the edit snippet, camel-cased."""

    initialCode: str  # noqa: N815 (Relace's field names)
    editSnippet: str  # noqa: N815
    instruction: str = ""
    stream: bool = False  # not offered: the merged file comes back whole, once checked
    model: str = ""  # any name is accepted: the server has one model
    relace_metadata: dict | None = None  # a client's own tags, kept by Relace; not used


async def parse_body(request, schema: type[_Strict], max_bytes: int) -> _Strict:
    """Read the body (at most ``max_bytes``), parse JSON and validate it against ``schema``."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise ApiError(413, f"the request body is {declared} bytes; the limit is {max_bytes}")
    body = bytearray()
    async for piece in request.stream():
        body += piece
        if len(body) > max_bytes:
            raise ApiError(413, f"the request body is over the limit of {max_bytes} bytes")
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"the request body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ApiError(400, "the request body must be a JSON object")
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        raise ApiError(400, _describe(exc)) from None


def _describe(exc: ValidationError) -> str:
    """One line naming each bad field, e.g. ``unknown field 'tools'; messages: Field required``."""
    problems = []
    for error in exc.errors()[:5]:
        where = ".".join(str(part) for part in error["loc"]) or "body"
        if error["type"] == "extra_forbidden":
            problems.append(f"unknown field '{where}'")
        else:
            problems.append(f"{where}: {error['msg']}")
    return "; ".join(problems)
