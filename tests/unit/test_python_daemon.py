"""The local worker daemon re-reads a zip archive's directory only when the archive changed on disk, and puts
a worker's connection in quick-acknowledgement mode before each of its tasks."""

from __future__ import annotations

import os
import socket
import sys
import zipfile
import zipimport
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.common import python_daemon


def _write_zip(path: Path, modules: dict[str, str]) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, source in modules.items():
            archive.writestr(f"{name}.py", source)


def test_an_unchanged_archive_is_not_read_again_and_a_changed_one_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "lib.zip"
    _write_zip(archive, {"first": "X = 1\n"})
    importer = zipimport.zipimporter(str(archive))
    reads: list[str] = []
    real_reread = python_daemon._reread_directory

    def counting_reread(zi: zipimport.zipimporter) -> None:
        reads.append(zi.archive)
        real_reread(zi)

    monkeypatch.setattr(python_daemon, "_reread_directory", counting_reread)

    python_daemon.invalidate_if_changed(importer)  # the first call reads (nothing recorded yet)
    python_daemon.invalidate_if_changed(importer)
    python_daemon.invalidate_if_changed(importer)
    assert len(reads) == 1
    assert importer.find_spec("second") is None

    # A task's addPyFile replaced the archive: a new module in it becomes importable.
    _write_zip(archive, {"first": "X = 1\n", "second": "Y = 2\n"})
    stat = archive.stat()
    os.utime(archive, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    python_daemon.invalidate_if_changed(importer)
    assert len(reads) == 2
    assert importer.find_spec("second") is not None

    # A vanished archive is read again (and found empty), as zipimport itself would.
    archive.unlink()
    python_daemon.invalidate_if_changed(importer)
    assert len(reads) == 3
    assert importer.find_spec("first") is None


@pytest.fixture
def connection() -> Iterator[socket.socket]:
    """The worker's end of a loopback TCP connection, as the daemon accepts it."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        accepted, _ = server.accept()
        with client, accepted:
            yield accepted


linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="TCP_QUICKACK is Linux's")


@linux_only
def test_a_workers_connection_acknowledges_at_once(connection: socket.socket) -> None:
    connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 0)
    python_daemon.acknowledge_at_once(connection)
    assert connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK) == 1
    unix, peer = socket.socketpair(socket.AF_UNIX)
    with unix, peer:
        python_daemon.acknowledge_at_once(unix)  # not TCP: left as it is, no error


@linux_only
def test_the_daemon_sets_it_before_every_task(connection: socket.socket, monkeypatch: pytest.MonkeyPatch) -> None:
    """main() wraps the function PySpark's daemon runs for each task on a worker's connection."""
    import pyspark.daemon

    monkeypatch.setattr(zipimport.zipimporter, "invalidate_caches", zipimport.zipimporter.invalidate_caches)
    seen: list[tuple[int, bool]] = []

    def task(sock: socket.socket, authenticated: bool) -> int:
        seen.append((sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK), authenticated))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 0)  # the kernel leaves the mode by itself
        return 0

    def manager() -> None:  # a reused worker: two tasks on one connection
        pyspark.daemon.worker(connection, False)
        pyspark.daemon.worker(connection, True)

    monkeypatch.setattr(pyspark.daemon, "worker", task)
    monkeypatch.setattr(pyspark.daemon, "manager", manager)
    python_daemon.main()
    assert seen == [(1, False), (1, True)]
