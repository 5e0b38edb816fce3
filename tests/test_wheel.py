"""A non-editable install carries what a user needs beside the code: the eval suite (``fastapply eval``
finds it) and, once released, the fastapply-small adapter. Built as a wheel, unpacked, run elsewhere."""

import json
import subprocess
import sys
import zipfile

import pytest

from fastapply import bundled

ADAPTER = bundled.ADAPTER_DIR  # the real one, before conftest hides it


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The wheel of this checkout, unpacked into a folder of its own (what pip install . puts in site-packages)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    wheels = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(wheels), str(root)], check=True, capture_output=True)
    site = tmp_path_factory.mktemp("site")
    with zipfile.ZipFile(next(wheels.glob("fastapply-*.whl"))) as wheel:
        wheel.extractall(site)
    return site


def run(site, *args, cwd):
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "HOME": str(cwd), "FASTAPPLY_CACHE_DIR": str(cwd / "cache")}
    return subprocess.run([sys.executable, "-m", "fastapply", *args], capture_output=True, text=True, env=env, cwd=cwd)


def test_eval_finds_the_suite_in_a_wheel(installed, tmp_path):
    out = run(installed, "eval", "--engine", "merge", "--limit", "5", "--json", "--out", str(tmp_path / "e"),
              cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    summary = json.loads(out.stdout)
    assert summary["tasks"] == 5 and f"--tasks {installed}/fastapply/suite/suite.jsonl.gz" in summary["command"]


def test_the_adapter_is_in_the_wheel(installed, tmp_path, monkeypatch):
    if not (ADAPTER / "adapter_model.safetensors").is_file():
        pytest.skip("this checkout carries no fastapply-small adapter")
    monkeypatch.setattr(bundled, "ADAPTER_DIR", ADAPTER)
    info = json.loads(run(installed, "model", "info", cwd=tmp_path).stdout)
    assert info["adapter"] == f"{installed}/fastapply/models/fastapply-small"
    assert info["adapter_sha256"] == bundled.adapter_sha256()
