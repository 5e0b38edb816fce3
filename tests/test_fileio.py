"""fileio: byte-for-byte round trips, refusals, and atomic writes that never damage the file."""

import codecs
import os
import stat

import pytest

from fastapply.errors import FastapplyError
from fastapply.fileio import decode, encode, read_text, write_atomic

SAMPLES = {
    "utf8-lf": "def f():\n    return 'é'\n".encode(),
    "utf8-crlf": "def f():\r\n    return 'é'\r\n".encode(),
    "utf8-cr": "def f():\r    return 1\r".encode(),
    "utf8-no-final-newline": b"a = 1\nb = 2",
    "utf8-mixed": b"a = 1\r\nb = 2\nc = 3\r\nd = 4\n",
    "utf8-bom": codecs.BOM_UTF8 + "x = 'ü'\r\n".encode(),
    "utf16-le-bom": "x = 'ü'\r\ny = 2\r\n".encode("utf-16"),
    "utf16-be-bom": codecs.BOM_UTF16_BE + "x = 'ü'\ny = 2\n".encode("utf-16-be"),
    "empty": b"",
    "blank-lines-only": b"\n\n",
}


@pytest.mark.parametrize("name", SAMPLES)
def test_round_trip_is_byte_for_byte(name):
    data = SAMPLES[name]
    text, fmt = decode(data)
    assert "\r" not in text
    assert encode(text, fmt) == data


def test_edit_keeps_crlf_and_bom():
    text, fmt = decode(SAMPLES["utf8-bom"])
    assert encode(text + "y = 2\n", fmt) == codecs.BOM_UTF8 + "x = 'ü'\r\ny = 2\r\n".encode()


def test_edit_of_mixed_file_keeps_each_kept_line_ending():
    text, fmt = decode(SAMPLES["utf8-mixed"])
    edited = text.replace("b = 2\n", "b = 2\nb2 = 22\n")
    # kept lines keep their own ending; the new line takes the dominant one (here a tie, so LF)
    assert encode(edited, fmt) == b"a = 1\r\nb = 2\nb2 = 22\nc = 3\r\nd = 4\n"


def test_binary_and_undecodable_input_is_refused():
    with pytest.raises(FastapplyError, match="binary"):
        decode(b"\x89PNG\r\n\x1a\n\x00\x00")
    with pytest.raises(FastapplyError, match="not valid UTF-8"):
        decode(b"caf\xe9\n")


def test_read_text_errors_are_one_line(tmp_path):
    with pytest.raises(FastapplyError, match="no such file"):
        read_text(str(tmp_path / "missing.py"))
    with pytest.raises(FastapplyError, match="directory"):
        read_text(str(tmp_path))


def test_write_atomic_keeps_mode(tmp_path):
    path = tmp_path / "run.sh"
    path.write_bytes(b"echo 1\n")
    os.chmod(path, 0o750)
    write_atomic(path, b"echo 2\n")
    assert path.read_bytes() == b"echo 2\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o750


def test_write_atomic_replaces_a_symlinks_target(tmp_path):
    target = tmp_path / "real.py"
    target.write_bytes(b"a = 1\n")
    link = tmp_path / "link.py"
    link.symlink_to(target)
    write_atomic(link, b"a = 2\n")
    assert link.is_symlink()
    assert os.readlink(link) == str(target)
    assert target.read_bytes() == b"a = 2\n"


def test_write_atomic_creates_a_new_file(tmp_path):
    path = tmp_path / "new.py"
    write_atomic(path, b"x = 1\n")
    assert path.read_bytes() == b"x = 1\n"


def _leftovers(directory):
    return [p.name for p in directory.iterdir() if p.name.endswith(".fastapply-tmp")]


@pytest.mark.parametrize("failure, raised", [(OSError("disk full"), FastapplyError),
                                             (KeyboardInterrupt(), KeyboardInterrupt)])
def test_failure_before_replace_leaves_the_file_whole(tmp_path, monkeypatch, failure, raised):
    path = tmp_path / "code.py"
    path.write_bytes(b"original = True\n")
    os.chmod(path, 0o644)

    def broken_replace(src, dst):
        assert os.path.exists(src)  # the temp file was written, the original not yet touched
        raise failure

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(raised):
        write_atomic(path, b"original = False\n" * 1000)
    assert path.read_bytes() == b"original = True\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert _leftovers(tmp_path) == []


def test_read_only_file_is_refused_with_a_clear_message(tmp_path):
    path = tmp_path / "locked.py"
    path.write_bytes(b"x = 1\n")
    os.chmod(path, 0o444)
    with pytest.raises(FastapplyError, match="read-only"):
        write_atomic(path, b"x = 2\n")
    assert path.read_bytes() == b"x = 1\n"
    assert _leftovers(tmp_path) == []


def test_missing_directory_is_refused_with_a_clear_message(tmp_path):
    with pytest.raises(FastapplyError, match="does not exist"):
        write_atomic(tmp_path / "nowhere" / "x.py", b"x = 1\n")
