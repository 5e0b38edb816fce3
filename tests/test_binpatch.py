"""git's binary patches: base85 lines, zlib, literal and delta hunks, checked against the index line."""

import base64
import hashlib
import zlib

import pytest

from fastapply.binpatch import apply_binary, apply_delta, is_binary_patch
from fastapply.errors import RefusedError, UsageError

OLD = bytes(range(256)) * 8
NEW = OLD[:1000] + b"\xff\xfe\xfd" + OLD[1003:]
# git diff --binary of OLD made NEW (git 2.39): a delta hunk, then the reverse one
DELTA = ("diff --git a/a.bin b/a.bin\n"
         "index e57fd5b4e8e07e39a62591e0851986e97116111c..6201369731d23ea368b81eace82b6c5cdbf993dc 100644\n"
         "GIT binary patch\ndelta 15\nXcmZn=Xb{-&f|>dMzrPz_i?RR!I1>kM\n\ndelta 10\nPcmZn=Xb@P$!U9A959|VU\n\n")


def _lines(data: bytes) -> str:
    """``data`` deflated and written as git writes a hunk's lines (52 bytes a line, its length first)."""
    packed = zlib.compress(data)
    lines = []
    for at in range(0, len(packed), 52):
        chunk = packed[at:at + 52]
        size = chr(ord("A") + len(chunk) - 1) if len(chunk) <= 26 else chr(ord("a") + len(chunk) - 27)
        lines.append(size + base64.b85encode(chunk + b"\0" * (-len(chunk) % 4)).decode())
    return "\n".join(lines) + "\n"


def test_a_delta_git_wrote_rebuilds_the_new_file_and_checks_both_ids():
    assert is_binary_patch(DELTA) and not is_binary_patch("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-GIT binary patch\n")
    assert apply_binary(DELTA, OLD, "a.bin") == NEW
    assert apply_binary(DELTA.replace("\n", "\r\n"), OLD, "a.bin") == NEW  # a diff saved with CRLF ends
    with pytest.raises(RefusedError, match="has changed since") as stale:  # the index line names another file
        apply_binary(DELTA, OLD[:-1] + b"x", "a.bin")
    assert stale.value.reasons == ("stale-binary",)
    unnamed = DELTA.replace(DELTA.split("\n")[1] + "\n", "")  # no index line: the delta's own size still checks
    with pytest.raises(RefusedError, match="its size differs"):
        apply_binary(unnamed, OLD + b"x", "a.bin")
    wrong = DELTA.replace("..6201369731d23ea368b81eace82b6c5cdbf993dc", "..62013697")  # shortened, still checked
    assert apply_binary(wrong, OLD, "a.bin") == NEW
    with pytest.raises(UsageError, match="does not give the file its index line names"):
        apply_binary(wrong.replace("..62013697", "..62013698"), OLD, "a.bin")


def test_a_literal_hunk_holds_the_new_file_over_several_lines():
    data = bytes((i * 7919) % 251 for i in range(5000))  # deflates to more than one 52-byte line
    part = f"GIT binary patch\nliteral {len(data)}\n{_lines(data)}\nliteral 0\nHcmV?d00001\n\n"
    assert part.count("\n") > 5 and apply_binary(part, b"whatever was there", "x.bin") == data
    blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    created = f"new file mode 100644\nindex {'0' * 40}..{blob}\n" + part  # all zeros: no file before it
    assert apply_binary(created, b"", "x.bin") == data
    with pytest.raises(UsageError, match="does not give the file its index line names"):
        apply_binary(created.replace(blob, "e69de29"), b"", "x.bin")
    with pytest.raises(UsageError, match="holds more than the 4999 bytes its header says"):
        apply_binary(part.replace("literal 5000", "literal 4999"), b"", "x.bin")
    with pytest.raises(UsageError, match="holds 5000 bytes, its header says 5001"):
        apply_binary(part.replace("literal 5000", "literal 5001"), b"", "x.bin")
    bomb = f"GIT binary patch\nliteral 10\n{_lines(bytes(50_000_000))}\n"  # inflated no further than it says
    with pytest.raises(UsageError, match="more than the 10 bytes"):
        apply_binary(bomb, b"", "x.bin")
    cut = "\n".join(part.split("\n")[:4]) + "\n\n"  # its first lines alone
    with pytest.raises(UsageError, match="corrupt|holds"):
        apply_binary(cut, b"", "x.bin")
    first = part.split("\n")[2]
    with pytest.raises(UsageError, match="wrong length"):
        apply_binary(part.replace(first, first[:-5]), b"", "x.bin")
    with pytest.raises(UsageError, match="corrupt"):
        apply_binary(part.replace(first, first[0] + "0" * (len(first) - 1)), b"", "x.bin")
    with pytest.raises(UsageError, match="no literal or delta line"):
        apply_binary("GIT binary patch\nbinary 3\n", b"", "x.bin")


def test_delta_instructions_copy_and_insert():
    """A copy's offset and length bytes are those its instruction's bits name (a length of 0 is 65536); an
    insertion its 1-127 bytes."""
    source = bytes(range(256)) * 300  # 76800 bytes
    ops = (bytes([0x80 | 0x01 | 0x02 | 0x10, 0x02, 0x01, 0x03])  # copy from offset 0x0102 (2 bytes named), 3 bytes
           + bytes([2]) + b"ab"  # insert 2 bytes
           + bytes([0x80 | 0x02, 0x01]))  # copy from offset 0x0100 (its second byte alone), no length byte: 65536
    want = source[0x102:0x105] + b"ab" + source[0x100:0x100 + 0x10000]
    delta = _size(len(source)) + _size(len(want)) + ops
    assert apply_delta(source, delta) == want
    with pytest.raises(UsageError, match="reserved instruction 0"):
        apply_delta(b"abc", _size(3) + _size(1) + b"\x00")
    with pytest.raises(UsageError, match="copies past the end"):
        apply_delta(b"abc", _size(3) + _size(4) + bytes([0x80 | 0x10, 4]))
    with pytest.raises(UsageError, match="ends in an insertion"):
        apply_delta(b"abc", _size(3) + _size(5) + bytes([5]) + b"xy")
    with pytest.raises(UsageError, match="makes 2 bytes, its header says 3"):
        apply_delta(b"abc", _size(3) + _size(3) + bytes([2]) + b"xy")
    with pytest.raises(RefusedError, match="its size differs"):
        apply_delta(b"abcd", _size(3) + _size(1) + bytes([1]) + b"x")


def _size(value: int) -> bytes:
    """git's size: 7 bits a byte, low bits first, the high bit set on all but the last."""
    out = bytearray()
    while True:
        out.append(value & 0x7F | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)
