"""The class archive's names: an archive is for one Java and one class path (paths, sizes, times of its jars);
a class list for the jars' names and sizes only, so another checkout of the same versions reuses it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jobs.common import class_archive


def _jar(path: Path, size: int) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    return str(path)


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A pyspark install with two jars under `tmp_path/a`, and its archive directory."""
    home = tmp_path / "a" / "pyspark"
    _jar(home / "jars" / "spark-core.jar", 10)
    _jar(home / "jars" / "scala-library.jar", 20)
    monkeypatch.setattr(class_archive, "spark_home", lambda: home)
    monkeypatch.setattr(class_archive, "ARCHIVE_DIR", tmp_path / "a" / "cds")
    monkeypatch.delenv("CGH_NO_CLASS_ARCHIVE", raising=False)
    return tmp_path / "a"


def test_an_archive_is_named_by_every_jar_on_the_class_path(checkout: Path) -> None:
    delta = _jar(checkout / "jars" / "delta.jar", 5)
    key = class_archive.archive_key([delta])
    assert key is not None and key == class_archive.archive_key([delta])
    # one more jar on the class path, a jar rewritten with the same size, a jar of another size
    assert class_archive.archive_key([delta, _jar(checkout / "jars" / "kafka.jar", 5)]) != key
    spark_core = checkout / "pyspark" / "jars" / "spark-core.jar"
    stat = spark_core.stat()
    os.utime(spark_core, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert class_archive.archive_key([delta]) != key
    touched = class_archive.archive_key([delta])
    _jar(checkout / "pyspark" / "jars" / "scala-library.jar", 21)
    assert class_archive.archive_key([delta]) not in (key, touched)


def test_a_class_list_is_shared_by_checkouts_with_the_same_jars(checkout: Path, monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    delta = _jar(checkout / "jars" / "delta.jar", 5)
    key = class_archive.class_list_key([delta])
    archive = class_archive.archive_key([delta])
    other = checkout.parent / "b"
    home = other / "pyspark"
    _jar(home / "jars" / "spark-core.jar", 10)
    _jar(home / "jars" / "scala-library.jar", 20)
    monkeypatch.setattr(class_archive, "spark_home", lambda: home)
    other_delta = _jar(other / "jars" / "delta.jar", 5)
    assert class_archive.class_list_key([other_delta]) == key
    assert class_archive.archive_key([other_delta]) != archive
    _jar(home / "jars" / "scala-library.jar", 22)
    assert class_archive.class_list_key([other_delta]) != key


def test_the_jvm_is_given_the_archive_only_when_it_is_there(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    delta = _jar(checkout / "jars" / "delta.jar", 5)
    assert class_archive.java_options([delta]) == []
    archive = class_archive.archive_path([delta])
    assert archive is not None and archive.parent == checkout / "cds"
    archive.parent.mkdir()
    archive.write_bytes(b"")
    assert class_archive.java_options([delta]) == [f"-XX:SharedArchiveFile={archive}"]
    monkeypatch.setenv("CGH_NO_CLASS_ARCHIVE", "1")
    assert class_archive.java_options([delta]) == []
    monkeypatch.delenv("CGH_NO_CLASS_ARCHIVE")
    monkeypatch.setattr(class_archive, "java_executable", lambda: None)
    assert class_archive.java_options([delta]) == []
