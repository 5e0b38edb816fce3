"""Reading a release archive (sdist or npm tarball) as a tree of source files.

``read_sources`` returns ``{path: LF text}`` for the files fastapply has a language for, with the
archive's top folder (``pkg-1.0/``, ``package/``) stripped so the two releases of a pair line up.
Binary, undecodable, oversized files and links are skipped. It does not decide which files are worth
an edit task; ``edits.py`` does.
"""

from __future__ import annotations

import tarfile
import zipfile
from pathlib import Path, PurePosixPath

from fastapply.errors import FastapplyError
from fastapply.fileio import decode
from fastapply.syntax import SOURCE_LANGUAGES, language_for_path

MAX_FILE_BYTES = 256_000  # far above 400 lines of code; larger files are data or generated


def _strip_top(name: str) -> str | None:
    parts = PurePosixPath(name).parts
    if len(parts) < 2 or ".." in parts or parts[0] in ("/", ""):
        return None
    return "/".join(parts[1:])


def _add(tree: dict[str, str], name: str, data: bytes) -> None:
    path = _strip_top(name)
    if path is None or language_for_path(path, SOURCE_LANGUAGES) is None or len(data) > MAX_FILE_BYTES:
        return
    try:
        text, _fmt = decode(data, path)
    except FastapplyError:
        return
    tree[path] = text


def read_sources(archive: Path) -> dict[str, str]:
    """Source files in ``archive`` (.tar.gz, .tgz, .tar.bz2, .zip) by path without the top folder."""
    tree: dict[str, str] = {}
    name = archive.name
    try:
        if name.endswith(".zip"):
            with zipfile.ZipFile(archive) as zf:
                for info in zf.infolist():
                    if not info.is_dir() and info.file_size <= MAX_FILE_BYTES:
                        _add(tree, info.filename, zf.read(info))
        else:
            with tarfile.open(archive) as tf:
                for member in tf:
                    if member.isfile() and member.size <= MAX_FILE_BYTES:
                        handle = tf.extractfile(member)
                        if handle is not None:
                            _add(tree, member.name, handle.read())
    except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError) as exc:
        raise FastapplyError(f"cannot read archive {archive}: {exc}") from None
    return tree
