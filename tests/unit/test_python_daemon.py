"""The local worker daemon re-reads a zip archive's directory only when the archive changed on disk."""

from __future__ import annotations

import os
import zipfile
import zipimport
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
