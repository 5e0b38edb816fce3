"""``fastapply eval``: run the eval suite (``fastapply.evaluate``) and print its report (``fastapply.report``)."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from fastapply.cli import (AdapterOpt, ApiKeyOpt, BackendOpt, BaseUrlOpt, DeviceOpt, DtypeOpt, FocusOpt, ModelOpt,
                           PredictionOpt, PresetOpt, ServerOpt, app, errors, local_model, stderr, task_progress)
from fastapply.errors import UsageError


class Engine(str, Enum):
    merge = "merge"
    auto = "auto"
    model = "model"
    replay = "replay"


@app.command("eval")
def eval_command(
    tasks: Annotated[Optional[Path], typer.Option("--tasks", help="Tasks in the eval schema (.jsonl or .jsonl.gz); "
                                                                  "default: the repository's 450-task suite.")] = None,
    engine: Annotated[Engine, typer.Option(envvar="FASTAPPLY_ENGINE", help="merge: the merge engine; auto: "
                                           "a certain merge, else the model drafting from the merge, validated (what "
                                           "`fastapply FILE` does); model: a model with each draft policy; replay: the reference answer stands "
                                           "in for the model (draft policies compared, no weights needed).")] = Engine.model,
    model: ModelOpt = None,
    tokenizer: Annotated[Optional[str], typer.Option(help="Tokenizer for --engine replay (default: the model's).")] = None,
    adapter: AdapterOpt = None,
    draft: Annotated[Optional[str], typer.Option(help="Comma-separated policies: fastapply, ngram, pld, none; with "
                                                      "--engine model also plain and prompt-lookup (model.generate). "
                                                      "Default: all of them.")] = None,
    merge_draft: Annotated[bool, typer.Option(help="Let the fastapply policy draft the merge engine's candidate.")] = True,
    time_prefill: Annotated[bool, typer.Option(help="With a local model, also time one prefill of prompt + the model's "
                                                    "answer per task: the limit of any rewrite (limit_s, vs_limit).")] = True,
    stop_refused: Annotated[bool, typer.Option(help="Stop a model's answer as soon as it is sure to be refused, as "
                                                    "`fastapply FILE` does: the same answers written, in less time; a "
                                                    "stopped answer's error categories are those of its first part.")] = False,
    focus: FocusOpt = True,
    max_lines: Annotated[Optional[int], typer.Option(min=1, help="Run only the tasks whose file has at most N lines.")] = None,
    limit: Annotated[Optional[int], typer.Option(min=1, help="Run the first N tasks only (after --max-lines).")] = None,
    workers: Annotated[int, typer.Option(min=1, help="Parallel processes (merge and replay engines), or requests "
                                                     "sent to a server at once.")] = 1,
    out: Annotated[Optional[Path], typer.Option("--out", help="Results directory (default: runs/eval-ENGINE); "
                                                             "a re-run resumes it.")] = None,
    device: DeviceOpt = "auto",
    dtype: DtypeOpt = "auto",
    preset: PresetOpt = "default",
    max_new_tokens: Annotated[Optional[int], typer.Option(
        "--max-new-tokens", min=1, help="Most tokens per answer (default: twice the file and the edit plus 256, or the "
                                        "reference answer plus 256 when that is longer).")] = None,
    judge_url: Annotated[Optional[str], typer.Option(envvar="FASTAPPLY_JUDGE_URL", help="OpenAI-compatible endpoint "
                                                     "of an LLM judge (e.g. http://host/v1); none: no judge score.")] = None,
    judge_model: Annotated[Optional[str], typer.Option(envvar="FASTAPPLY_JUDGE_MODEL", help="The judge's model name.")] = None,
    judge_key: Annotated[Optional[str], typer.Option(envvar="FASTAPPLY_JUDGE_KEY", help="The judge's API key.")] = None,
    backend: BackendOpt = "local",
    base_url: BaseUrlOpt = None,
    server: ServerOpt = None,
    api_key: ApiKeyOpt = None,
    prediction: PredictionOpt = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON instead of the table.")] = False,
) -> None:
    """Run the eval suite: accuracy and speed of an engine and draft policies, with a report and plots.

    With --server or --backend openai the model engine's answers come from that server, --workers requests
    at a time."""
    with errors():
        from fastapply.client import remote_base_url
        from fastapply.evaluate import EvalConfig, default_tasks_path, run_eval, run_meta
        from fastapply.judge import JudgeConfig
        from fastapply.report import summarize, table, write_report
        from fastapply.tasks import load_tasks

        if (judge_url is None) != (judge_model is None):
            raise UsageError("an LLM judge needs both --judge-url and --judge-model")
        remote = remote_base_url(backend, base_url, server)
        config = EvalConfig(
            engine=engine.value, policies=tuple(p.strip() for p in (draft or "").split(",") if p.strip()),
            model=local_model(model) if remote is None and engine in (Engine.model, Engine.auto) else model,
            tokenizer=tokenizer, adapter=adapter, device=device, dtype=dtype, preset=preset,
            max_new_tokens=max_new_tokens, merge_draft=merge_draft, time_prefill=time_prefill,
            stop_refused=stop_refused, focus=focus,
            judge=JudgeConfig(judge_url, judge_model, judge_key) if judge_url else None,
            server=remote, send_prediction=prediction, api_key=api_key,
        ).resolved()
        tasks = tasks or default_tasks_path()
        task_list = [t for t in load_tasks(tasks)
                     if max_lines is None or len(t.original.splitlines()) <= max_lines][:limit]
        if not task_list:
            raise UsageError(f"no tasks in {tasks}")
        out = out or Path("runs") / f"eval-{engine.value}"
        with task_progress(len(task_list)) as on_task:
            run = run_eval(task_list, config, out, workers, on_task)
        summary = summarize(run.records, run_meta(config, run, tasks, limit, out, max_lines))
        write_report(out, summary)
        if as_json:
            typer.echo(json.dumps({k: v for k, v in summary.items() if k != "per_task"}, indent=1))
        else:
            Console(width=max(Console().width, 140)).print(table(summary))
        failed = max((figures["merge_errors"] for figures in summary["policies"].values()), default=0)
        if failed:  # not a refusal: a bug of the merge engine, which the run went on without
            stderr.print(f"warning: the merge engine raised an error on {failed} task(s); "
                         f"their records in {out} hold it as merge_error")
        if stderr.is_terminal:
            stderr.print(f"{run.ran} results computed, {run.resumed} kept from an earlier run; "
                         f"report in {out}/report.md")
