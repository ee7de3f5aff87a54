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
names the file when the system cannot read it. It reads regular files only (a FIFO would
block the reader forever, ``/dev/zero`` would fill the memory) of at most
:data:`MAX_INPUT_BYTES`; :func:`input_file_problem` says why a path is refused without reading
it.

:func:`lock_folder` lets one run at a time write into an output folder.
"""

import contextlib
import os
import secrets
import stat

from ..errors import InvalidInputError

__all__ = ["atomic_write", "atomic_path", "check_writable_path", "read_input",
           "input_file_problem", "lock_folder", "MAX_INPUT_BYTES"]

#: the largest file :func:`read_input` reads (512 MiB): more than any model, mesh or motion
#: file a model repository holds
MAX_INPUT_BYTES = 2 ** 29


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


def input_file_problem(path, limit=MAX_INPUT_BYTES):
    """Why ``path`` cannot be read as an input file (a sentence such as "No such file or
    directory; check the path"), or None: it is missing, not a regular file (a folder, a
    FIFO, a device such as ``/dev/zero``) or larger than ``limit`` bytes. Only the file's
    status is looked at; nothing is opened."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return f"{exc.strerror or exc}; check the path"
    return _status_problem(st, limit)


def _status_problem(st, limit):
    if stat.S_ISDIR(st.st_mode):
        return "is a folder, not a file; choose a file inside it"
    if not stat.S_ISREG(st.st_mode):
        return ("not a regular file (a pipe, socket or device, which could block or never "
                "end); save the data to a file and give that file")
    if st.st_size > limit:
        return (f"{st.st_size} bytes, more than the {limit} bytes an input file may have; "
                "it is not a file this reader takes, or reduce it (decimate a mesh, resample "
                "a motion)")
    return None


def read_input(path, what, limit=MAX_INPUT_BYTES):
    """The bytes of the file ``path``; ``what`` names its kind in the message
    (``"mesh"``, ``"motion"``...). InvalidInputError, before anything is read, when it is
    missing, unreadable, not a regular file (:func:`input_file_problem`) or larger than
    ``limit`` bytes.
    """
    path = os.fspath(path)
    if (problem := input_file_problem(path, limit)) is not None:
        raise InvalidInputError(f"cannot read {what} {path}: {problem}")
    try:
        # O_NONBLOCK: a FIFO put in the file's place after the check cannot block the open
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        raise InvalidInputError(f"cannot read {what} {path}: {exc.strerror or exc}; check the "
                                "path") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if (problem := _status_problem(st, limit)) is not None:
            raise InvalidInputError(f"cannot read {what} {path}: {problem}")
        try:
            data = fh.read(st.st_size)   # a read allocates what it asks for: ask for the size
            grew = fh.read(1)
        except OSError as exc:
            raise InvalidInputError(f"cannot read {what} {path}: {exc.strerror or exc}; check "
                                    "the path") from None
    if grew:
        raise InvalidInputError(f"cannot read {what} {path}: it grew while it was read (another "
                                "program is writing it); read it when it is complete")
    return data


def lock_folder(folder, program):
    """Hold an exclusive lock on the folder ``folder`` for this process's lifetime (until the
    returned descriptor is closed), so that two runs of ``program`` cannot write into one
    folder at once. Returns the locked descriptor (None where flock does not exist).
    InvalidInputError when another process holds the lock.
    """
    try:
        import fcntl
    except ImportError:  # Windows
        return None
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise InvalidInputError(f"{folder}: another {program} run is writing into this "
                                "folder; wait for it to finish or pass another --out") from None
    return fd
