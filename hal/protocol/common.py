"""Message types both protocols share (HELLO, HEARTBEAT) and the message error."""

from __future__ import annotations

from dataclasses import dataclass

PROTOCOL_VERSION = 1

HELLO = 0x01
HEARTBEAT = 0x02


class MessageError(ValueError):
    """A frame with a good CRC whose content makes no sense (unknown type, bad payload)."""


@dataclass(frozen=True, slots=True)
class Hello:
    """Sent by the host on connect; the device answers with its own."""

    version: int
    device_id: str = ""

    def payload(self) -> bytes:
        return bytes((self.version,)) + self.device_id.encode("ascii")[:64]

    @classmethod
    def parse(cls, payload: bytes) -> "Hello":
        if not payload:
            raise MessageError("HELLO without a version")
        try:
            ident = payload[1:].decode("ascii")
        except UnicodeDecodeError:
            raise MessageError("HELLO device id is not ASCII") from None
        return cls(payload[0], ident)


def u16(payload: bytes, at: int) -> int:
    return int.from_bytes(payload[at: at + 2], "big")


def need(payload: bytes, n: int, what: str) -> None:
    if len(payload) != n:
        raise MessageError(f"{what} payload must be {n} bytes, got {len(payload)}")
