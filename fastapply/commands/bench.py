"""``fastapply bench``: plain decoding, prompt lookup, n-gram and speculative edits (and a draft model's
drafting, with ``--draft-model``) on one model, as a table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from fastapply.cli import (DeviceOpt, DraftModelOpt, DtypeOpt, MaxTokensOpt, MedusaOpt, ModelOpt, PresetOpt, app, errors,
                           local_model)
from fastapply.errors import UsageError


@app.command("bench")
def bench_command(
    model: ModelOpt = None,
    file: Annotated[Optional[Path], typer.Option("--file", help="The file of a single case.")] = None,
    edit_file: Annotated[Optional[Path], typer.Option("--edit-file", help="The edit of a single case.")] = None,
    expected: Annotated[Optional[Path], typer.Option("--expected", help="The reference result of a single case.")] = None,
    tasks: Annotated[Optional[Path], typer.Option("--tasks", help="Cases from a JSONL file in the eval-task schema.")] = None,
    limit: Annotated[Optional[int], typer.Option(min=1, help="Use at most this many tasks.")] = None,
    acceptance: Annotated[str, typer.Option(help="model: the model's own choices; replay: real forward passes, "
                                                 "choices from the expected file.")] = "model",
    methods: Annotated[Optional[str], typer.Option(
        help="Comma-separated: plain, prompt-lookup, ngram, fastapply; draft-model and fastapply+draft-model with "
             "--draft-model; medusa and fastapply+medusa with --medusa (default: all of them).")] = None,
    draft_model: DraftModelOpt = None,
    medusa: MedusaOpt = None,
    device: DeviceOpt = "auto",
    dtype: DtypeOpt = "auto",
    preset: PresetOpt = "default",
    max_new_tokens: MaxTokensOpt = None,
    merge_draft: Annotated[bool, typer.Option(help="Let the fastapply methods draft the merge engine's candidate "
                                                   "first, as `fastapply FILE` does (its time counted).")] = True,
    focus: Annotated[bool, typer.Option("--focus/--whole-file", help="Show every method the window of the file "
                                        "that `fastapply FILE` shows the model (the merge that places it timed "
                                        "into each), or the whole file.")] = False,
    out: Annotated[Optional[Path], typer.Option("--out", help="Write the rows as JSON here, after every case.")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Keep the cases already in --out; run the rest.")] = False,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Draw each method's speedup over plain decoding "
                                                               "against file length into this PNG.")] = None,
) -> None:
    """Compare plain decoding, prompt lookup, n-gram and speculative edits on one model in one run (the
    methods take turns going first, task by task)."""
    with errors():
        from fastapply.apply import load_model_drafters
        from fastapply.bench import METHODS, run_bench
        from fastapply.loading import load_model

        model = local_model(model)
        if not model:
            raise UsageError("no model: pass --model PATH_OR_HUB_ID or set FASTAPPLY_MODEL")
        if resume and out is None:
            raise UsageError("--resume needs --out: the JSON of the run to go on with")
        cases = _bench_cases(file, edit_file, expected, tasks, limit)
        lm, tokenizer = load_model(model, device, dtype)
        models = load_model_drafters(lm, tokenizer, draft_model, medusa)
        if methods is None:
            methods = ",".join([*METHODS, *(m for name in models for m in (name, f"fastapply+{name}"))])
        chosen = tuple(m.strip() for m in methods.split(",") if m.strip())
        header = {**_header(model, draft_model, medusa, acceptance, lm), "merge_draft": merge_draft,
                  **({"focus": True} if focus else {})}  # whole-file runs read as before
        rows = _done_rows(out, chosen, header) if resume else []
        done = {row["case"] for row in rows}

        def save(new_rows) -> None:
            rows.extend(row.as_dict() for row in new_rows)
            if out is not None:
                _write(out, header, rows, complete=False)

        remaining = [case for case in cases if case.name not in done]
        if remaining:
            run_bench(lm, tokenizer, remaining, acceptance, preset, max_new_tokens, chosen, models, merge_draft,
                      focus, on_case=save)
        _print_bench(rows, model, acceptance)
        if out is not None:
            _write(out, header, rows, complete=True)
        if plot is not None:
            from fastapply.report import speedup_plot

            plot.parent.mkdir(parents=True, exist_ok=True)
            speedup_plot(plot, {m: [(r["lines"], r["speedup_plain"]) for r in rows if r["method"] == m
                                    and r["speedup_plain"]] for m in chosen if m != "plain"},
                         "speedup over plain decoding (seconds)", {"model": model, "device": str(lm.device)})


# What a resumed run must share with the run it goes on with: the same weights, methods' inputs and
# arithmetic (the machine may differ: it is recorded, below).
SAME_RUN = ("model", "adapter", "draft_model", "medusa", "acceptance", "device", "dtype", "parameters", "merge_draft",
            "focus")


def _header(model, draft_model, medusa, acceptance, lm) -> dict:
    import platform

    import torch

    from fastapply import bundled
    from fastapply.bench import cpu_model

    return {"model": model, "adapter": bundled.adapter_sha256()[:12] if model == bundled.NAME else None,
            "draft_model": draft_model, "medusa": medusa, "acceptance": acceptance,
            "device": str(lm.device), "dtype": str(lm.dtype),
            "machine": f"{platform.machine()}, {cpu_model()}, {torch.get_num_threads()} threads, {platform.system()}",
            "parameters": sum(p.numel() for p in lm.parameters())}


def _write(out: Path, header: dict, rows: list[dict], complete: bool) -> None:
    """The run so far as JSON, replacing ``out`` whole (a reader never sees half a file)."""
    from fastapply.bench import summarize
    from fastapply.fileio import write_atomic

    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, json.dumps({**header, "complete": complete, "summary": summarize(rows), "rows": rows},
                                 indent=1).encode())


def _done_rows(out: Path, methods: tuple[str, ...], header: dict) -> list[dict]:
    """The rows of ``out``'s cases that have every one of ``methods`` (a case cut short runs again). A run
    of other weights or settings (``SAME_RUN``), or of a method ``methods`` leaves out (its rows would be
    lost), is refused; one on another machine names both in ``header["machine"]``, since each case's
    methods still run back to back on one of them."""
    try:
        earlier = json.loads(out.read_text())
        rows = earlier["rows"]
    except FileNotFoundError:
        return []
    except (OSError, ValueError, KeyError) as exc:
        raise UsageError(f"cannot resume from {out}: {exc}") from None
    for key in SAME_RUN:
        if earlier.get(key) != header.get(key):
            raise UsageError(f"cannot resume from {out}: it ran with {key} {earlier.get(key)!r}, this run has "
                             f"{header.get(key)!r}")
    left_out = sorted({row["method"] for row in rows} - set(methods))
    if left_out:
        raise UsageError(f"cannot resume from {out}: it also ran {', '.join(left_out)}, whose rows this run "
                         f"would drop; resume with --methods naming them too")
    before = earlier.get("machine") or ""
    if before:
        header["machine"] = before if header["machine"] in before else f"{before}; resumed on {header['machine']}"
    by_case: dict[str, dict[str, dict]] = {}
    for row in rows:
        by_case.setdefault(row["case"], {})[row["method"]] = row
    return [by_method[m] for by_method in by_case.values() if set(methods) <= set(by_method) for m in methods]


def _bench_cases(file, edit_file, expected, tasks, limit):
    from fastapply import fileio
    from fastapply.bench import BenchCase

    if tasks is not None:
        from fastapply.tasks import load_tasks

        cases = [BenchCase(t.id, t.original, t.update, t.instruction, t.expected, t.language)
                 for t in load_tasks(tasks)]
        return cases[:limit] if limit else cases
    if file is None or edit_file is None:
        raise UsageError("give a case with --file and --edit-file (and --expected), or --tasks FILE.jsonl")
    from fastapply.syntax import language_for_path

    return [BenchCase(file.name, fileio.read_text(str(file))[0], fileio.read_text(str(edit_file))[0], "",
                      fileio.read_text(str(expected))[0] if expected else None, language_for_path(str(file)))]


def _print_bench(rows: list[dict], model: str, acceptance: str) -> None:
    from rich.table import Table

    table = Table(title=f"fastapply bench: {model} (acceptance: {acceptance})")
    for col in ("case", "method", "passes", "tokens/pass", "tok/s", "chars/s", "seconds", "vs plain",
                "vs prompt lookup", "vs limit", "same as plain"):
        table.add_column(col, justify="left" if col in ("case", "method") else "right")
    for r in rows:
        table.add_row(r["case"], r["method"], str(r["passes"]), f"{r['tokens_per_pass']:.2f}",
                      f"{r['tokens_per_s']:.1f}", f"{r['chars_per_s']:.0f}", f"{r['seconds']:.2f}",
                      f"{r['speedup_plain']:.2f}x", f"{r['speedup_prompt_lookup']:.2f}x",
                      f"{r['vs_limit']:.2f}x" if r["vs_limit"] else "-",
                      {True: "yes", False: "NO", None: "-"}[r["same_as_plain"]])
    Console(width=160).print(table)
    if len({r["case"] for r in rows}) > 1:
        from fastapply.bench import summarize

        spread = Table(title="over the cases: median \\[min, quartiles, max]; vs limit = seconds over one "
                             "prefill of prompt + answer")
        for col in ("method", "cases", "same as plain", "seconds", "vs plain", "vs prompt lookup", "vs limit"):
            spread.add_column(col, justify="left" if col == "method" else "right")

        def show(s):
            return "-" if s is None else f"{s['median']:.2f}x [{s['min']:.2f}, {s['q1']:.2f}, {s['q3']:.2f}, {s['max']:.2f}]"

        for method, s in summarize(rows).items():
            spread.add_row(method, str(s["cases"]), "-" if s["same_as_plain"] is None else str(s["same_as_plain"]),
                           f"{s['seconds']:.1f}",
                           show(s["speedup_plain"]), show(s["speedup_prompt_lookup"]), show(s["vs_limit"]))
        Console(width=160).print(spread)
