"""``fastapply eval``: run an apply engine over edit tasks, one result file per task and policy.

Engines: ``merge`` (the deterministic merge engine), ``model`` (a transformers model with each draft
policy, plus ``plain`` = greedy ``model.generate`` and ``prompt-lookup`` = ``generate`` with prompt
lookup, timed in the same run) and ``replay`` (``ReplayTarget``: the reference answer stands in for the
model, so the passes measure the draft policies alone; a tokenizer is all it needs). Results go to
``OUT/results/<policy>/<task>.json``; a re-run skips the ones already there. Every result records the
fastapply version, the git commit, the model and the options. This module runs and records; it does
not print or draw (``report.py``).
"""

from __future__ import annotations

import datetime
import hashlib
import importlib.util
import json
import os
import re
import shlex
import subprocess
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

from fastapply import __version__
from fastapply.draft import POLICIES
from fastapply.errors import FastapplyError, UsageError
from fastapply.judge import JudgeConfig, JudgeError, grade
from fastapply.metrics import score
from fastapply.tasks import Task

ENGINES = ("merge", "model", "replay")
GENERATE_METHODS = ("plain", "prompt-lookup")  # transformers' generate, run beside the loop's policies
DEFAULT_POLICIES = {"merge": ("merge",), "replay": ("fastapply", "ngram", "pld", "none"),
                    "model": ("plain", "prompt-lookup", "ngram", "fastapply")}


@dataclass(frozen=True)
class EvalConfig:
    engine: str  # merge, model or replay
    policies: tuple[str, ...] = ()  # draft policies (and generate methods); () = the engine's defaults
    model: str | None = None  # checkpoint path or hub id (model engine; replay takes its tokenizer)
    tokenizer: str | None = None  # tokenizer path or hub id for replay; defaults to the model's
    adapter: str | None = None
    device: str = "auto"
    dtype: str = "auto"
    preset: str = "default"
    max_new_tokens: int | None = None  # None: twice the file and the edit plus 256 (and within the model's context)
    merge_draft: bool = True  # the fastapply policy drafts the merge engine's candidate first, when there is one
    judge: JudgeConfig | None = None

    def resolved(self) -> EvalConfig:
        """This config with the engine's default policies filled in, checked; ``UsageError`` otherwise."""
        if self.engine not in ENGINES:
            raise UsageError(f"unknown engine {self.engine!r}; choose one of: {', '.join(ENGINES)}")
        policies = self.policies or DEFAULT_POLICIES[self.engine]
        allowed = {"merge": ("merge",), "replay": tuple(POLICIES),
                   "model": (*GENERATE_METHODS, *POLICIES)}[self.engine]
        for policy in policies:
            if policy not in allowed:
                hint = " (plain and prompt-lookup run model.generate: --engine model; replay has none and pld)" \
                    if policy in GENERATE_METHODS else ""
                raise UsageError(f"--draft {policy!r} does not go with --engine {self.engine}; "
                                 f"choose from: {', '.join(allowed)}{hint}")
        if self.engine == "model" and not self.model:
            raise UsageError("--engine model needs --model PATH_OR_HUB_ID")
        if self.engine == "merge" and not merge_engine_available():
            raise UsageError("--engine merge needs the merge engine (fastapply.merge), which this install lacks")
        return EvalConfig(**{**asdict(self), "policies": tuple(dict.fromkeys(policies)), "judge": self.judge})

    def options(self) -> dict:
        """What a result records about how it was made (never the judge's key)."""
        judged = {"judge_url": self.judge.url, "judge_model": self.judge.model} if self.judge else {}
        return {name: getattr(self, name) for name in
                ("engine", "model", "tokenizer", "adapter", "device", "dtype", "preset", "max_new_tokens",
                 "merge_draft")} | judged

    def run_key(self) -> dict:
        """The options two runs must share for one to resume the other's results."""
        return {k: v for k, v in self.options().items() if k not in ("judge_url", "judge_model", "device")}


@dataclass(frozen=True)
class EvalRun:
    records: list[dict]  # one per task and policy, in task order
    ran: int  # results computed by this run
    resumed: int  # results found from an earlier run and kept


def default_tasks_path() -> Path:
    """The repository's suite, ``evals/tasks/suite.jsonl.gz``; ``UsageError`` when this install lacks it."""
    path = Path(__file__).resolve().parent.parent / "evals" / "tasks" / "suite.jsonl.gz"
    if not path.exists():
        raise UsageError(f"no --tasks given and no suite at {path} (it ships with a fastapply checkout): "
                         "pass --tasks FILE.jsonl")
    return path


def merge_engine_available() -> bool:
    return importlib.util.find_spec("fastapply.merge") is not None


@lru_cache(maxsize=1)
def git_commit() -> str | None:
    """The commit of the checkout fastapply runs from (``-dirty`` when tracked files changed), or None."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("-dirty" if dirty else "")


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
    if config.engine == "model" and workers > 1:
        raise UsageError("--workers runs merge and replay tasks in parallel; the model engine runs one task "
                         "at a time on its device")
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
        for task, new in _execute(todo, config, workers, tokenizer, model):
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


def run_meta(config: EvalConfig, run: EvalRun, tasks: Path, limit: int | None, out: Path) -> dict:
    """What the report says about the run, with the command that reproduces it (never the judge's key)."""
    args = ["--tasks", str(tasks), "--engine", config.engine, "--draft", ",".join(config.policies)]
    for flag, value in (("--model", config.model), ("--tokenizer", config.tokenizer), ("--adapter", config.adapter),
                        ("--preset", config.preset), ("--max-new-tokens", config.max_new_tokens),
                        ("--limit", limit), ("--out", out)):
        if value is not None and not (flag == "--preset" and value == "default"):
            args += [flag, str(value)]
    if config.engine == "model":
        args += ["--device", config.device, "--dtype", config.dtype]
    if not config.merge_draft:
        args.append("--no-merge-draft")
    if config.judge is not None:
        args += ["--judge-url", config.judge.url, "--judge-model", config.judge.model]
    return {"fastapply_version": __version__, "git_commit": git_commit(), "model": config.model,
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
            changed = sorted(k for k in key if previous is None or previous.get(k) != key[k])
            raise UsageError(f"{out_dir} holds results of another run (differs in: {', '.join(changed) or 'all'}); "
                             "pass a new --out, or the same options to resume")
        return
    _write_json(path, {"run_key": key, "fastapply_version": __version__, "git_commit": git_commit(),
                       "started": _now()})


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


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


# -- execution -----------------------------------------------------------------------------------

_WORKER: dict = {}  # per process: the config and loaded resources


def _execute(todo, config: EvalConfig, workers: int, tokenizer, model):
    """Yield (task, records) for every (task, policies) in ``todo``, in parallel processes if asked."""
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


def _setup(config: EvalConfig, tokenizer, model) -> None:
    _WORKER.clear()
    _WORKER["config"] = config
    if config.engine == "replay":
        _WORKER["tokenizer"] = tokenizer if tokenizer is not None else _load_tokenizer(config)
    elif config.engine == "model":
        if model is None or tokenizer is None:
            from fastapply.target import load_model

            model, tokenizer = load_model(config.model, config.device, config.dtype, config.adapter)
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
    """Every policy on one task: the records, scored."""
    config: EvalConfig = _WORKER["config"]
    merged = None
    if config.engine != "merge" and config.merge_draft and "fastapply" in policies and merge_engine_available():
        try:
            merged = _merge(task)[0].text
        except Exception:  # noqa: BLE001 - a failing merge only means no merged draft for this task
            merged = None
    records = []
    for policy in policies:
        started = time.perf_counter()
        try:
            if config.engine == "merge":
                result, extra = _merge(task)
                output, closed, speed = result.text, True, None
                extra = {"merge": extra}
            else:
                applied = _decode(task, policy, merged if policy == "fastapply" else None)
                output, closed, speed = applied.text, applied.closed, applied.stats.as_dict()
                extra = {"merged_draft": merged is not None} if policy == "fastapply" else {}
            error = None
        except FastapplyError as exc:
            output, closed, speed, extra, error = None, False, None, {}, str(exc)
        except Exception as exc:  # noqa: BLE001 - one broken task is recorded, not the end of a 450-task run
            output, closed, speed, extra, error = None, False, None, {}, f"{type(exc).__name__}: {exc}"
        seconds = time.perf_counter() - started
        if speed is None:
            speed = {"seconds": round(seconds, 4), "chars": len(output or ""),
                     "chars_per_s": round(len(output or "") / seconds, 1) if seconds else 0.0}
        records.append({
            "task": task.id, "language": task.language, "path": task.path,
            "lines": len(task.original.splitlines()), "engine": config.engine, "policy": policy,
            "fastapply_version": __version__, "git_commit": git_commit(), "model": config.model,
            "options": config.options(), "output": output, "closed": closed,
            "accuracy": score(output, task.expected, task.original, task.language, closed).as_dict(),
            "speed": speed, "error": error, **extra, "finished": _now(),
        })
    return records


def _merge(task: Task):
    """(MergeResult, its record) from the merge engine, timed."""
    from fastapply.merge import merge

    started = time.perf_counter()
    result = merge(task.original, task.update, task.language)
    return result, {"confidence": result.confidence, "reasons": list(result.reasons),
                    "seconds": round(time.perf_counter() - started, 4)}


def _decode(task: Task, policy: str, merged: str | None):
    from fastapply.apply import plan_edit, run_plan

    from fastapply.prompt import answer_ids

    config: EvalConfig = _WORKER["config"]
    tokenizer = _WORKER["tokenizer"]
    plan = plan_edit(tokenizer, task.original, task.update, task.instruction, config.preset, merged)
    reference = answer_ids(tokenizer, plan.preset, task.expected)
    # room for the reference answer even where it is more than twice the original (the default budget)
    budget = config.max_new_tokens or max(plan.default_max_new_tokens, len(reference) + 256)
    if config.engine == "replay":
        from fastapply.target import ReplayTarget

        target = ReplayTarget(reference, tokenizer.eos_token_id)
        return run_plan(target, tokenizer, plan, policy, budget, {tokenizer.eos_token_id} - {None})
    from fastapply.apply import token_budget
    from fastapply.bench import generate_baseline
    from fastapply.target import HFTarget, stop_ids_of

    model = _WORKER["model"]
    stops = stop_ids_of(model, tokenizer)
    budget = token_budget(model, plan, budget)

    def once(limit: int):
        if policy in GENERATE_METHODS:
            return generate_baseline(model, tokenizer, plan, limit, stops, prompt_lookup=policy == "prompt-lookup")
        return run_plan(HFTarget(model, model_key=config.model), tokenizer, plan, policy, limit, stops)

    if policy not in _WORKER["warm"]:  # untimed: first-call overheads and the verify-cost calibration
        once(16)
        _WORKER["warm"].add(policy)
    return once(budget)


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
