"""The eval report: per-policy summary of result records, as ``summary.json``, ``report.md``, PNG plots
(matplotlib, Agg) and a rich table for the terminal.

Speedups compare the policies run on the same task: in seconds with a real model, in forward passes
with the replay target (whose passes cost nothing real). Each plot carries the numbers it draws in its
PNG metadata (key ``fastapply-data``). This module reads records; it does not run engines or print.
"""

from __future__ import annotations

import datetime
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from fastapply.metrics import ERROR_CATEGORIES, geomean, median, speedups

PLOTS = ("speedup_vs_length.png", "tokens_per_pass.png", "accuracy.png")
SPEED_UNIT = {"model": "seconds", "replay": "passes"}  # the merge engine has no baseline to compare with


def summarize(records: Sequence[dict], meta: dict | None = None) -> dict:
    """The per-policy figures and the per-task rows of one run's ``records``."""
    engine = records[0]["engine"] if records else (meta or {}).get("engine")
    unit = SPEED_UNIT.get(engine)
    by_task: dict[str, dict[str, dict]] = defaultdict(dict)
    for record in records:
        by_task[record["task"]][record["policy"]] = record
    rows = []
    for task_id, by_policy in by_task.items():
        ratios = speedups({p: r["speed"] for p, r in by_policy.items() if r.get("speed")}, unit) if unit else {}
        for policy, r in by_policy.items():
            acc, speed = r["accuracy"], r.get("speed") or {}
            row = {"task": task_id, "policy": policy, "language": r["language"], "lines": r["lines"],
                   "exact": acc["exact"], "exact_ws": acc["exact_ws"], "tree_equal": acc["tree_equal"],
                   "errors": acc["errors"], "passes": speed.get("passes"), "tokens": speed.get("tokens"),
                   "tokens_per_pass": speed.get("tokens_per_pass"), "tokens_per_s": speed.get("tokens_per_s"),
                   "chars_per_s": speed.get("chars_per_s"), "seconds": speed.get("seconds"),
                   "speedup_plain": ratios.get(policy, {}).get("plain"),
                   "speedup_prompt_lookup": ratios.get(policy, {}).get("prompt_lookup"),
                   "limit_s": speed.get("limit_s"), "vs_limit": speed.get("vs_limit"),
                   "refused": r.get("refused"), "validation": r.get("validation"), "stopped": r.get("stopped"),
                   "window": r.get("window"), "merge_error": r.get("merge_error")}
            if r.get("merge"):  # None where the merge engine failed on the task
                row["confidence"] = r["merge"]["confidence"]
            if "score" in (r.get("judge") or {}):
                row["judge"] = r["judge"]["score"]
            rows.append(row)
    policies = list(dict.fromkeys(r["policy"] for r in records))
    return {
        **(meta or {}),
        "engine": engine,
        "speedup_unit": unit,
        "tasks": len(by_task),
        "generated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "policies": {p: _policy_figures([row for row in rows if row["policy"] == p]) for p in policies},
        "per_task": rows,
    }


def _share(flags: Sequence[bool]) -> float | None:
    return round(sum(bool(f) for f in flags) / len(flags), 4) if flags else None


def _round(value: float | None, digits: int = 3) -> float | None:
    return round(value, digits) if value is not None else None


def _policy_figures(rows: list[dict]) -> dict:
    errors = {category: sum(category in row["errors"] for row in rows) for category in ERROR_CATEGORIES}
    figures = {
        "results": len(rows),
        "exact": _share([r["exact"] for r in rows]),
        "exact_ws": _share([r["exact_ws"] for r in rows]),
        "tree_equal": _share([r["tree_equal"] for r in rows if r["tree_equal"] is not None]),
        "correct": _share([not r["errors"] for r in rows]),
        "errors": errors,
        "merge_errors": sum(bool(r["merge_error"]) for r in rows),
    }
    judged_safe = [r for r in rows if r["refused"] is not None]
    if judged_safe:  # what fastapply would have written: refusals by validation (or an uncertain merge)
        written = [r for r in judged_safe if not r["refused"]]
        reasons = [name for r in judged_safe for name in (r["validation"] or [])]
        figures |= {
            "refused": _share([r["refused"] for r in judged_safe]),
            "written_exact": _share([not r["refused"] and r["exact"] for r in judged_safe]),
            "written_wrong": _share([not r["refused"] and bool(r["errors"]) for r in judged_safe]),
            "written_not_exact": _share([not r["refused"] and not r["exact"] for r in judged_safe]),
            "refusal_reasons": {name: reasons.count(name) for name in dict.fromkeys(reasons)},
            "written": len(written),
        }
        if any(r["stopped"] for r in judged_safe):  # --stop-refused: answers stopped as they were written
            figures["stopped"] = sum(bool(r["stopped"]) for r in judged_safe)
    focused = [r for r in rows if r["window"]]
    if focused:  # the model was shown a window of the file (focus.py)
        figures |= {"focused": len(focused),
                    "focused_written_exact": sum(not r["refused"] and r["exact"] for r in focused)}
    timed = [r for r in rows if r["passes"]]
    if timed:
        passes = sum(r["passes"] for r in timed)
        figures |= {
            "passes": passes,
            "tokens": sum(r["tokens"] for r in timed),
            # DecodeStats' definition: tokens after the prefill's first one, per verify pass
            "tokens_per_pass": _round(sum(r["tokens"] - 1 for r in timed) / passes),
            "tokens_per_pass_median": _round(median(r["tokens_per_pass"] for r in timed)),
            "tokens_per_s_median": _round(median(r["tokens_per_s"] for r in timed), 1),
            "chars_per_s_median": _round(median(r["chars_per_s"] for r in timed), 1),
        }
    else:
        figures["chars_per_s_median"] = _round(median(r["chars_per_s"] for r in rows if r["chars_per_s"]), 1)
    for name in ("speedup_plain", "speedup_prompt_lookup"):
        values = [r[name] for r in rows if r[name]]
        if values:
            figures[f"{name}_geomean"] = _round(geomean(values))
            figures[f"{name}_median"] = _round(median(values))
    over_limit = [r["vs_limit"] for r in rows if r["vs_limit"]]
    if over_limit:  # wall time over one prefill of prompt + reference answer (1.0 would be the limit)
        figures["vs_limit_median"] = _round(median(over_limit))
    confidences = [r["confidence"] for r in rows if "confidence" in r]
    if confidences:
        certain = [r for r in rows if r.get("confidence") == "certain"]
        figures |= {
            "certain": _share([c == "certain" for c in confidences]),
            "likely": _share([c == "likely" for c in confidences]),
            "exact_among_certain": _share([r["exact"] for r in certain]),
            "correct_among_certain": _share([not r["errors"] for r in certain]),
        }
    judged = [r["judge"] for r in rows if "judge" in r]
    if judged:
        figures |= {"judged": len(judged), "judge_mean": _round(sum(judged) / len(judged))}
    return figures


# -- files ----------------------------------------------------------------------------------------

def write_report(out_dir: str | Path, summary: dict) -> list[Path]:
    """``summary.json``, ``report.md`` and the plots in ``out_dir``; returns the paths written."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [out_dir / "summary.json"]
    written[0].write_text(json.dumps(summary, indent=1))
    plots = write_plots(out_dir, summary)
    (out_dir / "report.md").write_text(markdown(summary, [p.name for p in plots]))
    return [*written, out_dir / "report.md", *plots]


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None, suffix: str = "") -> str:
    return "-" if value is None else f"{value:,.2f}{suffix}"


def columns(summary: dict) -> list[tuple[str, str]]:
    """(header, figure key) of the per-policy table, leaving out figures no policy has."""
    unit = summary.get("speedup_unit")
    candidates = [
        ("results", "results"), ("exact", "exact"), ("ws-exact", "exact_ws"), ("tree-equal", "tree_equal"),
        ("certain", "certain"), ("exact when certain", "exact_among_certain"), ("judge", "judge_mean"),
        ("written exact", "written_exact"), ("written wrong", "written_wrong"), ("refused", "refused"),
        ("tokens/pass", "tokens_per_pass"), ("tok/s", "tokens_per_s_median"), ("chars/s", "chars_per_s_median"),
        (f"x plain ({unit})", "speedup_plain_geomean"),
        (f"x prompt lookup ({unit})", "speedup_prompt_lookup_geomean"),
        ("x limit (median)", "vs_limit_median"),
    ]
    if unit == "passes":  # the replay target's wall time is the drafting loop's alone: not a speed
        candidates = [(h, k) for h, k in candidates if k not in ("tokens_per_s_median", "chars_per_s_median")]
    figures = summary["policies"].values()
    return [(h, k) for h, k in candidates if any(f.get(k) is not None for f in figures)]


def cell(key: str, value) -> str:
    if key in ("exact", "exact_ws", "tree_equal", "certain", "exact_among_certain", "written_exact", "written_wrong",
               "refused"):
        return _pct(value)
    if key == "results":
        return str(value)
    if key.startswith("speedup") or key == "vs_limit_median":
        return _num(value, "x")
    return _num(value)


def markdown(summary: dict, plots: Sequence[str] = ()) -> str:
    cols = columns(summary)
    lines = [
        f"# fastapply eval: {summary.get('engine')} engine, {summary['tasks']} tasks", "",
        f"- fastapply {summary.get('fastapply_version', '?')}, commit {summary.get('git_commit') or 'unknown'}",
        f"- model: {summary.get('model') or '-'}; options: `{json.dumps(summary.get('options', {}))}`",
    ]
    if summary.get("command"):
        lines.append(f"- command: `{summary['command']}`")
    if summary.get("speedup_unit") == "passes":
        lines.append("- replay target: the reference answer stands in for the model; speedups are in forward passes")
    lines += ["", "## Accuracy and speed", "", "| policy | " + " | ".join(h for h, _ in cols) + " |",
              "|---" * (len(cols) + 1) + "|"]
    for policy, figures in summary["policies"].items():
        lines.append(f"| {policy} | " + " | ".join(cell(k, figures.get(k)) for _, k in cols) + " |")
    lines += ["", "## Error categories (results in each; a result may be in several)", "",
              "| policy | " + " | ".join(ERROR_CATEGORIES) + " |", "|---" * (len(ERROR_CATEGORIES) + 1) + "|"]
    for policy, figures in summary["policies"].items():
        lines.append(f"| {policy} | " + " | ".join(str(figures["errors"][c]) for c in ERROR_CATEGORIES) + " |")
    refusals = {p: f["refusal_reasons"] for p, f in summary["policies"].items() if f.get("refusal_reasons")}
    if refusals:
        lines += ["", "## Refused by validation (results with each problem; a result may have several)", ""]
        stopped = {p: f" ({n} stopped as they were written)" if (n := f.get("stopped")) else ""
                   for p, f in summary["policies"].items()}
        lines += [f"- {policy}: " + ", ".join(f"{name} {n}" for name, n in reasons.items()) + stopped[policy]
                  for policy, reasons in refusals.items()]
    focused = {p: f for p, f in summary["policies"].items() if f.get("focused")}
    if focused:
        lines += ["", "## Focus", ""] + [
            f"- {policy}: {f['focused']} answers to a window of the file (the lines around where the merge "
            f"placed the edit), {f['focused_written_exact']} of them written exact" for policy, f in focused.items()]
    if plots:
        lines += ["", "## Plots", ""] + [f"![{name}]({name})" for name in plots]
    return "\n".join(lines) + "\n"


def table(summary: dict):
    """The per-policy figures as a rich ``Table`` (the caller prints it)."""
    from rich.table import Table

    t = Table(title=f"fastapply eval: {summary.get('engine')} engine, {summary['tasks']} tasks")
    t.add_column("policy")
    cols = columns(summary)
    for header, _ in cols:
        t.add_column(header, justify="right")
    t.add_column("errors")
    for policy, figures in summary["policies"].items():
        errs = ", ".join(f"{c} {n}" for c, n in figures["errors"].items() if n) or "-"
        t.add_row(policy, *(cell(k, figures.get(k)) for _, k in cols), errs)
    return t


# -- plots ----------------------------------------------------------------------------------------

def _save(fig, path: Path, data: dict) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"fastapply-data": json.dumps(data)})
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


def speedup_plot(path: Path, points: dict[str, list[tuple[int, float]]], ylabel: str, data: dict | None = None) -> Path:
    """Each method's speedups against file length in lines (log scale), one series a method; the points
    (and ``data``) go into the PNG's metadata."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = {name: series for name, series in points.items() if series}
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, series in points.items():
        ax.scatter([x for x, _ in series], [y for _, y in series], s=12, alpha=0.6, label=name)
    ax.set(xlabel="file length (lines)", ylabel=ylabel, yscale="log", title="Speedup against file length")
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.legend()
    return _save(fig, path, {**(data or {}), "points": points})


def write_plots(out_dir: Path, summary: dict) -> list[Path]:
    """The plots that apply to this run (no speed plots for the merge engine)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows, policies = summary["per_task"], list(summary["policies"])
    unit = summary.get("speedup_unit")
    written = []
    speed = {p: [(r["lines"], r["speedup_plain"]) for r in rows if r["policy"] == p and r["speedup_plain"]]
             for p in policies if p not in ("plain", "none")}
    if any(speed.values()):
        written.append(speedup_plot(out_dir / PLOTS[0], speed, f"speedup over plain decoding ({unit})", {"unit": unit}))
    per_pass = {p: [r["tokens_per_pass"] for r in rows if r["policy"] == p and r["tokens_per_pass"]]
                for p in policies}
    per_pass = {p: v for p, v in per_pass.items() if v}
    if per_pass:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        ax.boxplot(list(per_pass.values()), tick_labels=list(per_pass))
        ax.set(ylabel="tokens per forward pass (per task)", yscale="log", title="Tokens per pass")
        written.append(_save(fig, out_dir / PLOTS[1], {"tokens_per_pass": per_pass}))
    bars = {"exact": "exact", "ws-exact": "exact_ws", "tree-equal": "tree_equal"}
    shares = {p: {label: summary["policies"][p][key] or 0.0 for label, key in bars.items()} |
              {c: n / summary["policies"][p]["results"] for c, n in summary["policies"][p]["errors"].items()}
              for p in policies}
    labels = [*bars, *ERROR_CATEGORIES]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    width = 0.8 / max(len(policies), 1)
    for i, policy in enumerate(policies):
        ax.bar([x + i * width for x in range(len(labels))], [shares[policy][lab] for lab in labels], width,
               label=policy)
    ax.set_xticks([x + width * (len(policies) - 1) / 2 for x in range(len(labels))], labels, rotation=30,
                  ha="right")
    ax.set(ylabel="share of tasks", ylim=(0, 1.05), title="Accuracy and error categories")
    ax.legend()
    written.append(_save(fig, out_dir / PLOTS[2], {"shares": shares}))
    return written
