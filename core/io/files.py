"""Atomic file writes: a file holds either its old content or its complete new content.

Every file the project writes goes to a temporary file with a unique name in the
destination's own folder (so the rename never crosses a file system), is flushed to disk, and
is renamed over the destination with :func:`os.replace` (atomic on POSIX and Windows). A
failure at any step, or an interruption before the rename, leaves the destination as it was;
the temporary is removed on every failure the process survives. A killed process can leave a
temporary behind: it is hidden (``.NAME.PID.TOKEN.tmp.EXT``) and names the process that wrote
it.

:func:`atomic_write` writes bytes or text the caller has fully serialized (so an error in
serialization never touches the file); :func:`atomic_path` gives a temporary path to writers
that create the file themselves (Blender's save and render, matplotlib) and renames it into
place when they succeed.

:func:`read_input` reads a whole file the project imports, with an InvalidInputError that
names the file when the system cannot read it.
"""

import contextlib
import os
import secrets

from ..errors import InvalidInputError

__all__ = ["atomic_write", "atomic_path", "check_writable_path", "read_input"]


def check_writable_path(path):
    """``path`` as a ``str`` after checking that it names a file in an existing folder.

    InvalidInputError when the folder does not exist or ``path`` is a folder; nothing is
    created.
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        raise InvalidInputError(f"{path} is a folder, not a file: choose a file name inside it")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise InvalidInputError(f"folder {folder} does not exist: create it or choose another")
    return path


def _temporary_name(path):
    """A fresh hidden name beside ``path`` that keeps its extension (writers that pick the
    format by extension still see it): ``.NAME.PID.TOKEN.tmp.EXT``."""
    folder, name = os.path.split(os.path.abspath(path))
    ext = os.path.splitext(name)[1]
    return os.path.join(folder, f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp{ext}")


def _remove(path):
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _fsync_file(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path):
    """Context manager yielding a temporary path (str) in the folder of ``path`` for a writer
    that creates the file itself; on normal exit the file written there is fsynced and renamed
    onto ``path``, on an exception (or when nothing was written there) it is removed and
    ``path`` keeps its previous content.

    InvalidInputError before any work when the folder does not exist or ``path`` is a folder.
    """
    path = check_writable_path(path)
    tmp = _temporary_name(path)
    try:
        yield tmp
        if not os.path.isfile(tmp):
            raise InvalidInputError(f"nothing was written for {path}: the writer created no file "
                                    "(check its messages above)")
        _fsync_file(tmp)
        os.replace(tmp, path)
    finally:
        _remove(tmp)


def atomic_write(path, data, *, encoding="utf-8"):
    """Write ``data`` (bytes, or str encoded with ``encoding``) to ``path`` atomically.

    The data goes to a new uniquely named file in the folder of ``path`` (created with the
    permissions an ordinary ``open(path, "w")`` gives), is flushed and fsynced, and is renamed
    onto ``path``, replacing an existing file. On any failure the temporary is removed and
    ``path`` keeps its previous content. InvalidInputError before any work when the folder does
    not exist or ``path`` is a folder.
    """
    if isinstance(data, str):
        data = data.encode(encoding)
    elif not isinstance(data, (bytes, bytearray, memoryview)):
        raise InvalidInputError(f"atomic_write writes bytes or str, got {type(data).__name__}")
    with atomic_path(path) as tmp:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                     0o666)
        with os.fdopen(fd, "wb") as fh:  # closing flushes; atomic_path fsyncs and renames
            fh.write(data)


def read_input(path, what):
    """The bytes of the file ``path``; ``what`` names its kind in the message
    (``"mesh"``, ``"motion"``...). InvalidInputError when it is missing, a folder or unreadable.
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise InvalidInputError(f"cannot read {what} {path}: {exc.strerror or exc}; check the "
                                "path") from None
