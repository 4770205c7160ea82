"""The one error root of coordinator_core: every decoding failure says where it happened."""

from __future__ import annotations


class DecodeError(ValueError):
    """Bytes that do not decode as the record they claim to be.

    Attributes:
        field_path: dotted path of the field being read, e.g. ``GroupMetadataValue.members[1].client_id``.
        position: byte offset, within the buffer being decoded, where the failure was detected.
    """

    def __init__(self, message: str, field_path: str = "", position: int = -1) -> None:
        self.message = message
        self.field_path = field_path
        self.position = position
        where = []
        if field_path:
            where.append(f"field {field_path}")
        if position >= 0:
            where.append(f"byte {position}")
        super().__init__(f"{message} ({', '.join(where)})" if where else message)

    def at(self, prefix: str) -> DecodeError:
        """The same error with `prefix` prepended to its field path (used when an error bubbles out of a
        nested structure, such as a member's embedded subscription)."""
        path = f"{prefix}.{self.field_path}" if self.field_path else prefix
        return DecodeError(self.message, path, self.position)
