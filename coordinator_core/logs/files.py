"""Reading log files as they are found on disk: plain or gzip, possibly cut short, known by content.

A log file is known by its content identity (cluster, source name and first line), not its path: a
broker's `server.log` renamed to `server.log.1` and later compressed to `server.log.1.gz` is the same file,
read once. A file is read in raw bytes up to where reading fails (a .gz cut short, a file that vanished),
keeping every byte before the failure. No Spark here: the logs stage lists files with these functions on
the driver and its scan tasks read them on the executors.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import zlib
from typing import Any, Final

from coordinator_core.logs.catalogue import unnamed_groups
from coordinator_core.logs.envelope import CONTAINER_PREFIXES

#: How much of a file gives its identity and tells whether a container runtime wrote it.
FIRST_LINE_LIMIT: Final = 65536

#: What reading a damaged or vanished file raises: OSError (gzip's BadGzipFile among them), EOFError (a .gz
#: cut short) and zlib.error (a corrupt deflate stream).
READ_ERRORS: Final = (OSError, EOFError, zlib.error)

#: Container-runtime line prefixes (CONTAINER_PREFIXES, docker's json-file records).
_CONTAINER_LINE: Final = re.compile(
    "|".join(f"(?:{unnamed_groups(p)})" for _, p in CONTAINER_PREFIXES) + r'|^\{"log":', re.MULTILINE
)


def open_binary(path: str) -> Any:
    """The file's (uncompressed) bytes: a `.gz` is read through gzip."""
    return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")


def read_available(handle: Any, size: int) -> tuple[bytes, BaseException | None]:
    """Up to `size` bytes of `handle`, and the error that stopped the read before (None at the end of the
    file or once `size` bytes are read).

    A .gz cut short (a full disk, a copy that stopped) raises at the cut, and `read(size)` then loses every
    byte it had decompressed for the call; `read1` hands over what each step decompressed, so every byte
    before the cut is kept. On a plain file `read1` of a large size is one system call, like `read`.
    """
    parts: list[bytes] = []
    got = 0
    try:
        while got < size:
            chunk = handle.read1(min(size - got, 8 << 20))
            if not chunk:
                break
            parts.append(chunk)
            got += len(chunk)
    except READ_ERRORS as error:
        return b"".join(parts), error
    return b"".join(parts), None


def error_text(error: BaseException) -> str:
    """A read error as log_file_reads' `read_error` says it."""
    return f"{type(error).__name__}: {error}"


def stopped_at(path: str, position: int, error: BaseException) -> str:
    """The read_error of a read that stopped at uncompressed byte `position` (the bytes before are read)."""
    where = "truncated or corrupt gzip" if path.endswith(".gz") else "read failed"
    return f"{where} at uncompressed byte {position}: {error_text(error)}"


def first_bytes(path: str) -> tuple[bytes, str | None]:
    """The file's first 64 KiB (fewer when it is shorter or cut short), and why the read stopped before, if
    it did (a .gz cut within them still has its first line read)."""
    try:
        with open_binary(path) as handle:
            head, error = read_available(handle, FIRST_LINE_LIMIT)
    except READ_ERRORS as error:  # could not even be opened
        return b"", error_text(error)
    return head, None if error is None else error_text(error)


def identity_of(cluster: str, source: str, head: bytes | None) -> str | None:
    """The content identity of a file whose first bytes are `head`; None without a complete first line."""
    if head is None:
        return None
    cut = head.find(b"\n")
    if cut < 0 and len(head) < FIRST_LINE_LIMIT:
        return None  # no complete first line yet
    first = head if cut < 0 else head[:cut]
    digest = hashlib.sha256(b"\0".join([cluster.encode(), source.encode(), first.rstrip(b"\r\n")]))
    return digest.hexdigest()[:32]


def file_identity(cluster: str, source: str, path: str) -> str | None:
    """Content identity of a log file, or None while it has no complete first line."""
    return identity_of(cluster, source, first_bytes(path)[0])


def path_identity(cluster: str, source: str, path: str) -> str:
    """The identity of a file with no first line to be known by: its path and inode (a new file at the same
    path, after a rotation, is another file), marked so that it never equals a content identity."""
    try:
        inode = os.stat(path).st_ino
    except OSError:
        inode = 0
    digest = hashlib.sha256(b"\0".join([b"path", cluster.encode(), source.encode(), os.fsencode(path),
                                        str(inode).encode()]))
    return "path:" + digest.hexdigest()[:27]


def why_not_read(head: bytes, error: str | None, rotated: bool) -> tuple[str, str]:
    """(status, reason) of a file without a complete first line.

    An active file may simply not have one yet (a broker that just started, a log4j rotation a moment
    ago): it is `waiting`, not in error, and read once it has. A rotated file will not grow, and a file that
    cannot be read will not get better by waiting: `unreadable`.
    """
    if error is not None and not head:
        return "unreadable", f"cannot be read: {error}"
    if error is not None:
        return "unreadable", f"no complete first line in the {len(head)} bytes read before the read failed: {error}"
    if rotated:
        return "unreadable", f"no complete first line ({len(head)} bytes) in a rotated file, which will not grow"
    return "waiting", f"no complete first line yet ({len(head)} bytes)"


def has_container_layout(head: bytes) -> bool:
    """Whether a file's first bytes show a container runtime's line prefixes (CRI, docker json, compose or
    kubectl prefixes): such files are read by the reference reader, which strips them."""
    return _CONTAINER_LINE.search(head.decode("utf-8", "replace")) is not None
