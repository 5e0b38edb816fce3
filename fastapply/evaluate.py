"""``fastapply eval``: run an apply engine over edit tasks, one result file per task and policy.

What a run is lives in ``evalconfig.py`` (engines, policies, model source) and how each task runs in
``evalrun.py`` (the merge engine, replay, a local model, or a server sent many tasks at once). This
module decides what is left to run, keeps the results in ``OUT/results/<policy>/<task>.json`` (a re-run
skips the ones already there, and refuses a directory of another run's options), describes the run and
has the LLM judge grade the outputs. Every result records the fastapply version, the git commit, the
model source (a checkpoint, or a server's URL) and the options. It does not print or draw (``report.py``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from fastapply import __version__
from fastapply.errors import UsageError
from fastapply.evalconfig import EvalConfig, git_commit, merge_engine_available, now
from fastapply.evalrun import execute
from fastapply.judge import JudgeError, grade
from fastapply.tasks import Task

__all__ = ["EvalConfig", "EvalRun", "default_tasks_path", "merge_engine_available", "result_path", "run_eval",
           "run_meta"]


@dataclass(frozen=True)
class EvalRun:
    records: list[dict]  # one per task and policy, in task order
    ran: int  # results computed by this run
    resumed: int  # results found from an earlier run and kept


def default_tasks_path() -> Path:
    """The 450-task suite: ``evals/tasks/`` of a checkout, else ``fastapply/suite/`` where a wheel
    installs it; ``UsageError`` when this install has neither."""
    here = Path(__file__).resolve().parent
    for path in (here.parent / "evals" / "tasks" / "suite.jsonl.gz", here / "suite" / "suite.jsonl.gz"):
        if path.exists():
            return path
    raise UsageError("no --tasks given and no suite in this installation: pass --tasks FILE.jsonl")


def result_path(out_dir: Path, task_id: str, policy: str) -> Path:
    """``OUT/results/<policy>/<task>.json``; ids with characters unsafe in file names get a hash suffix."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", task_id)[:120]
    if safe != task_id:
        safe += "-" + hashlib.sha1(task_id.encode()).hexdigest()[:8]
    return out_dir / "results" / policy / f"{safe}.json"


def run_eval(tasks: Sequence[Task], config: EvalConfig, out_dir: str | Path, workers: int = 1,
             on_task: Callable[[int, int], None] | None = None, tokenizer=None, model=None) -> EvalRun:
    """Run ``config``'s engine and policies on every task not already done in ``out_dir``.

    ``on_task(done, total)`` is called after each task. ``tokenizer`` / ``model`` are loaded objects to
    use instead of loading ``config.tokenizer`` / ``config.model`` (tests, notebooks).
    """
    config = config.resolved()
    if workers < 1:
        raise UsageError("--workers must be at least 1")
    if config.engine in ("model", "auto") and config.server is None and workers > 1:
        raise UsageError("--workers runs merge and replay tasks, or requests to a server, in parallel; a local "
                         "model runs one task at a time on its device")
    out_dir = Path(out_dir)
    _claim(out_dir, config)
    records: dict[tuple[str, str], dict] = {}
    todo: list[tuple[Task, tuple[str, ...]]] = []
    for task in tasks:
        missing = []
        for policy in config.policies:
            record = _load_result(result_path(out_dir, task.id, policy))
            if record is None:
                missing.append(policy)
            else:
                records[task.id, policy] = record
        if missing:
            todo.append((task, tuple(missing)))
    resumed = len(records)
    total, done = len(tasks), len(tasks) - len(todo)
    if on_task is not None:
        on_task(done, total)
    if todo:
        for task, new in execute(todo, config, workers, tokenizer, model):
            for record in new:
                _write_json(result_path(out_dir, task.id, record["policy"]), record)
                records[task.id, record["policy"]] = record
            done += 1
            if on_task is not None:
                on_task(done, total)
    if config.judge is not None:
        _judge_missing(records, {t.id: t for t in tasks}, config, out_dir, workers)
    ordered = [records[t.id, p] for t in tasks for p in config.policies if (t.id, p) in records]
    return EvalRun(records=ordered, ran=len(records) - resumed, resumed=resumed)


def run_meta(config: EvalConfig, run: EvalRun, tasks: Path, limit: int | None, out: Path,
             max_lines: int | None = None) -> dict:
    """What the report says about the run, with the command that reproduces it (never a key)."""
    args = ["--tasks", str(tasks), "--engine", config.engine, "--draft", ",".join(config.policies)]
    for flag, value in (("--model", config.model), ("--tokenizer", config.tokenizer), ("--adapter", config.adapter),
                        ("--preset", config.preset), ("--max-new-tokens", config.max_new_tokens),
                        ("--max-lines", max_lines), ("--limit", limit), ("--out", out)):
        if value is not None and not (flag == "--preset" and value == "default"):
            args += [flag, str(value)]
    if config.server is not None:
        args += ["--backend", "openai", "--base-url", config.server]
        args += [] if config.send_prediction else ["--no-prediction"]
    elif config.engine in ("model", "auto"):
        args += ["--device", config.device, "--dtype", config.dtype]
    if not config.merge_draft:
        args.append("--no-merge-draft")
    if not config.time_prefill and config.engine in ("model", "auto") and config.server is None:
        args.append("--no-time-prefill")
    if config.stop_refused:
        args.append("--stop-refused")
    if not config.focus and config.engine in ("model", "auto"):
        args.append("--whole-file")
    if config.judge is not None:
        args += ["--judge-url", config.judge.url, "--judge-model", config.judge.model]
    return {"fastapply_version": __version__, "git_commit": git_commit(), "model": config.model_source,
            "options": config.options(), "command": "fastapply eval " + shlex.join(args),
            "results_computed": run.ran, "results_resumed": run.resumed}


def _claim(out_dir: Path, config: EvalConfig) -> None:
    """Record the run's options in ``OUT/run.json``; refuse a directory holding another run's results."""
    path = out_dir / "run.json"
    key = config.run_key()
    if path.exists():
        try:
            previous = json.loads(path.read_text())["run_key"]
        except (OSError, ValueError, KeyError):
            previous = None
        if previous != key:
            previous = previous or {}
            changed = sorted(k for k in {*key, *previous} if previous.get(k) != key.get(k))
            raise UsageError(f"{out_dir} holds results of another run (differs in: {', '.join(changed) or 'all'}); "
                             "pass a new --out, or the same options to resume")
        return
    _write_json(path, {"run_key": key, "fastapply_version": __version__, "git_commit": git_commit(),
                       "started": now()})


def _load_result(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _write_json(path: Path, data: dict) -> None:
    """Write atomically, so an interrupted run never leaves a half result that a re-run would keep."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False))
    os.replace(tmp, path)


# -- the judge ------------------------------------------------------------------------------------

def _judge_missing(records: dict, tasks: dict[str, Task], config: EvalConfig, out_dir: Path, workers: int) -> None:
    """Grade every result with an output and no verdict from this judge yet (so a re-run adds grades),
    ``workers`` requests at a time."""
    import httpx
    from concurrent.futures import ThreadPoolExecutor

    def needs(key) -> bool:
        record, verdict = records[key], records[key].get("judge") or {}
        return record.get("output") is not None and key[0] in tasks and not (
            verdict.get("model") == config.judge.model and "score" in verdict)

    def judge_one(key, client) -> None:
        record, task = records[key], tasks[key[0]]
        try:
            v = grade(config.judge, task.original, task.update, task.expected, record["output"], client)
            record["judge"] = {"model": config.judge.model, "score": v.score, "reason": v.reason}
        except JudgeError as exc:
            record["judge"] = {"model": config.judge.model, "error": str(exc)}
        _write_json(result_path(out_dir, *key), record)

    with httpx.Client(timeout=config.judge.timeout_s) as client, ThreadPoolExecutor(workers) as pool:
        for future in [pool.submit(judge_one, key, client) for key in records if needs(key)]:
            future.result()
