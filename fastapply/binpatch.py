"""git's binary patches: the ``GIT binary patch`` of ``git diff --binary`` and ``git format-patch``.

After its header, a binary file's part holds two hunks, the change and its reverse, each ``literal N``
(the new file's N bytes) or ``delta N`` (git's delta of N bytes against the old file), zlib-deflated and
written in base85 lines, each line's first letter its byte count (``A``-``Z`` 1-26, ``a``-``z`` 27-52),
each hunk ended by a blank line. fastapply applies the first. The old file must be the one the part's
``index`` line names (as ``git apply`` checks), and the result the one it names after.
"""

from __future__ import annotations

import base64
import re
import zlib

from fastapply.diffs import INDEX_LINE, names_blob
from fastapply.errors import RefusedError, UsageError

_HUNK = re.compile(r"^(literal|delta) (\d+)$")


def is_binary_patch(part: str) -> bool:
    """Whether a file's part of a diff holds a binary patch."""
    return "\nGIT binary patch\n" in f"\n{part}"


def apply_binary(part: str, old: bytes, path: str) -> bytes:
    """The bytes the binary patch in ``part`` (a file's part of a diff) makes of ``old``, the file at
    ``path`` (b"" for one it creates). RefusedError (``stale-binary``) where ``old`` is not the file the
    part's ``index`` line names; UsageError where the patch is not one git could have written.

    >>> apply_binary("GIT binary patch\\nliteral 3\\nKc-muNWC8#H2LJ>B\\n\\nliteral 0\\nHcmV?d00001\\n", b"", "x")
    b'\\x00\\x01\\x02'
    """
    lines = part.replace("\r\n", "\n").split("\n")
    index = next((found for line in lines if (found := INDEX_LINE.match(line))), None)
    if index is not None and index.group(1).strip("0") and not names_blob(index.group(1), old):  # 0s: no file
        raise RefusedError(f"{path} is not the file the diff's binary patch changes (it has changed since); "
                           f"nothing was done", ("stale-binary",))
    start = lines.index("GIT binary patch") + 1
    hunk = _HUNK.match(lines[start].strip()) if start < len(lines) else None
    if hunk is None:
        raise UsageError(f"the binary patch for {path} has no literal or delta line after GIT binary patch")
    kind, size = hunk.group(1), int(hunk.group(2))
    data = _inflated(lines[start + 1:], size, path)
    new = data if kind == "literal" else apply_delta(old, data, path)
    if index is not None and not names_blob(index.group(2), new):
        raise UsageError(f"the binary patch for {path} does not give the file its index line names")
    return new


def _inflated(lines: list[str], size: int, path: str) -> bytes:
    """The ``size`` bytes a hunk's base85 lines (up to the blank line that ends it) hold, inflated."""
    packed = bytearray()
    for line in lines:
        line = line.rstrip()
        if not line:
            break
        first = line[0]
        count = (ord(first) - ord("A") + 1 if "A" <= first <= "Z" else
                 ord(first) - ord("a") + 27 if "a" <= first <= "z" else 0)
        if count < 1 or len(line) - 1 != (count + 3) // 4 * 5:
            raise UsageError(f"the binary patch for {path} has a line of the wrong length: {line[:20]}")
        try:
            packed += base64.b85decode(line[1:])[:count]
        except ValueError as exc:
            raise UsageError(f"the binary patch for {path} is not base85: {exc}") from None
    inflate = zlib.decompressobj()
    try:
        data = inflate.decompress(bytes(packed), size + 1)  # no more than the header says (and one byte to tell)
    except zlib.error as exc:
        raise UsageError(f"the binary patch for {path} is corrupt: {exc}") from None
    if len(data) > size:
        raise UsageError(f"the binary patch for {path} holds more than the {size} bytes its header says")
    if len(data) == size and not inflate.eof:
        raise UsageError(f"the binary patch for {path} is corrupt: its data ends early")
    if len(data) != size:
        raise UsageError(f"the binary patch for {path} holds {len(data)} bytes, its header says {size}")
    return data


def apply_delta(source: bytes, delta: bytes, path: str = "the file") -> bytes:
    """``source`` rebuilt by git's delta: the two sizes (7 bits a byte, the low bits first), then each
    instruction a copy of the source (its first byte's high bit set, its low 7 bits saying which bytes of
    offset and length follow) or an insertion of the 1-127 bytes that follow.

    >>> apply_delta(b"hello world", bytes([11, 8, 0x91, 6, 5, 3]) + b"!!!")
    b'world!!!'
    """
    def corrupt(why: str) -> UsageError:
        return UsageError(f"the binary patch for {path} is corrupt: {why}")

    at = 0

    def size() -> int:
        nonlocal at
        value = shift = 0
        while True:
            if at >= len(delta):
                raise corrupt("its delta ends in a size")
            byte = delta[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value

    if size() != len(source):
        raise RefusedError(f"{path} is not the file the diff's binary patch changes (its size differs); nothing was "
                           f"done", ("stale-binary",))
    wanted = size()
    out = bytearray()
    while at < len(delta):
        op = delta[at]
        at += 1
        if op & 0x80:
            fields = []
            for bits in ((0x01, 0x02, 0x04, 0x08), (0x10, 0x20, 0x40)):
                value = 0
                for k, bit in enumerate(bits):
                    if op & bit:
                        if at >= len(delta):
                            raise corrupt("its delta ends in a copy")
                        value |= delta[at] << (8 * k)
                        at += 1
                fields.append(value)
            offset, length = fields[0], fields[1] or 0x10000
            if offset + length > len(source):
                raise corrupt("its delta copies past the end of the file")
            out += source[offset:offset + length]
        elif op:
            if at + op > len(delta):
                raise corrupt("its delta ends in an insertion")
            out += delta[at:at + op]
            at += op
        else:
            raise corrupt("its delta holds the reserved instruction 0")
    if len(out) != wanted:
        raise corrupt(f"its delta makes {len(out)} bytes, its header says {wanted}")
    return bytes(out)
