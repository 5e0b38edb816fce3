"""``fastapply serve``: one warm model behind an OpenAI-compatible HTTP API.

Routes: ``POST /v1/chat/completions`` (``prediction`` is the draft; ``stream: true`` answers with
server-sent events; an edit in the apply form, ``<code>`` and ``<update>`` in one user message, is
answered with the new file as ``/v1/apply`` makes it), ``POST /v1/apply`` (original + update in, new file
out), ``POST /v1/code/apply`` (Relace's instant-apply shape of it), ``GET /v1/models``, ``GET /health``.
One worker thread runs the model; requests wait their turn in a bounded queue and get 503 when it is full
(``serve_queue.py``). A client that goes away has its work abandoned at the next forward pass. Bodies are
size-limited (413) and checked strictly (400 for malformed JSON or unknown fields); when an API key is set
every ``/v1`` route needs ``Authorization: Bearer KEY`` (401).
This module does HTTP and scheduling only; ``chat.py`` and ``apply.py`` do the decoding, and
``engine.resolve_edit`` decides and validates what ``/v1/apply`` returns, as for the CLI. It imports
FastAPI at once, so only the ``serve`` command imports it.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, replace

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.background import BackgroundTask
from starlette.exceptions import HTTPException

from fastapply.engine import EditRefused
from fastapply.errors import FastapplyError
from fastapply.serve_api import (ApiError, ApplyRequest, ChatEdit, ChatRequest, CodeApplyRequest, error_body,
                                 parse_body)
from fastapply.serve_queue import ModelQueue, Ticket, unless_disconnected


@dataclass(frozen=True)
class ServeConfig:
    host: str = "127.0.0.1"  # loopback only; other machines reach the server only when asked to
    port: int = 8000
    api_key: str | None = None  # when set, /v1 routes need "Authorization: Bearer <key>"
    queue_size: int = 16  # requests that may wait behind the running one; more are answered 503
    max_body_bytes: int = 8 * 1024 * 1024  # larger request bodies are answered 413
    model_name: str = "fastapply"  # the id /v1/models reports and responses carry
    merge_first: bool = False  # /v1/apply's auto engine returns a certain merge without the model (fastapply-small)
    preset: str = "default"  # the prompt preset of edits that name none (the apply form, /v1/code/apply, /v1/apply)


def create_app(model, tokenizer, config: ServeConfig = ServeConfig()):
    """The FastAPI application serving ``model`` (loaded by ``loading.load_model``)."""
    from fastapply.loading import expect_many_requests, stop_ids_of

    queue = ModelQueue(config.queue_size)
    stop_ids = stop_ids_of(model, tokenizer)
    expect_many_requests(model)

    @asynccontextmanager
    async def lifespan(app):
        yield
        queue.executor.shutdown(wait=False, cancel_futures=True)

    app = FastAPI(title="fastapply", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError):
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else {}
        if exc.status == 503:
            headers["Retry-After"] = "1"
        return JSONResponse(error_body(exc.message, exc.kind), exc.status, headers)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException):
        return JSONResponse(error_body(str(exc.detail), "invalid_request_error"), exc.status_code)

    def authorize(request: Request) -> None:
        if config.api_key is None:
            return
        scheme, _, key = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(key.strip().encode(), config.api_key.encode()):
            raise ApiError(401, "a valid API key is needed: Authorization: Bearer <key>", "invalid_api_key")

    @app.get("/health")
    async def health():
        return {"status": "ok", "model": config.model_name,
                "running": queue.running,  # 1 while the model thread works on a request
                "admitted": queue.admitted,  # requests holding a place: running or waiting
                "capacity": queue.capacity, "served": queue.served}

    @app.get("/v1/models")
    async def models(request: Request):
        authorize(request)
        return {"object": "list", "data": [{"id": config.model_name, "object": "model", "created": 0,
                                            "owned_by": "fastapply"}]}

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        from fastapply.chat import plan_chat, run_chat
        from fastapply.target import HFTarget

        authorize(request)
        body = await parse_body(request, ChatRequest, config.max_body_bytes)
        created, request_id = int(time.time()), f"chatcmpl-{uuid.uuid4().hex}"
        head = {"id": request_id, "created": created, "model": config.model_name}
        if (edit := body.apply_form()) is not None:
            return await chat_apply(request, body, edit, head)
        plan = _planned(lambda: plan_chat(model, tokenizer, body.message_dicts(), body.prediction_text(),
                                          body.token_budget(), body.stop_list(), body.temperature, body.seed))
        ticket = queue.admit()

        def decode(on_text=None):
            target = HFTarget(model, temperature=plan.temperature, seed=plan.seed)
            return run_chat(target, tokenizer, plan, stop_ids, on_text, ticket.check)

        if not body.stream:
            result = await unless_disconnected(request, ticket, queue.run(ticket, decode))
            return {**head, "object": "chat.completion", "system_fingerprint": None,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": result.text},
                                 "logprobs": None, "finish_reason": result.finish_reason}],
                    "usage": result.usage(), "fastapply": result.stats.as_dict()}

        async def abandon() -> None:  # async, so it runs on the event loop like every other queue change
            ticket.release(cancel=True)

        include_usage = bool(body.stream_options and body.stream_options.include_usage)
        # the background task frees the ticket even if the stream never started (client gone at once)
        return StreamingResponse(_events(queue, ticket, decode, head, include_usage), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache"}, background=BackgroundTask(abandon))

    @app.post("/v1/apply")
    async def apply(request: Request):
        from fastapply.syntax import file_language, get_language

        authorize(request)
        body = await parse_body(request, ApplyRequest, config.max_body_bytes)
        if body.language is not None:
            _planned(lambda: get_language(body.language))
            language = body.language
        else:
            language = await asyncio.to_thread(file_language, body.path, body.original)
        outcome = await edit_outcome(request, body, language)
        return {"object": "fastapply.apply", "model": config.model_name,
                **apply_answer(body.original, outcome, language)}

    async def edit_outcome(request: Request, edit: ApplyRequest, language: str | None):
        """``engine.resolve_edit``'s outcome of ``edit`` (an ``EditRefused`` returned, not raised): on the
        model thread in turn, or at once where no model runs (``engine: merge``)."""
        if edit.engine == "merge":  # no model: not queued behind model work
            return await asyncio.to_thread(_planned, lambda: resolve(edit, language, None))
        ticket = queue.admit()
        return await unless_disconnected(request, ticket, queue.run(ticket, lambda: resolve(edit, language, ticket)))

    def resolve(edit: ApplyRequest, language: str | None, ticket: Ticket | None):
        """The edit on the file's text as the CLI reads a file (LF lines), the new file given back in its
        line endings (and byte-order mark), as the CLI writes it."""
        from fastapply.apply import apply_edit
        from fastapply.engine import ModelRun, resolve_edit
        from fastapply.fileio import decode, encode

        def run_model(shown: str, update: str, instruction: str, merged: str | None, watch) -> ModelRun:
            result = apply_edit(model, tokenizer, shown, update, instruction, preset=edit.preset or config.preset,
                                merged=merged, max_new_tokens=edit.max_tokens, temperature=edit.temperature,
                                seed=edit.seed, on_pass=lambda out, stats: ticket.check(), watch=watch,
                                language=language)
            return ModelRun.of(result)

        original, fmt = decode(edit.original.encode("utf-8"), "the original")
        try:
            outcome = resolve_edit(original, edit.update, language, edit.engine, run_model, edit.force,
                                   edit.instruction, config.merge_first, edit.focus, edit.path)
        except EditRefused as refused:
            return refused
        return replace(outcome, text=encode(outcome.text, outcome.format(fmt)).decode("utf-8"))  # a BOM kept

    async def chat_apply(request: Request, body: ChatRequest, edit: ChatEdit, head: dict):
        """A chat request in the apply form, answered as Morph's API answers it: the new file is the message
        (decided and checked as ``/v1/apply`` does with the auto engine, ``whole_file``)."""
        from fastapply.prompt import chat_ids, encode_text

        if body.stop_list():
            raise ApiError(400, "stop: an edit in the apply form (<code>, <update>) is answered with the whole "
                                "file; stop strings cannot cut it")
        asked = ApplyRequest(original=edit.original, update=edit.update, instruction=edit.instruction,
                             max_tokens=body.token_budget(), temperature=body.temperature, seed=body.seed)
        text, details = await whole_file(request, asked)
        prompt, completion = await asyncio.to_thread(lambda: (len(chat_ids(tokenizer, body.message_dicts())),
                                                              len(encode_text(tokenizer, text))))
        usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                 "completion_tokens_details": {"reasoning_tokens": 0, "accepted_prediction_tokens": 0,
                                               "rejected_prediction_tokens": 0}}
        if body.stream:
            include_usage = bool(body.stream_options and body.stream_options.include_usage)
            return StreamingResponse(_whole_events(head, text, usage, include_usage),
                                     media_type="text/event-stream", headers={"Cache-Control": "no-cache"})
        return {**head, "object": "chat.completion", "system_fingerprint": None,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "logprobs": None, "finish_reason": "stop"}],
                "usage": usage, "fastapply": details}

    @app.post("/v1/code/apply")
    async def code_apply(request: Request):
        from fastapply.prompt import encode_text, get_preset, prompt_ids

        authorize(request)
        body = await parse_body(request, CodeApplyRequest, config.max_body_bytes)
        if body.stream:
            raise ApiError(400, "stream: fastapply answers /v1/code/apply with the whole merged file, checked")
        asked = ApplyRequest(original=body.initialCode, update=body.editSnippet, instruction=body.instruction)
        text, details = await whole_file(request, asked)
        preset = get_preset(config.preset)
        prompt, completion = await asyncio.to_thread(lambda: (
            len(prompt_ids(tokenizer, preset, asked.original, asked.update, asked.instruction)),
            len(encode_text(tokenizer, text))))
        return {"mergedCode": text, "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                                              "total_tokens": prompt + completion}, "fastapply": details}

    async def whole_file(request: Request, asked: ApplyRequest) -> tuple[str, dict]:
        """The new file and ``/v1/apply``'s answer without it, for the routes that answer with the file alone
        (the apply form, ``/v1/code/apply``): no file name, so in the language the file's text tells; a
        refused edit is a 422 error, never a file."""
        from fastapply.syntax import file_language

        language = await asyncio.to_thread(file_language, None, asked.original)
        outcome = await edit_outcome(request, asked, language)
        if isinstance(outcome, EditRefused):
            raise ApiError(422, f"the edit was refused ({', '.join(outcome.reasons)}): {outcome}", "edit_refused")
        details = apply_answer(asked.original, outcome, language)
        return details.pop("text"), details

    return app


def apply_answer(original: str, outcome, language: str | None) -> dict:
    """The body of ``/v1/apply``'s answer for an ``EditOutcome`` or an ``EditRefused`` in ``language``: ``ok``
    false means refused (no ``text``; ``refused`` says why); ``validation`` is null when no model output was
    checked."""
    refused = isinstance(outcome, EditRefused)
    run, merged, problems = outcome.model_run, outcome.merge, outcome.problems
    text = None if refused else outcome.text
    return {
        "ok": not refused, "text": text, "changed": None if refused else text != original, "language": language,
        "engine": None if refused else outcome.engine,  # what wrote the text: "merge" or "model"
        "closed": run.closed if run is not None else None,
        "merge": {"confidence": merged.confidence, "reasons": list(merged.reasons)} if merged is not None else None,
        "validation": {"ok": not problems, "reasons": [p.name for p in problems],
                       "problems": [{"name": p.name, "message": p.message} for p in problems]}
        if run is not None else None,
        "refused": {"message": str(outcome), "reasons": list(outcome.reasons)} if refused else None,
        "stats": run.stats if run is not None else None,
    }


def _planned(make):
    """``make()``, with fastapply's errors turned into 400 answers."""
    try:
        return make()
    except FastapplyError as exc:
        raise ApiError(400, str(exc)) from None


def _chunk(head: dict, delta: dict, finish_reason=None, **extra) -> str:
    """One server-sent event in OpenAI's ``chat.completion.chunk`` format."""
    choices = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]
    return f"data: {json.dumps({**head, 'object': 'chat.completion.chunk', 'choices': choices, **extra})}\n\n"


def _ending(head: dict, finish_reason: str, usage: dict, include_usage: bool) -> Iterator[str]:
    """The events after the last text: the finish reason, the usage where asked, ``data: [DONE]``."""
    yield _chunk(head, {}, finish_reason, **({"usage": None} if include_usage else {}))
    if include_usage:
        yield f"data: {json.dumps({**head, 'object': 'chat.completion.chunk', 'choices': [], 'usage': usage})}\n\n"
    yield "data: [DONE]\n\n"


async def _whole_events(head: dict, text: str, usage: dict, include_usage: bool):
    """A text known in full, as server-sent events: one chunk with all of it."""
    yield _chunk(head, {"role": "assistant", "content": ""})
    yield _chunk(head, {"content": text})
    for event in _ending(head, "stop", usage, include_usage):
        yield event


async def _events(queue: ModelQueue, ticket: Ticket, decode, head: dict, include_usage: bool):
    """Server-sent events in OpenAI's ``chat.completion.chunk`` format, ending with ``data: [DONE]``."""
    loop = asyncio.get_running_loop()
    messages: asyncio.Queue = asyncio.Queue()

    def on_text(text: str) -> None:
        loop.call_soon_threadsafe(messages.put_nowait, text)

    try:
        yield _chunk(head, {"role": "assistant", "content": ""})
        job = asyncio.ensure_future(queue.run(ticket, lambda: decode(on_text)))
        # deltas are posted before the job's end is (both through the loop, in order), so None comes last
        job.add_done_callback(lambda done: (messages.put_nowait(None), done.cancelled() or done.exception()))
        while (text := await messages.get()) is not None:
            yield _chunk(head, {"content": text})
        try:
            result = job.result()
        except FastapplyError as exc:
            yield f"data: {json.dumps(error_body(str(exc), 'invalid_request_error'))}\n\n"
            yield "data: [DONE]\n\n"
        else:
            for event in _ending(head, result.finish_reason, result.usage(), include_usage):
                yield event
    finally:
        ticket.release(cancel=True)


def serve(model_path: str, device: str = "auto", dtype: str = "auto", adapter: str | None = None,
          config: ServeConfig = ServeConfig(), log_level: str = "info", threads: int | None = None) -> None:
    """Load the model once and serve it until interrupted; ``threads`` caps torch's CPU threads."""
    import torch
    import uvicorn

    from fastapply.loading import load_model

    if threads:
        torch.set_num_threads(threads)
    model, tokenizer = load_model(model_path, device, dtype, adapter)
    app = create_app(model, tokenizer, config)
    uvicorn.run(app, host=config.host, port=config.port, log_level=log_level, access_log=log_level == "debug")


@contextmanager
def running_server(app, host: str = "127.0.0.1") -> Iterator[str]:
    """Serve ``app`` on a free port of ``host`` from a thread of this process; yields the base URL
    (``http://host:port``). For tests and benchmarks; ``serve`` is the command's way."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise FastapplyError("the server did not start")
        time.sleep(0.01)
    try:
        yield f"http://{host}:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
