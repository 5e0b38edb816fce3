"""The eval runner, report and judge on five small tasks: replay, merge and a tiny model."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from typer.testing import CliRunner

from fastapply.cli import app
from fastapply.evaluate import EvalConfig, merge_engine_available, result_path, run_eval
from fastapply.judge import JudgeConfig, JudgeError, grade, parse_verdict
from fastapply.report import PLOTS, summarize, write_report
from tests.evaltasks import make_tasks, write_tasks

TASKS = make_tasks()


def _plot_data(path):
    from PIL import Image

    return json.loads(Image.open(path).text["fastapply-data"])


def test_replay_all_exact_and_fastapply_needs_fewer_passes_than_pld(tmp_path, tokenizer):
    run = run_eval(TASKS, EvalConfig("replay", ("fastapply", "pld", "ngram", "none")), tmp_path, tokenizer=tokenizer)
    assert (run.ran, run.resumed) == (20, 0)
    assert all(r["accuracy"]["exact"] and r["closed"] for r in run.records)
    passes = {(r["task"], r["policy"]): r["speed"]["passes"] for r in run.records}
    for task in TASKS:
        assert passes[task.id, "fastapply"] < passes[task.id, "ngram"] < passes[task.id, "pld"] < passes[task.id, "none"]
    record = json.loads(result_path(tmp_path, TASKS[0].id, "fastapply").read_text())
    assert record["output"] == TASKS[0].expected
    assert record["fastapply_version"] and "git_commit" in record and record["options"]["engine"] == "replay"
    assert "judge" not in record  # no judge configured: no score at all

    summary = summarize(run.records)
    figures = summary["policies"]
    assert figures["fastapply"]["exact"] == 1.0 and figures["pld"]["exact"] == 1.0
    total = {p: sum(passes[t.id, p] for t in TASKS) for p in ("fastapply", "pld")}
    assert figures["fastapply"]["passes"] == total["fastapply"] and figures["pld"]["passes"] == total["pld"]
    assert figures["none"]["tokens_per_pass"] == 1.0
    row = next(r for r in summary["per_task"] if r["task"] == TASKS[0].id and r["policy"] == "fastapply")
    assert row["speedup_prompt_lookup"] == round(passes[TASKS[0].id, "pld"] / passes[TASKS[0].id, "fastapply"], 4)


def test_replay_budget_has_room_for_a_reference_much_longer_than_the_original(tmp_path, tokenizer):
    from dataclasses import replace

    original = "def f():\n    return 1\n"
    expected = original + "".join(f"\n\ndef g{i}(x):\n    return x * {i} + f()\n" for i in range(40))
    task = replace(TASKS[0], id="grow", original=original, expected=expected, update=expected)
    run = run_eval([task], EvalConfig("replay", ("pld",)), tmp_path, tokenizer=tokenizer)
    assert run.records[0]["accuracy"]["exact"] and run.records[0]["closed"]


def test_resume_skips_finished_results(tmp_path, tokenizer):
    config = EvalConfig("replay", ("fastapply", "pld"))
    run_eval(TASKS[:3], config, tmp_path, tokenizer=tokenizer)
    paths = [result_path(tmp_path, t.id, p) for t in TASKS[:3] for p in ("fastapply", "pld")]
    mtimes = [p.stat().st_mtime_ns for p in paths]
    calls = []
    run = run_eval(TASKS, config, tmp_path, tokenizer=tokenizer, on_task=lambda done, total: calls.append(done))
    assert (run.ran, run.resumed) == (4, 6)
    assert calls == [3, 4, 5]  # three tasks found done, then the two new ones
    assert [p.stat().st_mtime_ns for p in paths] == mtimes
    assert len(run.records) == 10
    # a half-written result does not count as finished
    result_path(tmp_path, TASKS[4].id, "pld").write_text("{")
    assert run_eval(TASKS, config, tmp_path, tokenizer=tokenizer).ran == 1
    # another run's options in the same directory are refused
    from fastapply.errors import UsageError

    with pytest.raises(UsageError, match="another run"):
        run_eval(TASKS, EvalConfig("replay", ("pld",), max_new_tokens=50), tmp_path, tokenizer=tokenizer)


def test_replay_in_worker_processes_gives_the_same_results(tmp_path, tiny_checkpoint):
    config = EvalConfig("replay", ("fastapply", "pld"), tokenizer=str(tiny_checkpoint))
    parallel = run_eval(TASKS, config, tmp_path / "two", workers=2)
    single = run_eval(TASKS, config, tmp_path / "one", workers=1)
    strip = lambda r: (r["task"], r["policy"], r["output"], r["speed"]["passes"])  # noqa: E731
    assert [strip(r) for r in parallel.records] == [strip(r) for r in single.records]


def test_cli_replay_writes_report_and_plots_with_the_numbers(tmp_path, tiny_checkpoint):
    tasks = write_tasks(tmp_path / "tasks.jsonl")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["eval", "--engine", "replay", "--tasks", str(tasks), "--tokenizer",
                                      str(tiny_checkpoint), "--draft", "fastapply,pld,none", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "fastapply" in result.stdout and "tokens/pass" in result.stdout
    summary = json.loads((out / "summary.json").read_text())
    records = [json.loads(p.read_text()) for p in sorted((out / "results").glob("*/*.json"))]
    assert len(records) == 15 and summary["tasks"] == 5
    for policy, figures in summary["policies"].items():
        mine = [r for r in records if r["policy"] == policy]
        assert figures["passes"] == sum(r["speed"]["passes"] for r in mine)
        assert figures["exact"] == 1.0
    assert summary["command"] == (f"fastapply eval --tasks {tasks} --engine replay --draft fastapply,pld,none "
                                  f"--tokenizer {tiny_checkpoint} --out {out}")
    report = (out / "report.md").read_text()
    tpp = summary["policies"]["fastapply"]["tokens_per_pass"]
    assert f"| fastapply | 5 | 100.0% |" in report and f"{tpp:,.2f}" in report
    for name in PLOTS:
        assert (out / name).stat().st_size > 1000
    per_pass = _plot_data(out / "tokens_per_pass.png")["tokens_per_pass"]
    assert sorted(per_pass["fastapply"]) == sorted(r["speed"]["tokens_per_pass"] for r in records
                                                   if r["policy"] == "fastapply")
    speed = _plot_data(out / "speedup_vs_length.png")["points"]
    assert set(speed) == {"fastapply", "pld"}
    assert sorted(speed["fastapply"]) == sorted([r["lines"], r["speedup_plain"]] for r in summary["per_task"]
                                                if r["policy"] == "fastapply")
    shares = _plot_data(out / "accuracy.png")["shares"]
    assert shares["pld"]["exact"] == 1.0 and shares["pld"]["wrong edit"] == 0.0

    again = CliRunner().invoke(app, ["eval", "--engine", "replay", "--tasks", str(tasks), "--tokenizer",
                                     str(tiny_checkpoint), "--draft", "fastapply,pld,none", "--out", str(out),
                                     "--json"])
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["results_resumed"] == 15


@pytest.mark.parametrize("args, message", [
    (["--engine", "replay", "--draft", "plain"], "does not go with --engine replay"),
    (["--engine", "replay", "--draft", "fastapply,bogus"], "bogus"),
    (["--engine", "model"], "needs --model"),
    (["--engine", "replay", "--judge-url", "http://127.0.0.1:9"], "both --judge-url and --judge-model"),
])
def test_cli_usage_errors(tmp_path, tiny_checkpoint, args, message):
    tasks = write_tasks(tmp_path / "tasks.jsonl")
    result = CliRunner().invoke(app, ["eval", "--tasks", str(tasks), "--tokenizer", str(tiny_checkpoint),
                                      "--out", str(tmp_path / "out"), *args])
    assert result.exit_code == 2 and message in result.stderr


def test_model_engine_with_tiny_model(tmp_path, tiny_model):
    model, tokenizer = tiny_model
    policies = ("plain", "prompt-lookup", "fastapply")
    config = EvalConfig("model", policies, model="tiny", max_new_tokens=24, dtype="float32", device="cpu")
    tasks = [TASKS[1], TASKS[4]]  # the two shortest files
    run = run_eval(tasks, config, tmp_path, model=model, tokenizer=tokenizer)
    assert run.ran == 6
    by = {(r["task"], r["policy"]): r for r in run.records}
    for task in tasks:
        # lossless: greedy generate, generate with prompt lookup and speculative edits write the same text
        outputs = {by[task.id, p]["output"] for p in policies}
        assert len(outputs) == 1
        assert by[task.id, "plain"]["speed"]["passes"] == 23  # 24 tokens: a prefill, then one per pass
        assert not by[task.id, "fastapply"]["accuracy"]["exact"]  # a random model cannot do the edit
    summary = summarize(run.records)
    assert summary["speedup_unit"] == "seconds"
    row = next(r for r in summary["per_task"] if r["policy"] == "fastapply")
    base = by[row["task"], "plain"]["speed"]["seconds"]
    assert row["speedup_plain"] == pytest.approx(base / by[row["task"], "fastapply"]["speed"]["seconds"], rel=1e-3)
    written = write_report(tmp_path, summary)
    assert {p.name for p in written} >= {"summary.json", "report.md", *PLOTS}
    for task in tasks:  # one limit per task, shared by its policies; each policy's seconds over it
        limits = {by[task.id, p]["speed"]["limit_s"] for p in policies}
        assert len(limits) == 1 and limits.pop() > 0
        speed = by[task.id, "plain"]["speed"]
        assert speed["vs_limit"] == pytest.approx(speed["seconds"] / speed["limit_s"], rel=1e-2)
    assert summary["policies"]["plain"]["vs_limit_median"] > 0
    unmeasured = run_eval(tasks[:1], EvalConfig("model", ("fastapply",), model="tiny", max_new_tokens=24,
                                                dtype="float32", device="cpu", time_prefill=False),
                          tmp_path / "no-limit", model=model, tokenizer=tokenizer)
    assert "limit_s" not in unmeasured.records[0]["speed"]


@pytest.mark.skipif(not merge_engine_available(), reason="the merge engine (fastapply.merge) is not in this branch")
def test_merge_engine(tmp_path):
    run = run_eval(TASKS, EvalConfig("merge"), tmp_path)
    assert run.ran == 5
    summary = summarize(run.records)
    figures = summary["policies"]["merge"]
    certain = [r for r in run.records if r["merge"]["confidence"] == "certain"]
    assert figures["certain"] == round(len(certain) / 5, 4)
    assert figures["exact_among_certain"] == (round(sum(r["accuracy"]["exact"] for r in certain) / len(certain), 4)
                                              if certain else None)
    written = write_report(tmp_path, summary)
    report = (tmp_path / "report.md").read_text()
    assert (tmp_path / "accuracy.png") in written and "| merge | 5 |" in report
    header, _, row = report.split("## Accuracy and speed")[1].strip().splitlines()[:3]
    assert "exact when certain" in header and header.count("|") == row.count("|")  # one cell a column


def test_a_merge_that_raises_is_recorded_and_warned_of(tmp_path, tiny_checkpoint, monkeypatch):
    """A merge engine bug does not stop the run (that task has no merged draft), and does not pass
    unseen: its record holds the error, the summary counts it, and the run warns on stderr."""
    import fastapply.evalrun
    from fastapply.engine import merge_reading

    def failing(original, reading, language):
        if original == TASKS[0].original:
            raise IndexError("list index out of range")
        return merge_reading(original, reading, language)

    monkeypatch.setattr(fastapply.evalrun, "merge_reading", failing)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["eval", "--engine", "replay", "--tasks", str(write_tasks(tmp_path / "t.jsonl")),
                                      "--tokenizer", str(tiny_checkpoint), "--draft", "fastapply", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "the merge engine raised an error on 1 task(s)" in result.stderr
    records = {r["task"]: r for r in map(json.loads, map(Path.read_text, (out / "results").glob("*/*.json")))}
    assert records[TASKS[0].id]["merge_error"] == "IndexError: list index out of range"
    assert records[TASKS[0].id]["merged_draft"] is False
    assert not any("merge_error" in r for task, r in records.items() if task != TASKS[0].id)
    assert json.loads((out / "summary.json").read_text())["policies"]["fastapply"]["merge_errors"] == 1


@pytest.mark.skipif(not merge_engine_available(), reason="the merge engine (fastapply.merge) is not in this branch")
def test_cli_max_lines_runs_only_the_short_files(tmp_path):
    from tests.evaltasks import write_tasks

    tasks = write_tasks(tmp_path / "tasks.jsonl")
    lengths = sorted(len(t.original.splitlines()) for t in TASKS)
    cut = lengths[2]
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["eval", "--tasks", str(tasks), "--engine", "merge", "--max-lines", str(cut),
                                      "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["tasks"] == sum(n <= cut for n in lengths) < len(TASKS)
    assert all(row["lines"] <= cut for row in summary["per_task"])
    assert f"--max-lines {cut}" in summary["command"]


# -- the LLM judge, through a real HTTP server on 127.0.0.1 ------------------------------------------

class _Judge(BaseHTTPRequestHandler):
    replies: list[str] = []
    seen: list[dict] = []

    def do_POST(self):  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        content = type(self).replies[(len(type(self).seen) - 1) % len(type(self).replies)]
        data = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture()
def judge_server():
    _Judge.seen = []
    _Judge.replies = ['{"score": 0.75, "reason": "close"}']
    server = HTTPServer(("127.0.0.1", 0), _Judge)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()
    server.server_close()
    thread.join()


def test_judge_grades_over_http(judge_server):
    config = JudgeConfig(judge_server, "judge-1", key="sk-test")
    verdict = grade(config, "a = 1\n", "a = 2\n", "a = 2\n", "a = 3\n")
    assert (verdict.score, verdict.reason) == (0.75, "close")
    request = _Judge.seen[0]
    assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer sk-test"
    assert request["body"]["model"] == "judge-1"
    assert "<reference>\na = 2\n\n</reference>" in request["body"]["messages"][1]["content"]
    _Judge.replies = ["I think it is fine."]
    with pytest.raises(JudgeError, match="no score"):
        grade(config, "a", "b", "c", "d")


def test_parse_verdict_refuses_scores_out_of_range():
    assert parse_verdict('```json\n{"score": 1, "reason": "same"}\n```').score == 1.0
    for bad in ('{"score": 1.5}', '{"score": "high"}', '{"score": true}', ""):
        with pytest.raises(JudgeError):
            parse_verdict(bad)


def test_eval_with_judge_records_scores_and_reports_the_mean(tmp_path, tokenizer, judge_server):
    config = EvalConfig("replay", ("fastapply",), judge=JudgeConfig(judge_server, "judge-1", key="sk-secret"))
    run = run_eval(TASKS[:2], config, tmp_path, tokenizer=tokenizer)
    assert [r["judge"]["score"] for r in run.records] == [0.75, 0.75]
    assert "sk-secret" not in json.dumps(run.records) and "sk-secret" not in (tmp_path / "run.json").read_text()
    summary = summarize(run.records)
    assert summary["policies"]["fastapply"]["judge_mean"] == 0.75
    # a re-run with the judge grades nothing again; a judge failure is recorded, never scored
    run_eval(TASKS[:2], config, tmp_path, tokenizer=tokenizer)
    assert len(_Judge.seen) == 2
    _Judge.replies = ["no idea"]
    run = run_eval(TASKS[:3], config, tmp_path, tokenizer=tokenizer)
    assert "score" not in run.records[2]["judge"] and "no score" in run.records[2]["judge"]["error"]
    assert summarize(run.records)["policies"]["fastapply"]["judged"] == 2


def test_auto_engine_takes_certain_merges_and_validates_the_model(tmp_path, tiny_model):
    """A certain merge is written as it is; otherwise the model's answer is validated, and a random
    model's answer is refused, never counted as written."""
    from dataclasses import replace

    from fastapply.merge import merge

    model, tokenizer = tiny_model
    tasks = [*TASKS, replace(TASKS[1], id="prose", update="Make it print to stderr.")]  # no certain merge
    config = EvalConfig("auto", model="tiny", max_new_tokens=24, dtype="float32", device="cpu")
    run = run_eval(tasks, config, tmp_path, model=model, tokenizer=tokenizer)
    for task, record in zip(tasks, run.records):
        certain = merge(task.original, task.update, task.language).confidence == "certain"
        assert record["decided_by"] == ("merge" if certain else "model")
        if certain:
            assert record["refused"] is False and record["output"] == merge(task.original, task.update,
                                                                             task.language).text
        else:
            assert record["refused"] is True and record["validation"]  # 24 random tokens: cut off at least
    figures = summarize(run.records)["policies"]["fastapply"]
    certain_share = sum(r["decided_by"] == "merge" for r in run.records) / len(tasks)
    assert 0 < certain_share < 1  # both paths ran
    assert figures["refused"] == pytest.approx(1 - certain_share, abs=1e-3)  # shares are rounded to 4 places
    assert figures["written_exact"] + figures["written_not_exact"] == pytest.approx(certain_share, abs=1e-3)


def test_stop_refused_stops_answers_sure_to_be_refused_and_writes_the_same(tmp_path, sample_model):
    """With --stop-refused an answer is stopped as soon as the watch finds a problem it is sure to keep
    (as `fastapply FILE` does): what is written and what is refused stay the same, a stopped answer is
    the first part of the whole one, and the record and the report say it was stopped."""
    from fastapply.snippet import make_snippet
    from fastapply.tasks import Task
    from tests.samples import SMALL_PY

    model, tokenizer, _ = sample_model
    renamed = SMALL_PY.replace("def read_config", "def load_config")  # the sample model writes its own file back
    tasks = [Task(f"small-{i}", "python", "small.py", original, make_snippet(original, original + "# note\n",
                                                                             "python", context=2),
                  "", original + "# note\n", {"package": "tests"}) for i, original in enumerate([SMALL_PY, renamed])]
    runs = {}
    for stop in (False, True):
        config = EvalConfig("model", ("fastapply",), model="sample", dtype="float32", device="cpu",
                            time_prefill=False, stop_refused=stop)
        runs[stop] = {r["task"]: r for r in run_eval(tasks, config, tmp_path / str(stop), model=model,
                                                      tokenizer=tokenizer).records}
    whole, watched = runs[False], runs[True]
    stopped = [t for t, r in watched.items() if r.get("stopped")]
    assert stopped and all(whole[t]["refused"] and watched[t]["refused"] for t in stopped)
    assert not any("stopped" in r for r in whole.values())
    for task, record in watched.items():
        assert record["refused"] == whole[task]["refused"]
        assert record["accuracy"]["exact"] == whole[task]["accuracy"]["exact"]
        if task in stopped:
            assert whole[task]["output"].startswith(record["output"].rsplit("\n", 1)[0])
            assert record["speed"]["tokens"] < whole[task]["speed"]["tokens"]
        else:
            assert record["output"] == whole[task]["output"]
    summary = summarize(list(watched.values()))
    assert summary["policies"]["fastapply"]["stopped"] == len(stopped)
    write_report(tmp_path / "report", summary)
    assert f"({len(stopped)} stopped as they were written)" in (tmp_path / "report" / "report.md").read_text()
    assert "stop_refused" in watched[stopped[0]]["options"] and "stop_refused" not in whole[stopped[0]]["options"]


@pytest.mark.parametrize("engine, policies, server, message", [
    ("merge", (), None, "--engine model or auto"),
    ("model", ("plain", "fastapply"), None, "leave them out"),
    ("model", (), "http://127.0.0.1:9/v1", "a server's arrive whole"),
])
def test_stop_refused_usage_errors(engine, policies, server, message):
    from fastapply.errors import UsageError

    with pytest.raises(UsageError, match=message):
        EvalConfig(engine, policies, model="m", server=server, stop_refused=True).resolved()


@pytest.mark.skipif(not merge_engine_available(), reason="the merge engine (fastapply.merge) is not in this branch")
def test_an_edit_that_reads_as_an_instruction_is_one_to_the_merge_engine_too(tmp_path):
    """As `fastapply FILE` reads it (``engine.read_edit``): the words are the instruction, not a snippet."""
    from fastapply.tasks import Task

    original = "def a():\n    return 1\n\n\ndef b():\n    return 2\n"
    task = Task("words", "python", "f.py", original, "delete the function b", "", "def a():\n    return 1\n",
                {"package": "example"})
    record = run_eval([task], EvalConfig("merge"), tmp_path).records[0]
    assert record["merge"]["confidence"] == "certain" and record["accuracy"]["exact"]


@pytest.mark.skipif(not merge_engine_available(), reason="the merge engine (fastapply.merge) is not in this branch")
def test_a_chat_answer_is_read_for_the_tasks_file_and_one_for_others_is_that_tasks_error(tmp_path):
    from fastapply.tasks import Task

    original = "def a():\n    return 1\n"
    answer = "Here:\n\n```python:pkg/f.py\ndef a():\n    return 2\n```\n"
    mine = Task("mine", "python", "pkg/f.py", original, answer, "", "def a():\n    return 2\n", {"package": "example"})
    other = Task("other", "python", "pkg/g.py", original, answer, "", original, {"package": "example"})
    records = {r["task"]: r for r in run_eval([mine, other], EvalConfig("merge"), tmp_path).records}
    assert records["mine"]["accuracy"]["exact"] and records["mine"]["merge"]["confidence"] == "certain"
    assert records["other"]["error"] == "the answer's code blocks are for pkg/f.py, not pkg/g.py"
