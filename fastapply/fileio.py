"""Reading and writing the user's files without ever damaging them.

Text reaches the model as LF-only ``str``; ``TextFormat`` remembers what the file had (encoding,
BOM, newline style, final newline) so the result is written back in the file's own format. Writes
are atomic: a temp file in the same directory, fsync, ``os.replace``; the mode is kept and a symlink
stays a symlink (its target is replaced); a symlink a diff makes is made the same way (``make_link``).
This module does not judge content; ``validate.py`` does.
"""

from __future__ import annotations

import codecs
import difflib
import os
import secrets
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from fastapply.errors import FastapplyError

STDIN = "-"


@dataclass(frozen=True)
class TextFormat:
    encoding: str = "utf-8"  # "utf-8", "utf-8-sig" (BOM), "utf-16" (little-endian BOM), "utf-16-be" (BOM)
    newline: str = "\n"  # the file's dominant line ending: "\n", "\r\n" or "\r"
    final_newline: bool = True
    original_lines: tuple[str, ...] | None = None  # lines with their endings, kept only for mixed files


def decode(data: bytes, name: str = "input") -> tuple[str, TextFormat]:
    """Bytes of a text file -> (LF text, its format). Binary or undecodable data is refused."""
    raw, encoding = _decoded(data, name)
    crlf = raw.count("\r\n")
    cr = raw.count("\r") - crlf
    lf = raw.count("\n") - crlf
    counts = {"\n": lf, "\r\n": crlf, "\r": cr}
    newline = max(counts, key=lambda k: (counts[k], k == "\n"))
    mixed = sum(1 for c in counts.values() if c) > 1
    text = as_lf(raw)
    fmt = TextFormat(
        encoding=encoding,
        newline=newline,
        final_newline=text.endswith("\n") or not text,
        original_lines=tuple(raw.splitlines(keepends=True)) if mixed else None,
    )
    return text, fmt


def as_lf(raw: str) -> str:
    """``raw`` with every line end (CRLF, a lone CR) made LF, as fastapply reads text."""
    return raw.replace("\r\n", "\n").replace("\r", "\n")


def _decoded(data: bytes, name: str) -> tuple[str, str]:
    """Bytes of a text file -> (its text, line ends as they are, BOM dropped; its encoding)."""
    if data.startswith(codecs.BOM_UTF16_LE):
        encoding = "utf-16"
    elif data.startswith(codecs.BOM_UTF16_BE):
        encoding = "utf-16-be"
        data = data[len(codecs.BOM_UTF16_BE):]
    elif data.startswith(codecs.BOM_UTF8):
        encoding = "utf-8-sig"
    else:
        encoding = "utf-8"
        if b"\0" in data:
            raise FastapplyError(f"{name} looks like a binary file; fastapply edits text files")
    try:
        return data.decode(encoding), encoding
    except UnicodeDecodeError as exc:
        raise FastapplyError(
            f"{name} is not valid {encoding.upper()} text (byte {exc.start}); fastapply edits UTF-8 and UTF-16 files"
        ) from None


def encode(text: str, fmt: TextFormat) -> bytes:
    """LF text -> bytes in the file's own format (the inverse of ``decode``).

    For a file with mixed line endings, lines kept from the original keep their own ending and new
    lines take the dominant one.
    """
    if fmt.final_newline and text and not text.endswith("\n"):
        text += "\n"
    elif not fmt.final_newline:
        text = text.rstrip("\n")
    lines = text.splitlines(keepends=True)
    if fmt.original_lines is None:
        out = "".join(line[:-1] + fmt.newline if line.endswith("\n") else line for line in lines)
    else:
        old_bare = [line.rstrip("\r\n") for line in fmt.original_lines]
        new_bare = [line.rstrip("\n") for line in lines]
        endings = [line[len(line.rstrip("\n")):] and fmt.newline for line in lines]
        matcher = difflib.SequenceMatcher(a=old_bare, b=new_bare, autojunk=False)
        for block in matcher.get_matching_blocks():
            for offset in range(block.size):
                old_line = fmt.original_lines[block.a + offset]
                if endings[block.b + offset]:
                    endings[block.b + offset] = old_line[len(old_line.rstrip("\r\n")):] or fmt.newline
        out = "".join(bare + ending for bare, ending in zip(new_bare, endings))
    if fmt.encoding == "utf-16-be":  # Python's own "utf-16" codec writes the machine's byte order
        return codecs.BOM_UTF16_BE + out.encode("utf-16-be")
    return out.encode(fmt.encoding)


def read_bytes(path: str) -> bytes:
    """The bytes of ``path`` (``-`` is stdin), with one-line errors for the usual failures."""
    if path == STDIN:
        return sys.stdin.buffer.read()
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise _failed("read", path, exc) from None


def _failed(doing: str, path: str | Path, exc: OSError) -> FastapplyError:
    """The one-line error of an OS call on ``path`` that failed."""
    why = ("no such file" if isinstance(exc, FileNotFoundError) else "it is a directory"
           if isinstance(exc, IsADirectoryError) else "permission denied" if isinstance(exc, PermissionError)
           else exc.strerror or str(exc))
    return FastapplyError(f"cannot {doing} {path}: {why}")


def shown_name(path: str) -> str:
    """What messages call the file at ``path``: ``stdin`` for ``-``."""
    return "stdin" if path == STDIN else path


def read_text(path: str) -> tuple[str, TextFormat]:
    """(LF text, format) of the file at ``path`` (``-`` is stdin)."""
    return decode(read_bytes(path), shown_name(path))


def read_verbatim(path: str) -> str:
    """The text of the file at ``path`` (``-`` is stdin) with its line ends as they are: the lines a diff
    adds keep their CRs."""
    return _decoded(read_bytes(path), shown_name(path))[0]


def write_atomic(path: str | Path, data: bytes, was: bytes | None = None) -> None:
    """Replace the file at ``path`` with ``data`` so that readers see the old file or the new, never part;
    where ``was`` is given, only if the file still holds it then (``unchanged``), just before it is replaced.

    A symlink is followed and its target replaced; an existing file's permission bits are kept. On any
    failure (or Ctrl-C) the temp file is removed and the original is untouched.
    """
    target = Path(os.path.realpath(path))
    directory = target.parent
    if not directory.is_dir():
        raise FastapplyError(f"cannot write {path}: directory {directory} does not exist")
    try:
        mode = target.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    else:
        if not mode & 0o222:
            raise FastapplyError(f"cannot write {path}: the file is read-only")
    try:
        fd, tmp_name = tempfile.mkstemp(dir=directory, prefix=f".{target.name}.", suffix=".fastapply-tmp")
    except PermissionError:
        raise FastapplyError(f"cannot write {path}: permission denied in {directory}") from None
    try:
        with os.fdopen(fd, "wb") as tmp:
            tmp.write(data)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.chmod(tmp_name, mode)
        if was is not None:
            unchanged(path, was)
        os.replace(tmp_name, target)
    except BaseException as exc:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError):
            raise FastapplyError(f"cannot write {path}: {exc.strerror or exc}; the file is unchanged") from None
        raise
    _fsync_directory(directory)


def unchanged(path: str | Path, was: bytes) -> None:
    """Raises where the file at ``path`` no longer holds ``was`` (b"": no file, or an empty one): another
    program (an editor saving, another agent) wrote it while fastapply worked from what it read, and writing
    now would undo that program's change."""
    try:
        now = Path(path).read_bytes()
    except FileNotFoundError:
        now = b""
    except OSError as exc:
        raise _failed("read", path, exc) from None
    if now != was:
        raise _changed_meanwhile(path)


def link_unchanged(path: str | Path, target: str | None) -> None:
    """Raises where the symbolic link at ``path`` no longer points to ``target`` (None: there is nothing
    at ``path``): another program changed it while fastapply worked."""
    now = os.readlink(path) if os.path.islink(path) else "" if os.path.lexists(path) else None
    if now != target:
        raise _changed_meanwhile(path)


def _changed_meanwhile(path: str | Path) -> FastapplyError:
    return FastapplyError(f"{path} changed while fastapply worked on it (another program wrote it): it is left as that "
                          f"program wrote it; nothing was written")


def make_link(path: str | Path, target: str) -> None:
    """Make the symbolic link ``path`` point to ``target`` (the link itself, not a file it points to),
    replacing a link there at once: readers see the old link or the new."""
    directory = Path(os.path.abspath(path)).parent
    while True:
        temporary = directory / f".{Path(path).name}.{secrets.token_hex(4)}.fastapply-tmp"
        try:
            os.symlink(target, temporary)
            break
        except FileExistsError:
            continue
        except OSError as exc:
            raise _failed("write", path, exc) from None
    try:
        os.replace(temporary, path)
    except OSError as exc:
        os.unlink(temporary)
        raise _failed("write", path, exc) from None
    _fsync_directory(directory)


def remove(path: str | Path) -> None:
    """Delete the file at ``path`` (a symlink itself, not its target), with a one-line error."""
    try:
        os.unlink(path)
    except OSError as exc:
        raise _failed("delete", path, exc) from None
    _fsync_directory(Path(os.path.abspath(path)).parent)


def move(source: str | Path, target: str | Path) -> None:
    """Move the file at ``source`` to ``target`` (on one file system: at once, bytes and mode as they are),
    with a one-line error."""
    try:
        os.rename(source, target)
    except OSError as exc:
        raise _failed(f"move {source} to", target, exc) from None
    for directory in dict.fromkeys((Path(os.path.abspath(source)).parent, Path(os.path.abspath(target)).parent)):
        _fsync_directory(directory)


def set_executable(path: str | Path, executable: bool) -> None:
    """Give the file at ``path`` execute permission where it has read permission (as ``git apply`` does
    for a mode of 100755), or take every execute permission away (100644)."""
    try:
        mode = os.stat(path).st_mode & 0o7777
        os.chmod(path, mode | (mode & 0o444) >> 2 if executable else mode & ~0o111)
    except OSError as exc:
        raise _failed("change the mode of", path, exc) from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _fsync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
