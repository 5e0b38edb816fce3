"""fastapply in git hooks: a quiet filter with exit codes, a fast start, and the example pre-commit hook
run by real ``git commit`` in a repository made for the test."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.serving import (  # noqa: F401  (fixtures, used by name)
    EXPECTED, ORIGINAL, UPDATE, _fixed_verify_cost, _private_cache, _session_cache, apply_checkpoint)

ROOT = Path(__file__).resolve().parents[1]
HOOK = ROOT / "examples" / "hooks" / "pre-commit"
HEAVY = ("torch", "transformers", "fastapi", "uvicorn", "httpx", "tree_sitter")  # pydantic: typer loads it for help


def environment(model: Path, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "FASTAPPLY_"))}
    return {**env, "PYTHONPATH": str(ROOT), "FASTAPPLY": f"{sys.executable} -m fastapply",
            "FASTAPPLY_MODEL": str(model), "FASTAPPLY_DEVICE": "cpu", "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1",
            "FASTAPPLY_CACHE_DIR": os.environ["FASTAPPLY_CACHE_DIR"], "HF_HUB_OFFLINE": "1",
            "OMP_NUM_THREADS": "1"}  # a tiny model gains nothing from more threads on a shared machine


@pytest.mark.parametrize("args", [["--help"], ["apply", "--help"], ["serve", "--help"], ["batch", "--help"]])
def test_help_starts_without_heavy_imports(args):
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "fastapply", *args], capture_output=True,
                          text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0 and "Usage" in done.stdout
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert not {name for name in imported if name.split(".")[0] in HEAVY}


def test_filter_reads_stdin_and_writes_only_the_result(apply_checkpoint, tmp_path):
    edit = tmp_path / "edit.txt"
    edit.write_text(UPDATE)
    env = environment(apply_checkpoint, tmp_path)
    command = [sys.executable, "-m", "fastapply", "-", "--edit-file", str(edit)]
    done = subprocess.run(command, input=ORIGINAL.replace("\n", "\r\n").encode(), capture_output=True, env=env)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == EXPECTED.replace("\n", "\r\n").encode()  # the file's own line endings come back
    assert b"\x1b[" not in done.stderr  # no colour off a terminal


def test_filter_refusal_has_exit_status_3_and_no_output(apply_checkpoint, tmp_path):
    edit = tmp_path / "edit.txt"
    edit.write_text(UPDATE)
    done = subprocess.run([sys.executable, "-m", "fastapply", "-", "--edit-file", str(edit), "--max-new-tokens", "8"],
                          input=ORIGINAL.encode(), capture_output=True, env=environment(apply_checkpoint, tmp_path))
    assert done.returncode == 3  # the answer is cut off: refused as truncated
    assert done.stdout == b""
    assert b"refused" in done.stderr and b"\x1b[" not in done.stderr


def git(repo: Path, env: dict, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    identity = ["-c", "user.name=fastapply test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false"]
    return subprocess.run(["git", *identity, *args], cwd=repo, env=env, capture_output=True, text=True, check=check)


def make_repo(tmp_path: Path, model: Path) -> tuple[Path, dict]:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    env = environment(model, tmp_path)
    git(repo, env, "init", "-q", "-b", "main")
    (repo / "greet.py").write_text(ORIGINAL)
    git(repo, env, "add", "greet.py")
    git(repo, env, "commit", "-q", "-m", "greet")
    shutil.copy(HOOK, repo / ".git" / "hooks" / "pre-commit")
    return repo, env


def test_pre_commit_hook_commits_the_edited_file(apply_checkpoint, tmp_path):
    repo, env = make_repo(tmp_path, apply_checkpoint)
    (repo / "greet.py.fastapply").write_text(UPDATE)
    git(repo, env, "add", "greet.py.fastapply")
    commit = git(repo, env, "commit", "-q", "-m", "friendlier greeting", check=False)
    assert commit.returncode == 0, commit.stderr
    assert "applied greet.py.fastapply to greet.py" in commit.stderr
    assert git(repo, env, "show", "HEAD:greet.py").stdout == EXPECTED
    assert git(repo, env, "ls-tree", "--name-only", "HEAD").stdout.split() == ["greet.py"]
    assert (repo / "greet.py").read_text() == EXPECTED
    assert not (repo / "greet.py.fastapply").exists()
    assert git(repo, env, "status", "--porcelain").stdout == ""


def test_pre_commit_hook_stops_the_commit_when_fastapply_refuses(apply_checkpoint, tmp_path):
    repo, env = make_repo(tmp_path, apply_checkpoint)
    env["FASTAPPLY"] += " --max-new-tokens 8"  # too few for the answer: fastapply refuses it as truncated
    (repo / "greet.py.fastapply").write_text(UPDATE)
    git(repo, env, "add", "greet.py.fastapply")
    head = git(repo, env, "rev-parse", "HEAD").stdout
    commit = git(repo, env, "commit", "-q", "-m", "friendlier greeting", check=False)
    assert commit.returncode != 0
    assert "fastapply: refused" in commit.stderr and "nothing was changed" in commit.stderr
    assert git(repo, env, "rev-parse", "HEAD").stdout == head
    assert (repo / "greet.py").read_text() == ORIGINAL
    assert git(repo, env, "diff", "--cached", "--name-only").stdout.split() == ["greet.py.fastapply"]


def test_pre_commit_hook_applies_an_edit_file_that_is_a_diff(apply_checkpoint, tmp_path):
    """FILE.fastapply written by git itself (`git diff`), applied by the merge engine alone."""
    repo, env = make_repo(tmp_path, apply_checkpoint)
    env["FASTAPPLY"] += " --engine merge"
    (repo / "greet.py").write_text(EXPECTED)
    (repo / "greet.py.fastapply").write_text(git(repo, env, "diff", "greet.py").stdout)
    git(repo, env, "checkout", "--", "greet.py")
    git(repo, env, "add", "greet.py.fastapply")
    commit = git(repo, env, "commit", "-q", "-m", "friendlier greeting", check=False)
    assert commit.returncode == 0, commit.stderr
    assert git(repo, env, "show", "HEAD:greet.py").stdout == EXPECTED
    assert not (repo / "greet.py.fastapply").exists()
