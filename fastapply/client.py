"""The HTTP backend: apply an edit through an OpenAI-compatible server instead of a local model.

The request is the same prompt preset as the local path (system + user message), with the answer
the caller expects sent as ``prediction`` (OpenAI's predicted outputs): the merge engine's candidate
when there is one, else the original file. ``fastapply serve`` drafts from it; other servers may
ignore it or, with ``send_prediction=False``, never see it. Works against
``fastapply serve``, vLLM and hosted OpenAI-compatible APIs. A 503 (server busy) is retried a few
times. This module does not print; errors are ``FastapplyError`` with the server's message.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from fastapply.errors import FastapplyError, UsageError
from fastapply.prompt import get_preset, parse_answer

BUSY_RETRIES = 5  # attempts after a 503 before giving up
TIMEOUT_S = 600.0  # one request may take this long (a long file on a slow model)


def remote_base_url(backend: str, base_url: str | None, server: str | None) -> str | None:
    """The API base URL to send edits to, or None for the local model.

    ``server`` is a ``fastapply serve`` root (``http://127.0.0.1:8000`` -> ``http://127.0.0.1:8000/v1``);
    ``base_url`` is an OpenAI-style base that already ends where ``/chat/completions`` is appended.
    """
    if backend not in ("local", "openai"):
        raise UsageError(f"unknown backend {backend!r}; choose one of: local, openai")
    if server and base_url:
        raise UsageError("pass the server once: --server URL or --base-url URL")
    if server:
        server = server.rstrip("/")
        return server if server.endswith("/v1") else f"{server}/v1"
    if backend == "openai":
        if not base_url:
            raise UsageError("--backend openai needs --base-url URL (e.g. http://127.0.0.1:8000/v1)")
        return base_url.rstrip("/")
    if base_url:
        raise UsageError("--base-url needs --backend openai")
    return None


@dataclass(frozen=True)
class RemoteResult:
    text: str  # the new file, LF line endings
    closed: bool  # the answer's closing tag was seen and the server stopped on its own (not max_tokens)
    stats: dict


class RemoteBackend:
    """One connection to an OpenAI-compatible server, reused for many edits (``batch``, the eval)."""

    def __init__(self, base_url: str, api_key: str | None = None, model: str | None = None,
                 preset: str = "default", send_prediction: bool = True, max_tokens: int | None = None,
                 temperature: float = 0.0, timeout: float = TIMEOUT_S):
        import httpx

        self.base_url = base_url.rstrip("/")
        self.preset = get_preset(preset)
        self.send_prediction = send_prediction
        self.max_tokens = max_tokens
        self.temperature = temperature
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout)
        self._model = model

    @property
    def model(self) -> str:
        """The model name to send: the one given, else the first the server lists."""
        if self._model is None:
            listed = self._request("GET", "/models").get("data") or []
            if not listed:
                raise FastapplyError(f"the server at {self.base_url} lists no models; pass --model")
            self._model = listed[0]["id"]
        return self._model

    def apply(self, original: str, update: str, instruction: str = "", merged: str | None = None,
              language: str | None = None) -> RemoteResult:
        """One edit; ``merged`` (a merge-engine candidate for the new file) is the prediction when given."""
        messages = self.messages(original, update, instruction, language)
        body: dict = {"model": self.model, "messages": messages, "temperature": self.temperature}
        if self.send_prediction:
            predicted = merged if merged is not None else original
            body["prediction"] = {"type": "content", "content": self.preset.answer(predicted)}
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        start = time.perf_counter()
        answer = self._request("POST", "/chat/completions", body)
        seconds = time.perf_counter() - start
        try:
            choice = answer["choices"][0]
            content = choice["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise FastapplyError(f"the server at {self.base_url} sent an answer without a message") from None
        parsed = parse_answer(self.preset, content)
        usage = answer.get("usage") or {}
        details = usage.get("completion_tokens_details") or {}
        completion = usage.get("completion_tokens") or 0
        stats = {
            "seconds": round(seconds, 4),
            "prompt_tokens": usage.get("prompt_tokens"),
            "completion_tokens": completion,
            "accepted_prediction_tokens": details.get("accepted_prediction_tokens"),
            "rejected_prediction_tokens": details.get("rejected_prediction_tokens"),
            "tokens_per_s": round(completion / seconds, 2) if seconds else 0.0,
            "chars": len(parsed.file),
            "chars_per_s": round(len(parsed.file) / seconds, 1) if seconds else 0.0,
            "finish_reason": choice.get("finish_reason"),
            "server": answer.get("fastapply"),  # fastapply serve's decoding stats; None elsewhere
        }
        return RemoteResult(parsed.file, parsed.closed and choice.get("finish_reason") != "length", stats)

    def messages(self, original: str, update: str, instruction: str = "", language: str | None = None) -> list[dict]:
        """The chat messages of one edit. With the file's ``language`` they show the update's markers as the
        model was trained to read them (``merge.restyle_markers``), as a local run's prompt does."""
        from fastapply.merge import restyle_markers

        shown = restyle_markers(original, update, language)
        return [{"role": "system", "content": self.preset.system},
                {"role": "user", "content": self.preset.user_message(original, shown, instruction)}]

    def __call__(self, original: str, update: str, instruction: str = "", merged: str | None = None,
                 language: str | None = None) -> tuple[str, bool, dict]:
        """(new file, closed, stats) of one edit; safe to call from many threads at once."""
        result = self.apply(original, update, instruction, merged, language)
        return result.text, result.closed, result.stats

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> RemoteBackend:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _request(self, method: str, path: str, body: dict | None = None) -> dict:
        import httpx

        for attempt in range(BUSY_RETRIES + 1):
            try:
                response = self.http.request(method, path, json=body)
            except httpx.HTTPError as exc:
                raise FastapplyError(f"cannot reach the server at {self.base_url}: {exc}") from None
            if response.status_code != 503 or attempt == BUSY_RETRIES:
                break
            time.sleep(_retry_after(response))
        if response.status_code != 200:
            raise FastapplyError(f"the server at {self.base_url} answered {response.status_code}: "
                                 f"{_error_message(response)}")
        try:
            return response.json()
        except ValueError:
            raise FastapplyError(f"the server at {self.base_url} did not answer with JSON") from None


def _retry_after(response) -> float:
    """Seconds to wait before retrying a 503: the server's Retry-After (in seconds), at most 10."""
    try:
        return min(max(float(response.headers.get("retry-after", "1")), 0.1), 10.0)
    except ValueError:
        return 1.0


def _error_message(response) -> str:
    try:
        error = response.json().get("error")
        return error.get("message", str(error)) if isinstance(error, dict) else str(error)
    except (ValueError, AttributeError):
        return response.text[:200] or response.reason_phrase


def apply_remote(base_url: str, api_key: str | None, model: str | None, original: str, update: str,
                 instruction: str = "", preset: str = "default", send_prediction: bool = True,
                 max_tokens: int | None = None, merged: str | None = None, language: str | None = None
                 ) -> tuple[str, bool, dict]:
    """One edit through the server at ``base_url`` (ending in ``/v1``): (new file, closed, stats)."""
    with RemoteBackend(base_url, api_key, model, preset, send_prediction, max_tokens) as backend:
        return backend(original, update, instruction, merged, language)
