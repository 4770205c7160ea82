"""Record layouts declared as data, and the one compiler that turns a declaration into codecs.

A declaration mirrors Kafka's message JSON (``group-coordinator/src/main/resources/common/message``):
each :class:`Field` has a type, the ``versions`` it exists in, the ``nullable_versions``, an optional
``tag`` (tagged fields of flexible versions) and a default. A :class:`Struct` adds the
``flexible_versions`` (compact strings/arrays plus a tagged-field section after every struct) and the
frozen dataclass that holds a decoded value. Adding a schema version is adding or widening a line.

:func:`decoder` and :func:`encoder` compile a (struct, version) pair once into straight-line Python
(runs of fixed-width fields become a single ``struct.unpack_from``), cache it, and return it. Decoding
and encoding therefore come from the same declaration and cannot drift apart.
"""

from __future__ import annotations

import dataclasses
import functools
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from coordinator_core import wire
from coordinator_core.errors import DecodeError

# ----------------------------------------------------------------------------------------------
# Types


@dataclass(frozen=True)
class Primitive:
    """A scalar wire type. ``fmt`` is its struct format when it has a fixed width."""

    name: str
    fmt: str | None = None

    @property
    def size(self) -> int:
        return struct.calcsize(">" + self.fmt) if self.fmt else 0


INT8 = Primitive("int8", "b")
INT16 = Primitive("int16", "h")
UINT16 = Primitive("uint16", "H")
INT32 = Primitive("int32", "i")
INT64 = Primitive("int64", "q")
UUID = Primitive("uuid")
STRING = Primitive("string")
BYTES = Primitive("bytes")


@dataclass(frozen=True)
class ArrayOf:
    element: FieldType


@dataclass(frozen=True)
class Versions:
    """A version range as Kafka writes it: "0+", "3+", "1", "0-3" or "none"."""

    low: int
    high: int | None  # None = open-ended

    @classmethod
    @functools.cache
    def parse(cls, text: str) -> Versions:
        text = text.strip()
        if text == "none":
            return cls(1, 0)
        if text.endswith("+"):
            return cls(int(text[:-1]), None)
        if "-" in text:
            lo, hi = text.split("-")
            return cls(int(lo), int(hi))
        return cls(int(text), int(text))

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.low <= version and (self.high is None or version <= self.high)


@dataclass(frozen=True)
class Field:
    """One field of a record, as in Kafka's message JSON (names in snake_case).

    ``default`` is Kafka's default: what a tagged field the writer left out reads as. A field the version
    does not have (outside ``versions``) decodes to None whatever its default.
    """

    name: str
    type: FieldType
    versions: str = "0+"
    nullable_versions: str = "none"
    tag: int | None = None
    default: Any = None

    def present_in(self, version: int) -> bool:
        return version in Versions.parse(self.versions)

    def nullable_in(self, version: int) -> bool:
        return version in Versions.parse(self.nullable_versions)

    def default_value(self) -> Any:
        if self.default is not None or self.nullable_versions != "none":
            return self.default
        t = self.type
        if isinstance(t, ArrayOf):
            return ()
        if t in (STRING,):
            return ""
        if t is BYTES:
            return b""
        if t is UUID:
            return None
        if isinstance(t, Struct):
            return None
        return 0


@dataclass(frozen=True)
class Struct:
    """A message or nested struct: its Kafka name, fields in wire order, and the dataclass it decodes to."""

    name: str
    cls: type
    fields: tuple[Field, ...]
    flexible_versions: str = "none"
    valid_versions: str = "0"

    def __post_init__(self) -> None:
        declared = [f.name for f in self.fields]
        attrs = [f.name for f in dataclasses.fields(self.cls)]
        if declared != attrs:
            raise TypeError(f"{self.name}: declared fields {declared} differ from {self.cls.__name__} {attrs}")

    def flexible_in(self, version: int) -> bool:
        return version in Versions.parse(self.flexible_versions)

    @property
    def highest_version(self) -> int:
        v = Versions.parse(self.valid_versions)
        return v.high if v.high is not None else v.low


FieldType = Primitive | ArrayOf | Struct


# ----------------------------------------------------------------------------------------------
# The compiler

Decoder = Callable[[bytes, int, int, str], tuple[Any, int]]
Encoder = Callable[[Any, list[bytes], str], None]

# Keyed by the declaration object itself: two nested structs may share a Kafka name (e.g. TopicPartition).
_decoders: dict[tuple[int, int, bool], Decoder] = {}
_encoders: dict[tuple[int, int, bool], Encoder] = {}


def decoder(s: Struct, version: int, flexible: bool | None = None) -> Decoder:
    """The compiled decoder of `s` at `version`: ``fn(buf, pos, end, path) -> (value, next_pos)``."""
    flex = s.flexible_in(version) if flexible is None else flexible
    key = (id(s), version, flex)
    fn = _decoders.get(key)
    if fn is None:
        fn = _decoders[key] = _DecoderBuilder(s, version, flex).build()
    return fn


def encoder(s: Struct, version: int, flexible: bool | None = None) -> Encoder:
    """The compiled encoder of `s` at `version`: ``fn(value, out_parts, path)`` appends bytes to out_parts."""
    flex = s.flexible_in(version) if flexible is None else flexible
    key = (id(s), version, flex)
    fn = _encoders.get(key)
    if fn is None:
        fn = _encoders[key] = _EncoderBuilder(s, version, flex).build()
    return fn


def decode_struct(s: Struct, version: int, buf: bytes, pos: int = 0, end: int | None = None) -> tuple[Any, int]:
    """Decode one `s` at `version` from `buf[pos:end]`; returns (value, position after it)."""
    return decoder(s, version)(buf, pos, len(buf) if end is None else end, s.name)


def encode_struct(s: Struct, version: int, value: Any) -> bytes:
    parts: list[bytes] = []
    encoder(s, version)(value, parts, s.name)
    return b"".join(parts)


def _ident(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name)


class _CodeBuilder:
    """Source-emitting helpers shared by the decoder and encoder compilers, and the split of a struct's
    fields at one version into the regular sequence and the tagged-field section."""

    s: Struct
    version: int
    flexible: bool
    lines: list[str]
    counter: int

    def tmp(self, prefix: str) -> str:
        self.counter += 1
        return f"_{prefix}{self.counter}"

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def split_fields(self) -> tuple[list[Field], list[Field]]:
        v, flex = self.version, self.flexible
        present = [f for f in self.s.fields if f.present_in(v) and not (flex and f.tag is not None)]
        tagged = [f for f in self.s.fields if f.present_in(v) and flex and f.tag is not None]
        return present, tagged


class _DecoderBuilder(_CodeBuilder):
    """Emits the Python source of one struct decoder and compiles it."""

    def __init__(self, s: Struct, version: int, flexible: bool) -> None:
        self.s = s
        self.version = version
        self.flexible = flexible
        self.ns: dict[str, Any] = {
            "DecodeError": DecodeError,
            "_underrun": wire.underrun,
            "_run_underrun": wire.run_underrun,
            "_ruv": wire.read_uvarint,
            "_rs": wire.read_string,
            "_rb": wire.read_bytes,
            "_ral": wire.read_array_length,
            "_rcs": wire.read_compact_string,
            "_rcb": wire.read_compact_bytes,
            "_rcal": wire.read_compact_array_length,
            "_ruuid": wire.read_uuid,
            "_cls": s.cls,
        }
        self.lines: list[str] = []
        self.counter = 0

    def build(self) -> Decoder:
        s, v = self.s, self.version
        fname = f"decode_{_ident(s.name)}_v{v}"
        self.emit(0, f"def {fname}(buf, pos, end, path):")
        present, tagged = self.split_fields()
        # A field this version does not have is None (null), not Kafka's in-memory default: a -1 or 0 there
        # would read as a value the writer never wrote (Kafka's JsonConverter leaves such fields out too).
        # A tagged field of this version that the writer left out takes its declared default, as in Kafka.
        for f in s.fields:
            if not f.present_in(v):
                self.emit(1, f"v_{f.name} = None")
            elif f not in present:
                self.ns[f"_d_{f.name}"] = f.default_value()
                self.emit(1, f"v_{f.name} = _d_{f.name}")
        i = 0
        while i < len(present):
            run = []
            while i < len(present):
                t = present[i].type
                if not (isinstance(t, Primitive) and t.fmt):
                    break
                run.append(present[i])
                i += 1
            if run:
                self.fixed_run(run)
                continue
            self.field(1, present[i], f"v_{present[i].name}")
            i += 1
        if self.flexible:
            self.tagged_section(tagged)
        args = ", ".join(f"v_{f.name}" for f in s.fields)
        self.emit(1, f"return _cls({args}), pos")
        src = "\n".join(self.lines)
        exec(compile(src, f"<decoder {s.name} v{v}>", "exec"), self.ns)
        fn: Decoder = self.ns[fname]
        return fn

    def fixed_run(self, run: list[Field]) -> None:
        fmt = ">" + "".join(f.type.fmt or "" for f in run if isinstance(f.type, Primitive))
        st = struct.Struct(fmt)
        name = self.tmp("st")
        self.ns[name] = st
        targets = ", ".join(f"v_{f.name}" for f in run) + ("," if len(run) == 1 else "")
        # One bounds check for the whole run; only when it fails is the field cut short worked out.
        widths = self.tmp("widths")
        self.ns[widths] = tuple((f.name, f.type.size) for f in run if isinstance(f.type, Primitive))
        self.emit(1, f"if pos + {st.size} > end:")
        self.emit(2, f"raise _run_underrun(path, pos, end, {widths})")
        self.emit(1, f"{targets} = {name}.unpack_from(buf, pos)")
        self.emit(1, f"pos += {st.size}")

    def field(self, ind: int, f: Field, target: str, path_expr: str | None = None) -> None:
        path = path_expr or f"path + '.{f.name}'"
        self.value(ind, f.type, target, path, f.nullable_in(self.version), tagged=f.tag is not None and self.flexible)

    def value(self, ind: int, t: FieldType, target: str, path: str, nullable: bool, tagged: bool = False) -> None:  # noqa: C901, PLR0912, PLR0915 - code generator: one branch per field type of the layout
        flex = self.flexible
        if isinstance(t, Primitive):
            if t.fmt:
                st = struct.Struct(">" + t.fmt)
                name = self.tmp("st")
                self.ns[name] = st
                self.emit(ind, f"if pos + {st.size} > end:")
                self.emit(ind + 1, f"raise _underrun({path}, pos, {st.size}, end)")
                self.emit(ind, f"{target}, = {name}.unpack_from(buf, pos)")
                self.emit(ind, f"pos += {st.size}")
            elif t is UUID:
                self.emit(ind, f"{target}, pos = _ruuid(buf, pos, end, {path})")
            elif t is STRING and not flex:
                # Inlined hot path of wire.read_string; anything unusual (null, bad length, too short)
                # is handed to the helper from the same position, which returns or raises precisely.
                n = self.tmp("n")
                self.emit(ind, f"{n} = ((buf[pos] << 8) | buf[pos + 1]) if pos + 2 <= end else -2")
                self.emit(ind, f"if 0 <= {n} < 0x8000 and pos + 2 + {n} <= end:")
                self.emit(ind + 1, f"{target} = buf[pos + 2:pos + 2 + {n}].decode('utf-8', 'replace')")
                self.emit(ind + 1, f"pos += 2 + {n}")
                self.emit(ind, "else:")
                self.emit(ind + 1, f"{target}, pos = _rs(buf, pos, end, {path}, {nullable})")
            elif t is STRING:
                self.emit(ind, f"{target}, pos = _rcs(buf, pos, end, {path}, {nullable})")
            elif t is BYTES:
                fn = "_rcb" if flex else "_rb"
                self.emit(ind, f"{target}, pos = {fn}(buf, pos, end, {path}, {nullable})")
            else:  # pragma: no cover - declaration error
                raise TypeError(f"unsupported primitive {t}")
        elif isinstance(t, ArrayOf):
            n = self.tmp("n")
            fn = "_rcal" if flex else "_ral"
            self.emit(ind, f"{n}, pos = {fn}(buf, pos, end, {path}, {nullable})")
            el = t.element
            if nullable:
                self.emit(ind, f"if {n} < 0:")
                self.emit(ind + 1, f"{target} = None")
                self.emit(ind, "else:")
                ind += 1
            if isinstance(el, Primitive) and el.fmt:
                size = struct.calcsize(">" + el.fmt)
                self.emit(ind, f"if pos + {n} * {size} > end:")
                self.emit(ind + 1, f"raise _underrun({path}, pos, {n} * {size}, end)")
                self.emit(ind, f"{target} = struct.unpack_from('>%d{el.fmt}' % {n}, buf, pos)")
                self.ns["struct"] = struct
                self.emit(ind, f"pos += {n} * {size}")
            else:
                items = self.tmp("items")
                idx = self.tmp("i")
                el_t = self.tmp("el")
                self.emit(ind, f"{items} = []")
                self.emit(ind, f"for {idx} in range({n}):")
                self.value(ind + 1, el, el_t, f"{path} + '[%d]' % {idx}", False)
                self.emit(ind + 1, f"{items}.append({el_t})")
                self.emit(ind, f"{target} = tuple({items})")
        elif isinstance(t, Struct):
            dec = self.tmp("dec")
            self.ns[dec] = decoder(t, self.version, flex)
            if nullable and tagged:
                # In a tagged field the presence marker is an unsigned varint: 0 = null (Kafka's
                # generated readers test `readUnsignedVarint() > 0`).
                present = self.tmp("present")
                self.emit(ind, f"{present}, pos = _ruv(buf, pos, end, {path})")
                self.emit(ind, f"if {present} == 0:")
                self.emit(ind + 1, f"{target} = None")
                self.emit(ind, "else:")
                self.emit(ind + 1, f"{target}, pos = {dec}(buf, pos, end, {path})")
            elif nullable:
                self.emit(ind, "if pos + 1 > end:")
                self.emit(ind + 1, f"raise _underrun({path}, pos, 1, end)")
                self.emit(ind, "if buf[pos] >= 128:")  # int8 presence marker < 0: null
                self.emit(ind + 1, f"{target} = None")
                self.emit(ind + 1, "pos += 1")
                self.emit(ind, "else:")
                self.emit(ind + 1, f"{target}, pos = {dec}(buf, pos + 1, end, {path})")
            else:
                self.emit(ind, f"{target}, pos = {dec}(buf, pos, end, {path})")
        else:  # pragma: no cover
            raise TypeError(f"unsupported type {t}")

    def tagged_section(self, tagged: list[Field]) -> None:
        n, i, tag, size, stop = (self.tmp(x) for x in ("ntag", "i", "tag", "size", "stop"))
        self.emit(1, f"{n}, pos = _ruv(buf, pos, end, path + '._tagged_fields')")
        self.emit(1, f"for {i} in range({n}):")
        self.emit(2, f"{tag}, pos = _ruv(buf, pos, end, path + '._tagged_fields')")
        self.emit(2, f"{size}, pos = _ruv(buf, pos, end, path + '._tagged_fields')")
        self.emit(2, f"{stop} = pos + {size}")
        self.emit(2, f"if {stop} > end:")
        self.emit(3, f"raise DecodeError('tagged field %d of %d byte(s) runs past the end' % ({tag}, {size}), "
                     "path + '._tagged_fields', pos)")
        first = True
        for f in tagged:
            kw = "if" if first else "elif"
            first = False
            self.emit(2, f"{kw} {tag} == {f.tag}:")
            # A tagged field is decoded inside its own size-delimited window, which must be used exactly.
            self.emit(3, f"_outer_end = end; end = {stop}")
            self.field(3, f, f"v_{f.name}")
            self.emit(3, "end = _outer_end")
            self.emit(3, f"if pos != {stop}:")
            self.emit(4, f"raise DecodeError('tagged field {f.name} declared %d byte(s), used %d' "
                         f"% ({size}, {size} - ({stop} - pos)), path + '.{f.name}', pos)")
        # Unknown tags are skipped, as Kafka's generated readers do (KIP-482 forward compatibility).
        self.emit(2, f"pos = {stop}")


class _EncoderBuilder(_CodeBuilder):
    """Emits the Python source of one struct encoder and compiles it."""

    def __init__(self, s: Struct, version: int, flexible: bool) -> None:
        self.s = s
        self.version = version
        self.flexible = flexible
        self.ns: dict[str, Any] = {
            "wire": wire,
            "struct": struct,
            "_wuv": wire.write_uvarint,
        }
        self.lines: list[str] = []
        self.counter = 0

    def build(self) -> Encoder:
        s, v = self.s, self.version
        fname = f"encode_{_ident(s.name)}_v{v}"
        self.emit(0, f"def {fname}(obj, out, path):")
        present, tagged = self.split_fields()
        for f in present:
            self.value(1, f.type, f"obj.{f.name}", f"path + '.{f.name}'", f.nullable_in(v))
        if self.flexible:
            self.emit(1, "_tags = []")
            for f in sorted(tagged, key=lambda f: f.tag or 0):
                dflt = self.tmp("dflt")
                self.ns[dflt] = f.default_value()
                # Kafka writes a tagged field only when it differs from its default.
                self.emit(1, f"if obj.{f.name} != {dflt}:")
                self.emit(2, "_sub = []")
                self.emit(2, "_save = out; out = _sub")
                self.value(2, f.type, f"obj.{f.name}", f"path + '.{f.name}'", f.nullable_in(v), tagged=True)
                self.emit(2, "out = _save")
                self.emit(2, "_data = b''.join(_sub)")
                self.emit(2, f"_tags.append(_wuv({f.tag}) + _wuv(len(_data)) + _data)")
            self.emit(1, "out.append(_wuv(len(_tags)))")
            self.emit(1, "out.extend(_tags)")
        self.emit(1, "return None")
        src = "\n".join(self.lines)
        exec(compile(src, f"<encoder {s.name} v{v}>", "exec"), self.ns)
        fn: Encoder = self.ns[fname]
        return fn

    def value(self, ind: int, t: FieldType, expr: str, path: str, nullable: bool, tagged: bool = False) -> None:  # noqa: PLR0912 - code generator: one branch per field type of the layout
        flex = self.flexible
        if isinstance(t, Primitive):
            if t.fmt:
                st = self.tmp("st")
                self.ns[st] = struct.Struct(">" + t.fmt)
                self.emit(ind, f"out.append({st}.pack({expr}))")
            elif t is UUID:
                self.emit(ind, f"out.append(wire.write_uuid({expr}))")
            elif t is STRING:
                fn = "write_compact_string" if flex else "write_string"
                self.emit(ind, f"out.append(wire.{fn}({expr}, {nullable}, {path}))")
            elif t is BYTES:
                fn = "write_compact_bytes" if flex else "write_bytes"
                self.emit(ind, f"out.append(wire.{fn}({expr}, {nullable}, {path}))")
            else:  # pragma: no cover
                raise TypeError(f"unsupported primitive {t}")
        elif isinstance(t, ArrayOf):
            items = self.tmp("items")
            self.emit(ind, f"{items} = {expr}")
            if nullable:
                self.emit(ind, f"if {items} is None:")
                null_marker = "b'\\x00'" if flex else "struct.pack('>i', -1)"
                self.emit(ind + 1, f"out.append({null_marker})")
                self.emit(ind, "else:")
                ind += 1
            if flex:
                self.emit(ind, f"out.append(_wuv(len({items}) + 1))")
            else:
                self.emit(ind, f"out.append(struct.pack('>i', len({items})))")
            el = t.element
            if isinstance(el, Primitive) and el.fmt:
                self.emit(ind, f"out.append(struct.pack('>%d{el.fmt}' % len({items}), *{items}))")
            else:
                it = self.tmp("it")
                self.emit(ind, f"for {it} in {items}:")
                self.value(ind + 1, el, it, path, False)
        elif isinstance(t, Struct):
            enc = self.tmp("enc")
            self.ns[enc] = encoder(t, self.version, flex)
            if nullable:
                self.emit(ind, f"if {expr} is None:")
                # null marker: uvarint 0 inside a tagged field, int8 -1 elsewhere
                self.emit(ind + 1, "out.append(b'\\x00')" if tagged else "out.append(b'\\xff')")
                self.emit(ind, "else:")
                self.emit(ind + 1, "out.append(b'\\x01')")
                self.emit(ind + 1, f"{enc}({expr}, out, {path})")
            else:
                self.emit(ind, f"{enc}({expr}, out, {path})")
        else:  # pragma: no cover
            raise TypeError(f"unsupported type {t}")
