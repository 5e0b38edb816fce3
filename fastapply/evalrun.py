"""Running eval tasks: each task's records from the merge engine, the replay target, a local model or a
server, scored. Tasks run in this process, in worker processes (merge, replay) or in threads sharing
one server connection (a server answers many requests; DESIGN.md §7). ``evaluate.run_eval`` decides
what to run and keeps the records; this module neither reads nor writes result files.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import replace

from fastapply import __version__
from fastapply.engine import EditReading, merge_reading, read_edit, unsettled
from fastapply.errors import FastapplyError, UsageError
from fastapply.evalconfig import GENERATE_METHODS, REMOTE_POLICY, EvalConfig, git_commit, merge_engine_available, now
from fastapply.focus import focus
from fastapply.metrics import score
from fastapply.tasks import Task
from fastapply.validate import RefusalWatch, validate

_WORKER: dict = {}  # per process: the config and loaded resources


def execute(todo, config: EvalConfig, workers: int, tokenizer=None, model=None):
    """Yield (task, records) for every (task, policies) in ``todo``, in task order: in parallel processes
    if asked (merge, replay), or from ``workers`` threads sharing one server connection (a server)."""
    if config.server is not None:
        yield from _execute_remote(todo, config, workers)
        return
    if workers == 1 or len(todo) == 1:
        _setup(config, tokenizer, model)
        for task, policies in todo:
            yield task, _run_task(task, policies)
        return
    import multiprocessing

    if config.engine == "replay" and tokenizer is None:
        tokenizer = _load_tokenizer(config)  # once here, then sent to each worker
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"), initializer=_setup,
                             initargs=(config, tokenizer, None)) as pool:
        futures = [(task, pool.submit(_run_task, task, policies)) for task, policies in todo]
        for task, future in futures:
            yield task, future.result()


def _execute_remote(todo, config: EvalConfig, workers: int):
    """Every task sent to the server, ``workers`` at a time, over one shared ``RemoteBackend``."""
    from fastapply.client import RemoteBackend

    with RemoteBackend(config.server, config.api_key, config.model, config.preset, config.send_prediction,
                       config.max_new_tokens) as backend, ThreadPoolExecutor(workers) as pool:
        backend.model  # the model's name, asked of the server once (an unreachable server stops the run here)
        _WORKER.clear()
        _WORKER.update(config=config, backend=backend)
        futures = [(task, pool.submit(_run_task, task, policies)) for task, policies in todo]
        for task, future in futures:
            yield task, future.result()


def _setup(config: EvalConfig, tokenizer, model) -> None:
    _WORKER.clear()
    _WORKER["config"] = config
    if config.engine == "replay":
        _WORKER["tokenizer"] = tokenizer if tokenizer is not None else _load_tokenizer(config)
    elif config.engine in ("model", "auto"):
        if model is None or tokenizer is None:
            from fastapply.loading import load_model

            model, tokenizer = load_model(config.model, config.device, config.dtype, config.adapter)
        from fastapply.loading import expect_many_requests

        expect_many_requests(model)  # the output layer's screen is built, and its costs measured, in the warm-up
        _WORKER["model"], _WORKER["tokenizer"] = model, tokenizer
        _WORKER["warm"] = set()


def _load_tokenizer(config: EvalConfig):
    source = config.tokenizer or config.model
    if not source:
        raise UsageError("--engine replay needs a tokenizer: --tokenizer PATH (or --model PATH)")
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    try:
        return AutoTokenizer.from_pretrained(source)
    except (OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise FastapplyError(f"cannot load tokenizer {source}: {first}") from None


def _run_task(task: Task, policies: Sequence[str]) -> list[dict]:
    """Every policy on one task: the records, scored; a model's answers also validated (``validation``
    names the checks that refuse it, ``refused`` says whether fastapply would have written nothing)."""
    config: EvalConfig = _WORKER["config"]
    unread = None  # why the edit cannot be read (an answer whose code blocks are for other files): each record's error
    try:
        read = read_edit(task.original, task.update, task.language, task.instruction, task.path)
    except FastapplyError as exc:
        read, unread = EditReading(task.update, task.update, task.instruction, None), exc
    task = replace(task, update=read.update, instruction=read.instruction)  # as a model reads it, as `fastapply FILE`
    merged = merge_result = merge_record = placed = merge_failed = None
    drafts_merge = config.engine != "merge" and (config.merge_draft or config.engine == "auto") and any(
        p in ("fastapply", REMOTE_POLICY) for p in policies)
    if (drafts_merge or config.focusing) and merge_engine_available():
        try:
            result, record = _merge(task, read)
            placed = result if config.focusing else None
            if drafts_merge:
                merge_result, merge_record, merged = result, record, result.text
        except Exception as exc:  # noqa: BLE001 - a failing merge means no merged draft (and no focus) for this task
            merged, merge_failed = None, f"{type(exc).__name__}: {exc}"  # recorded: a merge engine bug shows
    window = focus(task.original, task.update, placed, task.language, task.instruction)
    shown = task if window is None else replace(task, original=window.cut(task.original))
    shown_draft = merged if window is None else window.cut_draft(merged)  # the merge's candidate, as shown
    records, limit = [], None
    for policy in policies:
        started = time.perf_counter()
        try:
            if unread is not None:
                raise unread
            if config.engine == "merge":
                result, extra = _merge(task, read)
                output, closed, speed = result.text, True, None
                extra = {"merge": extra, "refused": result.confidence != "certain"}
            elif config.engine == "auto" and merge_result is not None and unsettled(
                    merge_result, task.original, task.instruction, task.language) is None:
                output, closed, speed = merged, True, None
                extra = {"merge": merge_record, "decided_by": "merge", "refused": False}
            else:
                stopped = None
                draft = shown_draft if policy in ("fastapply", REMOTE_POLICY) else None
                if config.server is not None:
                    output, closed, speed = _remote(shown, draft)
                else:
                    applied = _decode(shown, policy, draft, task)
                    output, closed, speed = applied.text, applied.closed, applied.stats.as_dict()
                    stopped = applied.stopped
                    if config.engine != "replay" and config.time_prefill:
                        limit = limit or round(_limit(shown, applied.token_ids), 6)  # the stored figures give vs_limit
                        speed |= {"limit_s": limit, "vs_limit": round(speed["seconds"] / limit, 3)}
                extra = {"merged_draft": merged is not None} if policy in ("fastapply", REMOTE_POLICY) else {}
                if window is not None:  # the model rewrote these lines (1-based, inclusive) of the file
                    output, extra = window.splice(task.original, output), extra | {"window": window.shown}
                if stopped is not None:  # --stop-refused: the answer's first part, stopped for this problem
                    extra |= {"stopped": stopped.name}
                if config.engine == "auto":
                    extra |= {"merge": merge_record, "decided_by": "model"}
                if config.engine != "replay":
                    validation = [p.name for p in validate(task.original, output, task.update, task.language, closed,
                                                          task.instruction, merge_result)]
                    extra |= {"validation": validation, "refused": bool(validation)}
            error = None
        except FastapplyError as exc:
            output, closed, speed, extra, error = None, False, None, {"refused": True}, str(exc)
        except Exception as exc:  # noqa: BLE001 - one broken task is recorded, not the end of a 450-task run
            output, closed, speed, extra, error = None, False, None, {"refused": True}, f"{type(exc).__name__}: {exc}"
        seconds = time.perf_counter() - started
        if speed is None:
            speed = {"seconds": round(seconds, 4), "chars": len(output or ""),
                     "chars_per_s": round(len(output or "") / seconds, 1) if seconds else 0.0}
        records.append({
            "task": task.id, "language": task.language, "path": task.path,
            "lines": len(task.original.splitlines()), "engine": config.engine, "policy": policy,
            "fastapply_version": __version__, "git_commit": git_commit(), "model": config.model_source,
            "options": config.options(), "output": output, "closed": closed,
            "accuracy": score(output, task.expected, task.original, task.language, closed).as_dict(),
            "speed": speed, "error": error, **extra, **({"merge_error": merge_failed} if merge_failed else {}),
            "finished": now(),
        })
    return records


def _merge(task: Task, read: EditReading):
    """(MergeResult, its record) from the merge engine for the edit as it ``read`` it, timed."""
    started = time.perf_counter()
    result = merge_reading(task.original, read, task.language)
    return result, {"confidence": result.confidence, "reasons": list(result.reasons),
                    "seconds": round(time.perf_counter() - started, 4)}


def _remote(task: Task, merged: str | None) -> tuple[str, bool, dict]:
    """(output, closed, speed) from the server; the speed has the server's passes and tokens when it
    reports them (``fastapply serve``), beside the client's wall-clock seconds."""
    output, closed, stats = _WORKER["backend"](task.original, task.update, task.instruction, merged, task.language)
    served = stats.get("server") or {}
    return output, closed, {**stats, **{k: served[k] for k in ("passes", "tokens", "tokens_per_pass") if k in served}}


def _limit(task: Task, answer: list[int]) -> float:
    """The task's limit on the local model: one prefill of the prompt and the ``answer`` the model wrote
    (``fastapply.bench.limit_seconds``), which no rewrite of it can beat."""
    from fastapply.apply import plan_edit
    from fastapply.bench import limit_seconds

    config: EvalConfig = _WORKER["config"]
    plan = plan_edit(_WORKER["tokenizer"], task.original, task.update, task.instruction, config.preset,
                     language=task.language)
    return limit_seconds(_WORKER["model"], [*plan.prompt_ids, *answer], 1)


def _decode(task: Task, policy: str, merged: str | None, whole: Task):
    """One answer of the model to ``task`` (``whole``'s file, or the window of it the model is shown)."""
    from fastapply.apply import plan_edit, run_plan
    from fastapply.prompt import answer_ids

    config: EvalConfig = _WORKER["config"]
    tokenizer = _WORKER["tokenizer"]
    plan = plan_edit(tokenizer, task.original, task.update, task.instruction, config.preset, merged, task.language)
    reference = answer_ids(tokenizer, plan.preset, whole.expected)
    # room for the reference answer even where it is more than twice the original (the default budget)
    budget = config.max_new_tokens or max(plan.default_max_new_tokens, len(reference) + 256)
    if config.engine == "replay":
        from fastapply.replay import ReplayTarget

        target = ReplayTarget(reference, tokenizer.eos_token_id)
        return run_plan(target, tokenizer, plan, policy, budget, {tokenizer.eos_token_id} - {None})
    from fastapply.apply import token_budget
    from fastapply.bench import generate_baseline
    from fastapply.loading import stop_ids_of
    from fastapply.target import HFTarget

    model = _WORKER["model"]
    stops = stop_ids_of(model, tokenizer)
    budget = token_budget(model, plan, budget)

    def once(limit: int, watch=None):
        if policy in GENERATE_METHODS:
            return generate_baseline(model, tokenizer, plan, limit, stops, prompt_lookup=policy == "prompt-lookup")
        return run_plan(HFTarget(model, model_key=config.model), tokenizer, plan, policy, limit, stops, watch=watch)

    if policy not in _WORKER["warm"]:  # untimed: first-call overheads and the verify-cost calibration
        once(16)
        _WORKER["warm"].add(policy)
    # as `fastapply FILE` does: an answer sure to be refused is stopped as it is written
    return once(budget, RefusalWatch(whole.original, whole.update, whole.language, whole.instruction)
                if config.stop_refused else None)
