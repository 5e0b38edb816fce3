"""``fastapply bench``: every method on the same model in one run, a table and JSON."""

import json

import pytest
from typer.testing import CliRunner

from fastapply.bench import cpu_model
from fastapply.cli import app
from tests.samples import SMALL_PY

EDITED = SMALL_PY.replace("    config = {}\n", "    config = {}  # parsed values\n")
UPDATE = '''\
# ... existing code ...
    config = {}  # parsed values
# ... existing code ...
'''


@pytest.mark.parametrize("acceptance", ["model", "replay"])
def test_bench_runs_every_method_and_all_agree_with_plain(sample_model, tmp_path, acceptance):
    _, _, checkpoint = sample_model
    (tmp_path / "a.py").write_text(SMALL_PY)
    (tmp_path / "a.edit").write_text(UPDATE)
    (tmp_path / "a.expected").write_text(EDITED)
    out = tmp_path / "bench.json"
    result = CliRunner().invoke(app, [
        "bench", "--model", str(checkpoint), "--device", "cpu", "--file", str(tmp_path / "a.py"),
        "--edit-file", str(tmp_path / "a.edit"), "--expected", str(tmp_path / "a.expected"),
        "--acceptance", acceptance, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "fastapply bench" in result.stdout
    data = json.loads(out.read_text())
    rows = {row["method"]: row for row in data["rows"]}
    assert set(rows) == {"plain", "prompt-lookup", "ngram", "fastapply"}
    assert all(row["same_as_plain"] for row in rows.values())  # lossless, whatever the method
    assert rows["plain"]["speedup_plain"] == 1.0
    assert rows["plain"]["passes"] == rows["plain"]["tokens"] - 1  # one token a pass (after the prefill)
    assert rows["fastapply"]["passes"] < rows["prompt-lookup"]["passes"]  # the original file is the draft
    assert data["parameters"] > 0
    assert cpu_model() in data["machine"]  # a speed figure names the CPU it was measured on
    limits = {row["limit_s"] for row in rows.values()}
    assert len(limits) == 1 and limits.pop() > 0  # one limit per case, whatever the method
    assert rows["plain"]["vs_limit"] > 1  # token-by-token decoding cannot beat one pass over it all
    assert data["summary"]["fastapply"]["vs_limit"]["median"] == rows["fastapply"]["vs_limit"]


def test_methods_take_turns_going_first(sample_model):
    from fastapply.bench import BenchCase, run_bench

    model, tokenizer, _ = sample_model
    cases = [BenchCase(f"case-{i}", SMALL_PY, UPDATE, language="python") for i in range(4)]
    methods = ("plain", "ngram", "fastapply")
    rows = run_bench(model, tokenizer, cases, methods=methods, max_new_tokens=24)
    assert [(row.case, row.method) for row in rows] == [(c.name, m) for c in cases for m in methods]
    assert [row.position for row in rows] == [0, 1, 2, 2, 0, 1, 1, 2, 0, 0, 1, 2]
    assert all(row.same_as_plain for row in rows) and rows[0].as_dict()["position"] == 0


def test_the_limit_is_the_answer_written_with_or_without_plain_or_an_expected_file(sample_model, tmp_path):
    _, _, checkpoint = sample_model
    (tmp_path / "a.py").write_text(SMALL_PY)
    (tmp_path / "a.edit").write_text(UPDATE)
    out = tmp_path / "bench.json"
    result = CliRunner().invoke(app, ["bench", "--model", str(checkpoint), "--device", "cpu", "--file",
                                      str(tmp_path / "a.py"), "--edit-file", str(tmp_path / "a.edit"),
                                      "--methods", "plain,fastapply", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert all(row["limit_s"] > 0 for row in json.loads(out.read_text())["rows"])
    result = CliRunner().invoke(app, ["bench", "--model", str(checkpoint), "--device", "cpu", "--file",
                                      str(tmp_path / "a.py"), "--edit-file", str(tmp_path / "a.edit"),
                                      "--methods", "fastapply", "--out", str(out)])
    assert result.exit_code == 0, result.output
    row = json.loads(out.read_text())["rows"][0]
    assert row["vs_limit"] > 0 and row["same_as_plain"] is None  # nothing to compare with


def test_replay_needs_the_expected_file(sample_model, tmp_path):
    _, _, checkpoint = sample_model
    (tmp_path / "a.py").write_text(SMALL_PY)
    (tmp_path / "a.edit").write_text(UPDATE)
    result = CliRunner().invoke(app, ["bench", "--model", str(checkpoint), "--file", str(tmp_path / "a.py"),
                                      "--edit-file", str(tmp_path / "a.edit"), "--acceptance", "replay"])
    assert result.exit_code == 2 and "expected" in result.stderr


def _task(task_id: str, original: str, update: str, expected: str) -> dict:
    return {"id": task_id, "language": "python", "path": "a.py", "original": original, "update": update,
            "instruction": "", "expected": expected,
            "source": {"package": "fastapply-tests", "from": "1", "to": "2", "license": "MIT"}}


def test_bench_writes_as_it_goes_resumes_and_plots(sample_model, tmp_path):
    _, _, checkpoint = sample_model
    second = SMALL_PY.replace("    return config\n", "    return dict(config)\n")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(_task("first", SMALL_PY, UPDATE, EDITED)) + "\n" +
                     json.dumps(_task("second", SMALL_PY, "# ... existing code ...\n    return dict(config)\n", second)) + "\n")
    out, plot = tmp_path / "bench.json", tmp_path / "speedup.png"
    command = ["bench", "--model", str(checkpoint), "--device", "cpu", "--tasks", str(tasks),
               "--methods", "plain,fastapply", "--out", str(out)]
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["complete"] and [(r["case"], r["method"]) for r in data["rows"]] == [
        ("first", "plain"), ("first", "fastapply"), ("second", "plain"), ("second", "fastapply")]
    # a run cut short during the second case: its one row is dropped and the case runs again
    first_rows = data["rows"][:2]
    out.write_text(json.dumps({**data, "complete": False, "rows": data["rows"][:3]}))
    result = CliRunner().invoke(app, [*command, "--resume", "--plot", str(plot)])
    assert result.exit_code == 0, result.output
    resumed = json.loads(out.read_text())
    assert resumed["complete"] and resumed["rows"][:2] == first_rows  # kept as they were, not re-timed
    assert [r["case"] for r in resumed["rows"][2:]] == ["second", "second"]
    assert resumed["summary"]["fastapply"]["cases"] == 2 and all(r["lines"] > 0 for r in resumed["rows"])
    from PIL import Image

    points = json.loads(Image.open(plot).info["fastapply-data"])["points"]
    assert set(points) == {"fastapply"} and len(points["fastapply"]) == 2


def test_resume_needs_out(sample_model, tmp_path):
    _, _, checkpoint = sample_model
    (tmp_path / "a.py").write_text(SMALL_PY)
    (tmp_path / "a.edit").write_text(UPDATE)
    result = CliRunner().invoke(app, ["bench", "--model", str(checkpoint), "--file", str(tmp_path / "a.py"),
                                      "--edit-file", str(tmp_path / "a.edit"), "--resume"])
    assert result.exit_code == 2 and "--out" in result.stderr


def test_resume_refuses_a_run_of_other_settings_and_names_both_machines(sample_model, tmp_path):
    """A bench cut short on one machine goes on on another (a lent GPU comes back as a fresh machine),
    but never with other weights or arithmetic (its rows would not compare with the earlier ones) nor with
    fewer methods (the others' rows would be lost)."""
    _, _, checkpoint = sample_model
    (tmp_path / "a.py").write_text(SMALL_PY)
    (tmp_path / "a.edit").write_text(UPDATE)
    out = tmp_path / "bench.json"
    command = ["bench", "--model", str(checkpoint), "--file", str(tmp_path / "a.py"), "--edit-file",
               str(tmp_path / "a.edit"), "--device", "cpu", "--methods", "plain,fastapply", "--out", str(out)]
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["adapter"] is None  # a checkpoint directory; fastapply-small's runs name its adapter's hash

    out.write_text(json.dumps({**data, "dtype": "torch.bfloat16", "rows": []}))
    result = CliRunner().invoke(app, [*command, "--resume"])
    assert result.exit_code != 0 and "dtype 'torch.bfloat16'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "focus" not in data  # whole files: the default, and every run before --focus
    out.write_text(json.dumps(data))
    result = CliRunner().invoke(app, [*command, "--focus", "--resume"])
    assert result.exit_code != 0 and "it ran with focus None, this run has True" in result.stderr

    out.write_text(json.dumps(data))
    result = CliRunner().invoke(app, [*command[:-4], "--methods", "fastapply", "--out", str(out), "--resume"])
    assert result.exit_code != 0 and "it also ran plain, whose rows this run would drop" in result.stderr
    assert json.loads(out.read_text()) == data  # refused before anything was written

    out.write_text(json.dumps({**data, "machine": "x86_64, Another CPU, 16 threads, Linux", "rows": []}))
    result = CliRunner().invoke(app, [*command, "--resume"])
    assert result.exit_code == 0, result.output
    resumed = json.loads(out.read_text())
    assert resumed["machine"] == f"x86_64, Another CPU, 16 threads, Linux; resumed on {data['machine']}"
    assert [r["method"] for r in resumed["rows"]] == ["plain", "fastapply"]


def test_the_cpu_is_named_where_python_names_none(monkeypatch, tmp_path):
    import platform

    monkeypatch.setattr(platform, "processor", lambda: "")
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Example CPU 9000\n\n")
    assert cpu_model(str(info)) == "Example CPU 9000"
    assert cpu_model(str(tmp_path / "absent")) == platform.machine()


def test_fastapply_drafts_the_merge_candidate_first_unless_told_not_to(sample_model, tmp_path):
    """As ``fastapply FILE`` does, the bench's fastapply drafts the merge engine's candidate (here right:
    the answer is drafted whole, with its edit); ``--no-merge-draft`` drafts the original and the snippet."""
    _, _, checkpoint = sample_model
    update = '    """Read a key=value config file."""\n    config = {}  # parsed values\n    with open(path) as handle:\n'
    (tmp_path / "a.py").write_text(SMALL_PY)
    (tmp_path / "a.edit").write_text(f"# ... existing code ...\n{update}# ... existing code ...\n")
    (tmp_path / "a.expected").write_text(EDITED)
    passes = {}
    for flag in ("--merge-draft", "--no-merge-draft"):
        out = tmp_path / f"{flag}.json"
        result = CliRunner().invoke(app, [
            "bench", "--model", str(checkpoint), "--device", "cpu", "--file", str(tmp_path / "a.py"),
            "--edit-file", str(tmp_path / "a.edit"), "--expected", str(tmp_path / "a.expected"),
            "--acceptance", "replay", "--methods", "plain,fastapply", flag, "--out", str(out)])
        assert result.exit_code == 0, result.output
        data = json.loads(out.read_text())
        assert data["merge_draft"] == (flag == "--merge-draft")
        rows = {row["method"]: row for row in data["rows"]}
        assert rows["fastapply"]["same_as_plain"]
        passes[flag] = rows["fastapply"]["passes"]
    assert passes["--merge-draft"] < passes["--no-merge-draft"]
