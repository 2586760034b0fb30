"""What every simulated device does: frame numbering, HELLO, heartbeat, fault injection."""

from __future__ import annotations

import random
import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from typing import Callable

from hal.protocol.common import HEARTBEAT, HELLO, PROTOCOL_VERSION, Hello
from hal.protocol.framing import Parser, Sequencer
from hal.sim.transport import Transport


class SimulatedDevice(ABC):
    """Base of the simulators. Subclasses send messages with :meth:`send` and say what a
    heartbeat carries (:meth:`heartbeat_payload`); they add their own script commands.

    Faults: :meth:`garbage` (random bytes on the wire), :meth:`drop` (next frames are
    numbered but not sent), :meth:`corrupt` (next frames get a flipped byte),
    :meth:`silence` (say nothing for a while), :meth:`hangup` (close the port),
    :meth:`replay` (a frame sent before goes out again, byte for byte), :meth:`hold` (the
    next frame goes out after the one following it: a reorder), :meth:`hello` (the device
    says HELLO unasked, as after its own restart).
    """

    device_id = "betbox-sim"

    def __init__(self, transport: Transport, *, heartbeat: float | None = 0.5,
                 seed: int = 0) -> None:
        self.transport = transport
        self.heartbeat = heartbeat
        self.rng = random.Random(seed)
        self.sequencer = Sequencer()
        self.host_hellos = 0
        self.host_hello = threading.Event()
        self._drop = 0
        self._corrupt = 0
        self._hold = 0
        self._held: list[bytes] = []
        self.sent: deque[tuple[int, bytes]] = deque(maxlen=64)   # (type, frame) as written
        self._silent_until = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # -- lifecycle

    def start(self) -> "SimulatedDevice":
        self._spawn(self._listen, "sim-listen")
        if self.heartbeat:
            self._spawn(self._beat, "sim-heartbeat")
        return self

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)
        self.transport.close()

    def wait_for_host(self, timeout: float = 10.0) -> bool:
        """Block until the unit has said HELLO (it opened the port)."""
        return self.host_hello.wait(timeout)

    # -- sending

    def send(self, type_: int, payload: bytes = b"") -> None:
        with self._lock:
            frame = self.sequencer.frame(type_, payload)
            if self._drop:
                self._drop -= 1
                return
            if time.monotonic() < self._silent_until:
                return
            if self._corrupt:
                self._corrupt -= 1
                data = bytearray(frame)
                at = self.rng.randrange(6, len(data))  # past the header: a CRC failure
                data[at] ^= 1 << self.rng.randrange(8)
                frame = bytes(data)
            if self._hold:
                self._hold -= 1
                self._held.append(frame)
                return
            self._write(type_, frame)
            held, self._held = self._held, []
            for late in held:
                self._write(late[4], late)

    def _write(self, type_: int, frame: bytes) -> None:
        self.sent.append((type_, frame))
        self.transport.write(frame)

    @abstractmethod
    def heartbeat_payload(self) -> bytes:
        """Must override: the payload of this device's periodic heartbeat frame."""

    # -- faults

    def garbage(self, n: int) -> None:
        with self._lock:
            self.transport.write(bytes(self.rng.randrange(256) for _ in range(n)))

    def drop(self, n: int = 1) -> None:
        with self._lock:
            self._drop += n

    def corrupt(self, n: int = 1) -> None:
        with self._lock:
            self._corrupt += n

    def replay(self, type_: int, n: int = 1) -> None:
        """Send again, byte for byte (same SEQ), the last ``n`` frames of ``type_`` sent."""
        with self._lock:
            frames = [f for t, f in self.sent if t == type_][-n:]
            if len(frames) < n:
                raise ValueError(f"only {len(frames)} frame(s) of type 0x{type_:02X} to replay")
            for frame in frames:
                self._write(type_, frame)

    def hold(self, n: int = 1) -> None:
        """The next ``n`` frames are held back and sent after the frame that follows them."""
        with self._lock:
            self._hold += n

    def hello(self) -> None:
        """Say HELLO unasked (a device that restarted; the host restarts its SEQ check)."""
        self.send(HELLO, Hello(PROTOCOL_VERSION, self.device_id).payload())

    def silence(self, seconds: float) -> None:
        with self._lock:
            self._silent_until = time.monotonic() + seconds

    def hangup(self) -> None:
        self.transport.close()

    # -- script commands common to all devices

    def script_commands(self) -> dict[str, Callable[..., None]]:
        return {
            "sleep": lambda s: time.sleep(float(s)),
            "garbage": lambda n: self.garbage(int(n)),
            "drop": lambda n="1": self.drop(int(n)),
            "corrupt": lambda n="1": self.corrupt(int(n)),
            "silence": lambda s: self.silence(float(s)),
            "wait_host": lambda s="10": self._require_host(float(s)),
            "hangup": self.hangup,
            "hold": lambda n="1": self.hold(int(n)),
            "hello": self.hello,
        }

    def _require_host(self, timeout: float) -> None:
        if not self.wait_for_host(timeout):
            raise TimeoutError(f"no HELLO from the unit within {timeout} s")

    # -- threads

    def _spawn(self, target: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _listen(self) -> None:
        parser = Parser()
        while not self._stop.is_set():
            data = self.transport.read(0.05)
            frames = parser.feed(data) if data else parser.idle()
            for frame in frames:
                if frame.type == HELLO:
                    self.host_hellos += 1
                    self.send(HELLO, Hello(PROTOCOL_VERSION, self.device_id).payload())
                    self.host_hello.set()

    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat):
            self.send(HEARTBEAT, self.heartbeat_payload())
