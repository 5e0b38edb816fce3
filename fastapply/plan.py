"""What applying one batch item would do, nothing written yet (``plan_item``): its record, with its new
text, and what writes it (``Write``), run later (at once, or, ``--atomic``, once every item is planned and
none failed) only where each file it read still holds what it read. The edit goes through
``engine.resolve_edit`` as ``fastapply FILE --edit`` does; a diff's part may instead create, delete, move
or copy its file, make or change a symbolic link, or carry git's binary patch. ``Planned`` holds the files
as the items planned so far will leave them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from fastapply import fileio
from fastapply.binpatch import apply_binary, is_binary_patch
from fastapply.diffs import names_blob, read_patch
from fastapply.engine import ModelRun, resolve_edit
from fastapply.errors import FastapplyError, RefusedError, UsageError
from fastapply.fileparts import deleted_text, link_targets
from fastapply.items import BatchItem
from fastapply.syntax import language_for_path
from fastapply.validate import RefusalWatch


# run_model(original, update, instruction, merged, watch, language) -> ModelRun: a local model or a server;
# ``merged`` is the merge engine's candidate for the new file (the first draft), or None; ``watch`` a
# RefusalWatch that may stop the answer early, or None; ``language`` the file's, with which the prompt
# shows the update's markers as the model was trained to read them (``merge.restyle_markers``), or None
ModelRunner = Callable[[str, str, str, str | None, RefusalWatch | None, str | None], ModelRun]


_DISK = object()  # a path Planned knows nothing of: read from the disk


class Planned:
    """The files as the commits planned so far will leave them, none written yet (``--atomic``). An item
    reads a file as the commits before its own leave it (every part of one diff applies to the files as
    they were before it, as ``git apply``), and what it writes is seen from the next commit on (a series of
    ``git format-patch`` mails). A path no item planned is read from the disk."""

    def __init__(self) -> None:
        # by real path: the file's bytes (or the path on the disk that holds them) and execute bit; None: gone
        self._files: dict[str, tuple[bytes | str, bool] | None] = {}
        self._next: dict[str, tuple[bytes | str, bool] | None] = {}  # what this commit's items write
        self._links: dict[str, str | None] = {}  # by the link's own path: where it points; None: no link there
        self._next_links: dict[str, str | None] = {}

    def link(self, path: str) -> str | None:
        """Where the symbolic link at ``path`` points (None: there is none)."""
        known = self._links.get(location(path, True), _DISK)
        if known is not _DISK:
            return known
        return os.readlink(path) if os.path.islink(path) else None

    def _known(self, path: str, link: bool = False):
        return self._files.get(location(path, link), _DISK)

    def exists(self, path: str, link: bool = False) -> bool:
        """Whether there is a file at ``path`` (``link``: the path itself, a symbolic link not followed)."""
        known = self._known(path, link)
        return os.path.lexists(path) if known is _DISK else known is not None

    def read(self, path: str) -> bytes:
        known = self._known(path)
        if known is None:
            raise FastapplyError(f"cannot read {path}: no such file (an earlier commit of the series takes it away)")
        content = path if known is _DISK else known[0]
        return fileio.read_bytes(content) if isinstance(content, str) else content

    def executable(self, path: str) -> bool:
        known = self._known(path)
        if known is _DISK:
            return os.path.exists(path) and bool(os.stat(path).st_mode & 0o111)
        return known is not None and known[1]

    def will(self, item: BatchItem, data: bytes | None, executable: bool | None) -> None:
        """What ``item``'s write does: its file's new bytes (``data``; None: its source's, moved or given a
        mode alone, not read until needed) and execute bit (None: its source's); a moved file's old path, a
        deleted file, gone."""
        link = is_link(item, self)  # the link itself, not where it points
        if item.action == "delete":
            self._next[location(item.file, link)] = None
            return
        known = self._known(item.source)
        content = data if data is not None else known[0] if isinstance(known, tuple) else os.path.realpath(item.source)
        self._next[location(item.file, link)] = (content,
                                                  self.executable(item.source) if executable is None else executable)
        if item.action == "move" and item.source != item.file:
            self._next[location(item.source, link)] = None

    def will_link(self, path: str, target: str | None) -> None:
        """That the symbolic link at ``path`` will point to ``target`` (None: be gone)."""
        self._next_links[location(path, True)] = target

    def next_commit(self) -> None:
        """The items planned so far are seen from here on."""
        self._files.update(self._next)
        self._links.update(self._next_links)
        self._next, self._next_links = {}, {}


@dataclass(frozen=True)
class Write:
    """What writes an item's change (``plan_item``): ``run`` it where each file of ``was`` still holds what
    the plan read (path -> bytes; b"": no file, or an empty one), and each symbolic link of ``links`` still
    points where it did (None: nothing there), else nothing (``fileio.unchanged``: another program wrote
    the file meanwhile)."""

    run: Callable[[], None]
    was: dict[str, bytes | None]  # None: a path it changes without having read it (a file moved as it is)
    links: dict[str, str | None] = field(default_factory=dict)

    def checks(self) -> list[tuple[str, Callable[[], None] | None]]:
        """Each place the write changes (a real path; a link's own) and what checks it is as planned (None:
        nothing to check)."""
        files = [(os.path.realpath(path), None if held is None else partial(fileio.unchanged, path, held))
                 for path, held in self.was.items()]
        return files + [(location(path, True), partial(fileio.link_unchanged, path, target))
                        for path, target in self.links.items()]

    def __call__(self) -> None:
        for _, check in self.checks():
            if check is not None:
                check()
        self.run()


def plan_item(item: BatchItem, run_model: ModelRunner | None, engine: str = "auto", force: bool = False,
              merge_first: bool = False, focus: bool = True,
              files: Planned | None = None) -> tuple[dict, Write | None]:
    """What applying ``item`` would do, nothing written yet: its record (with its new text, ``written``
    false) and what writes it (None where the item failed or changes nothing). ``files``: the files as the
    items planned before it leave them (None: as they are on the disk)."""
    files = files or Planned()
    try:
        if item.problem:
            raise UsageError(item.problem)
        _claim(item, files)
        if is_link(item, files):
            return _link(item, files)
        if item.action == "delete":
            return _delete(item, files)
        if item.part is not None and is_binary_patch(item.part.text):
            return _binary(item, files)
        if item.part is not None and not item.part.hunks:
            return _unedited(item, files)
        absent = item.action == "create" and not files.exists(item.file)
        read = b"" if absent else files.read(item.source)
        original, fmt = ("", None) if absent else fileio.decode(read, item.source)
        if item.part is not None and read_patch(item.edit, original) is None:  # never read as a snippet
            raise UsageError(f"cannot read the diff's part for {item.file} as a diff of it (a file holding hunk "
                             f"headers of its own takes git's diff, whose index line names it)")
        language = language_for_path(item.file)
        model = None if run_model is None else lambda shown, update, instruction, merged, watch: run_model(
            shown, update, instruction, merged, watch, language)
        outcome = resolve_edit(original, item.edit, language, engine, model, force, item.instruction, merge_first,
                               focus, item.file)
    except FastapplyError as exc:
        return failed_record(item.line, item.file, exc), None
    executable = _executable(item, files)
    rewrite = outcome.text != original or item.action != "edit"
    ends = item.part.ends if item.part is not None else None  # a created file's CRLF (or lone CR) line ends
    data = fileio.encode(outcome.text, ends or outcome.format(fmt)) if rewrite else None
    problems = [p.name for p in outcome.problems]  # with force only
    stats = outcome.model_run.stats if outcome.model_run is not None else None
    changed = rewrite or executable is not None
    record = _record(item, changed, outcome.engine, problems, outcome.text, stats)
    return record, _writer(item, data, executable, files, read) if changed else None


def failed_record(line: int, file: str, exc: FastapplyError) -> dict:
    """The record of an item that failed (refused: with the failed checks)."""
    failed = {"line": line, "file": file, "ok": False, "error": str(exc), "exit_code": exc.exit_code}
    return {**failed, "reasons": list(exc.reasons)} if isinstance(exc, RefusedError) else failed


def _record(item: BatchItem, changed: bool, engine: str, problems: list[str], text: str | None,
            stats: dict | None) -> dict:
    """The record of an item planned: what it does to the file, and its new text (null where it deletes
    the file or leaves its text as it was, moving it or changing its mode alone)."""
    did = ({"created": True} if item.action == "create" else {"moved_from": item.source} if item.action == "move"
           else {"copied_from": item.source} if item.action == "copy" else {"deleted": True}
           if item.action == "delete" else {})
    return {"line": item.line, "file": item.file, "ok": True, "changed": changed, "written": False, "engine": engine,
            "problems": problems, **did, "text": text, "stats": stats}


def _claim(item: BatchItem, files: Planned) -> None:
    """Whether ``item`` may do what it does: a file a diff names is changed only under the current
    directory (one an answer names, created only there), created, moved or copied to only where none is
    (or an empty one)."""
    link = is_link(item, files)  # the link itself is checked, not where it points
    if item.action != "edit" or item.part is not None:
        for path in dict.fromkeys((item.source, item.file)):
            _under_here(path, item.action, link)
    if item.action == "create" and not link and files.exists(item.file) and files.read(item.file).strip():
        raise UsageError(f"cannot create {item.file}: it exists; nothing was done")
    if item.action in ("move", "copy") and item.source != item.file and files.exists(item.file, link):
        raise UsageError(f"cannot {item.action} {item.source} to {item.file}: it exists; nothing was done")
    if item.action in ("move", "copy") and not files.exists(item.source, link):
        raise FastapplyError(f"cannot {item.action} {item.source}: no such file; nothing was done")


def _executable(item: BatchItem, files: Planned) -> bool | None:
    """The execute permission to give the file, where that changes it: the one git's ``new mode`` gives;
    a file moved or copied (written anew) keeps its source's unless the diff gives another."""
    had = files.executable(item.source)
    wanted = had if item.part is None or item.part.mode is None else bool(item.part.mode & 0o111)
    return wanted if wanted != had or (wanted and item.action in ("move", "copy")) else None


def _writer(item: BatchItem, data: bytes | None, executable: bool | None, files: Planned,
            read: bytes | None = None) -> Write:
    """What writes an item's file: its new bytes (None: its bytes as they are, moved where the item moves
    it), with the folders a created or moved file needs; then its execute permission where that changes.
    ``read``: the bytes the new ones were made from, which the file (a moved file's source) must still
    hold; a file created, moved or copied to must still not be there. ``files`` learns what it will do."""
    files.will(item, data, executable)
    was = {}  # a mode given alone loses no one's change: nothing to check
    if item.action in ("move", "copy") and item.source != item.file:
        was[item.file] = b""
        if item.action == "move":
            was[item.source] = read if data is not None else None
    elif data is not None and read is not None:
        was[item.file] = read
    elif item.action == "create":
        was[item.file] = b""

    def write() -> None:
        if item.action in ("create", "move", "copy"):
            os.makedirs(os.path.dirname(os.path.abspath(item.file)), exist_ok=True)
        if data is not None:
            fileio.write_atomic(item.file, data)
            if item.action == "move" and item.source != item.file:
                fileio.remove(item.source)
        elif item.source != item.file:
            fileio.move(item.source, item.file)
        if executable is not None:
            fileio.set_executable(item.file, executable)

    return Write(write, was)


def _unedited(item: BatchItem, files: Planned) -> tuple[dict, Write | None]:
    """A diff's part with no hunks: a file created empty, moved or copied as it is (its bytes, text or
    not) or given a mode alone."""
    executable = _executable(item, files)
    changed = item.action != "edit" or executable is not None
    text = "" if item.action == "create" else None
    data = b"" if item.action == "create" else files.read(item.source) if item.action == "copy" else None
    record = _record(item, changed, "merge", [], text, None)
    return record, _writer(item, data, executable, files) if changed else None


def _binary(item: BatchItem, files: Planned) -> tuple[dict, Write]:
    """A diff's part holding git's binary patch (``binpatch``): the file's new bytes, its record's text
    null, ``"binary": true``."""
    old = b"" if item.action == "create" and not files.exists(item.file) else files.read(item.source)
    new = apply_binary(item.part.text, old, item.file)
    record = {**_record(item, True, "merge", [], None, None), "binary": True}
    return record, _writer(item, new, _executable(item, files), files, old)


def _under_here(path: str, action: str, link: bool = False) -> None:
    """A diff changes files only under the current directory (as ``git apply`` only in its repository, and
    GNU ``patch`` refuses such names): a coding agent's patch naming ``/etc/hosts`` or ``../x``, or a
    symbolic link out of it, is not followed. A symbolic link the diff changes (``link``) is not followed
    either: the folder that holds it is checked (it may point anywhere, as git's may)."""
    if not Path(location(path, link)).is_relative_to(Path.cwd().resolve()):
        raise UsageError(f"cannot {action} {path}: it is outside the current directory; nothing was done")


def is_link(item: BatchItem, files: Planned) -> bool:
    """Whether ``item`` makes, points elsewhere, deletes, moves or copies a symbolic link: git's mode
    120000, or a rename or copy with no hunks of a path that is a link (git writes no mode for it), as the
    items planned before it leave it (``files``)."""
    return item.part is not None and (item.part.link or (item.action in ("move", "copy") and not item.part.hunks
                                                         and files.link(item.source) is not None))


def location(path: str, link: bool = False) -> str:
    """Where ``path`` really is (symbolic links followed), or, ``link``, the symbolic link itself (the
    folders above it followed, not the link)."""
    if not link:
        return os.path.realpath(path)
    return os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(path))), os.path.basename(path))


def _link(item: BatchItem, files: Planned) -> tuple[dict, Write]:
    """A part that makes a symbolic link, points one elsewhere, deletes, moves or copies one (``_is_link``),
    only where the link is what the diff shows it was (its target; nothing there, for a link it makes); the
    link itself is written, moved or copied, never a file it points to. Its record says ``"link": true``,
    its text the new target (null where deleted)."""
    path, source = item.file, item.source
    had = files.link(source)
    old, new = link_targets(item.edit) if item.part.hunks else (had, had)  # moved or copied as it is
    if item.action == "create" and files.exists(path, link=True):
        raise UsageError(f"cannot create {path}: it exists; nothing was done")
    if item.action != "create" and (had is None or had != old):
        now = "it is not a symbolic link" if had is None else f"it points to {had}"
        raise RefusedError(f"{source} is not the symbolic link the diff changes ({now}); nothing was done",
                           ("stale-link",))
    if item.action != "delete" and not new:
        raise UsageError(f"the diff's part for the symbolic link {path} shows no target; nothing was done")
    files.will(item, None if item.action == "delete" else b"", False)
    files.will_link(path, None if item.action == "delete" else new)
    if item.action == "move":
        files.will_link(source, None)

    def run() -> None:
        if item.action == "delete":
            fileio.remove(path)
            return
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        if item.action == "move" and new == had:
            fileio.move(source, path)
            return
        fileio.make_link(path, new)
        if item.action == "move" and source != path:
            fileio.remove(source)

    record = {**_record(item, True, "merge", [], None if item.action == "delete" else new, None), "link": True}
    was = {source: had} if item.action in ("move", "copy") else {}
    return record, Write(run, {}, {**was, path: had if item.action in ("edit", "delete") else None})


def _delete(item: BatchItem, files: Planned) -> tuple[dict, Write]:
    """A part that deletes its file: the file must be what the diff shows it was (by git's object id, text
    or not; else by the lines it deletes; a ``*** Delete File:`` line shows nothing)."""
    data = files.read(item.file)
    if item.part is not None and item.part.blob is not None:
        same = names_blob(item.part.blob, data)
    else:
        shown = deleted_text(item.edit)
        same = shown is None or shown.rstrip("\n") == fileio.decode(data, item.file)[0].rstrip("\n")
    if not same:
        raise RefusedError(f"{item.file} is not the file the diff deletes (it has changed since); nothing was "
                           f"deleted", ("stale-deletion",))
    files.will(item, None, None)
    return _record(item, True, "merge", [], None, None), Write(lambda: fileio.remove(item.file), {item.file: data})
