"""Message types both protocols share (HELLO, HEARTBEAT) and the message error."""

from __future__ import annotations

from dataclasses import dataclass

PROTOCOL_VERSION = 1

HELLO = 0x01
HEARTBEAT = 0x02
MAX_DEVICE_ID = 64


class MessageError(ValueError):
    """A frame with a good CRC whose content makes no sense (unknown type, bad payload)."""


@dataclass(frozen=True, slots=True)
class Hello:
    """Sent by the host on connect; the device answers with its own."""

    version: int
    device_id: str = ""

    def payload(self) -> bytes:
        return bytes((self.version,)) + self.device_id.encode("ascii")[:MAX_DEVICE_ID]

    @classmethod
    def parse(cls, payload: bytes) -> "Hello":
        """The checks the protocol documents promise: a version of at least 1 (a later
        version is heard: it only adds what a version-1 unit ignores) and a device id of
        at most 64 printable ASCII bytes (it goes to logs and the service menu)."""
        if not payload:
            raise MessageError("HELLO without a version")
        if payload[0] < 1:
            raise MessageError("HELLO version 0: protocol versions start at 1")
        ident = payload[1:]
        if len(ident) > MAX_DEVICE_ID:
            raise MessageError(f"HELLO device id of {len(ident)} bytes: at most {MAX_DEVICE_ID}")
        if any(not 0x20 <= b <= 0x7E for b in ident):
            raise MessageError(f"HELLO device id {bytes(ident)[:16]!r}... is not printable ASCII")
        return cls(payload[0], ident.decode("ascii"))


def u16(payload: bytes, at: int) -> int:
    return int.from_bytes(payload[at: at + 2], "big")


def need(payload: bytes, n: int, what: str) -> None:
    if len(payload) != n:
        raise MessageError(f"{what} payload must be {n} bytes, got {len(payload)}")
