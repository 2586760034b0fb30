"""The runtime's :class:`~firmware.runtime.bus.Bus` over MQTT (paho-mqtt 2.x), with
presence and, for units that report to the jackpot controller, a durable outbox.

- Table traffic (:class:`~firmware.runtime.bus.Message`) goes out at QoS 1 as the message's
  own JSON; the units' journals already make it recoverable (catch-up, resend on restart).
- Incoming: a message larger than ``max_payload`` (``[link] max_payload``, 64 KiB by
  default) is dropped before it is decoded; one that is not a message, or whose own topic
  is not the MQTT topic it came on, is dropped too. Each is logged and counted
  (``dropped``, ``oversized``); the unit never sees it. Decoding is bounded
  (:mod:`firmware.wirejson`), and no callback or receiver lets anything escape: a message
  that makes one fail is counted, logged rate-limited and acknowledged, never redelivered.
- Presence: a retained status per unit, ``offline`` as the last will, a birth message with
  firmware version, configuration hash and boot id (``betbox/v1/unit/<unit>/status``).
- Reports (:meth:`MqttBus.report`) are written to the outbox first and published at QoS 1
  by one sender thread in sequence order; the broker's PUBACK (``on_publish``) marks them
  acknowledged; after every (re)connect all reports the controller has not confirmed are
  sent again.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from typing import Any, Callable

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from firmware import __version__, wirejson
from firmware.runtime.bus import Message, Sink, topic_matches

from . import topics
from .chunked import ChunkedClient
from .config import LinkConfig
from .outbox import Outbox

log = logging.getLogger("betbox.link")

RawSink = Callable[[str, bytes], None]
# ``sink(topic, payload, ack)``: the receiver calls ``ack()`` once the message is stored
# (``manual_ack`` links only): the broker gets its PUBACK then, not when the sink returns
DeferredSink = Callable[[str, bytes, Callable[[], None]], None]
LinkListener = Callable[[bool], None]
MAX_INFLIGHT = 1000          # reports handed to paho and not yet acknowledged
#: confirmation marks read and not yet written by the sender (each is the controller's
#: "through seq n"; the newest are kept: a newer mark covers an older one)
MAX_CONFIRMATIONS = 64
#: table messages' mids kept waiting for their PUBACK (paho numbers up to 65535)
MAX_TABLE_MIDS = 4096
# The controller's confirmation mark has not moved for this long while reports the broker
# took wait for it, the controller is online and the floor reachable: they were lost on
# the way (a table broker's bounded bridge queue drops, docs/floor.md), so send them again
STALLED_RESEND = 60.0
# The controller's confirmed mark went back below reports this unit no longer keeps: this
# long for its own mark to come (after a broker's restart the broker's older retained mark
# comes first) before the reports are alarmed as lost to it
LOST_GRACE = 60.0


class LinkError(RuntimeError):
    pass


_callback_failed = wirejson.RateLimitedLog(log, level=logging.ERROR)


def _guarded(callback: Callable[..., None]) -> Callable[..., None]:
    """A paho callback that never raises: an exception would end paho's network thread
    (the unit alive but deaf, its will sent after keepalive). Logged, rate-limited."""
    def run(self: "MqttBus", *args: Any) -> None:
        try:
            callback(self, *args)
        except Exception as exc:                        # noqa: BLE001 - see above
            self.callback_errors += 1
            _callback_failed("%s: %s failed: %s: %.200s", self.unit_id, callback.__name__,
                             type(exc).__name__, exc)
    run.__name__ = callback.__name__
    return run


def _published(info: mqtt.MQTTMessageInfo) -> bool | None:
    """Whether the broker acknowledged a QoS 1 publish: True, False (not yet), or None
    when paho will never tell — it raises for a publish made as the link went down."""
    try:
        return info.is_published()
    except (RuntimeError, ValueError):
        return None


def _no_delay(client: mqtt.Client) -> None:
    """TCP_NODELAY: paho leaves Nagle's algorithm on, so a small publish that follows
    another before its ACK can wait for the peer's delayed ACK (~40 ms on Linux)."""
    import socket

    sock = client.socket()
    try:
        if isinstance(sock, socket.socket) and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except (OSError, AttributeError):
        pass


class MqttBus:
    """One MQTT client per unit. Thread-safe; sinks are called on paho's network thread, so
    they should only queue (a unit's ``post``)."""

    def __init__(self, config: LinkConfig, unit_id: str, *, role: str = "seat",
                 outbox: Outbox | None = None, config_digest: str = "", link_id: str = "main",
                 client_id: str | None = None, clean_session: bool = True,
                 status_topic: str | None = None, resend_acked: bool = True,
                 max_payload: int | None = None, manual_ack: bool = False, chunked_reads: bool = True) -> None:
        self.config = config
        # incoming messages larger than this are dropped before they are decoded
        self.max_payload = config.max_payload if max_payload is None else max_payload
        self.unit_id = unit_id
        self.role = role
        self.outbox = outbox
        self.link_id = link_id
        self.boot_id = str(uuid.uuid4())
        self.config_digest = config_digest
        self.status_topic = status_topic or topics.status_topic(topics.check_unit_id(unit_id))
        self.resend_acked = resend_acked
        self._subs: list[tuple[str, str, Sink]] = []
        self._raw: list[tuple[str, RawSink]] = []
        self._deferred: list[tuple[str, DeferredSink]] = []
        self.manual_ack = manual_ack
        self._listeners: list[LinkListener] = []
        self._behind_listeners: list[Callable[[dict[str, int]], None]] = []
        self._lost_listeners: list[Callable[[dict[str, int]], None]] = []
        self._lock = threading.RLock()
        self._connected = threading.Event()
        # set when the broker has acknowledged every subscription of this connection: before
        # that, a message published on another connection may find no subscriber (lost)
        self._subscribed = threading.Event()
        self._subacks: set[int] = set()
        self._wake = threading.Event()
        if outbox is not None:              # reports committed (with a step, or on their own)
            outbox.add_listener(self._committed)
        self._handed: list[tuple[mqtt.MQTTMessageInfo, int]] = []   # sent by _committed, for the sender
        self._closing = False
        self._gen = 0
        self._conn = 0                           # connections so far: a PUBACK is for this one
        self._sent_through = 0
        self.connects = 0
        self.published = 0
        self.dropped = 0                         # incoming dropped: too large, undecodable, misaddressed
        self.oversized = 0                       # of which too large (over max_payload)
        self.callback_errors = 0                 # connect/disconnect/publish callbacks that raised
        self.sink_errors = 0                     # of which a receiver raised on
        self.bad_marks = 0                       # confirmation marks refused or cut to what was sent
        self._handed_through = 0                 # highest report seq handed to paho (this process)
        self.resend_stalled = STALLED_RESEND     # seconds; see STALLED_RESEND
        self.stalled_resends = 0
        self.controller_went_back = 0            # its confirmed mark went below this unit's
        self.lost_grace = LOST_GRACE             # seconds; see LOST_GRACE
        self._lost_due: float | None = None      # when reports a controller lost are alarmed
        self._controller_online = False          # its last status on this link said online
        # the table broker's bridge to the floor (mosquitto's notification); True until it
        # says otherwise: a unit on the controller's own broker never hears of a bridge
        self._floor_up = True
        self._bridge_topic = (topics.bridge_state_topic(unit_id.split("/")[0])
                              if outbox is not None and "/" in unit_id else None)
        self._progress_at = time.monotonic()     # the mark last moved, or everything was sent again
        # with credentials the client id is the username: what the documented broker
        # enforces (use_username_as_clientid), so the logs on both sides name one client
        # chunked_reads: one recv a chunk, not a few a packet (chunked.py): each recv gives the
        # interpreter lock to the unit's thread and waits for it back, on a card's way in (the
        # dealer's message) and out (the report's PUBACK), issue #17 session 7
        paho_client = ChunkedClient if chunked_reads else mqtt.Client
        self._client = paho_client(CallbackAPIVersion.VERSION2, client_id=config.username or client_id or
                                   f"{unit_id.replace('/', ':')}:{self.boot_id[:8]}",
                                   clean_session=clean_session, protocol=mqtt.MQTTv311,
                                   manual_ack=manual_ack)
        c = self._client
        c.max_inflight_messages_set(64)
        c.max_queued_messages_set(0)
        c.reconnect_delay_set(min_delay=1, max_delay=config.reconnect_max)
        if config.username:
            c.username_pw_set(config.username, config.password)
        if config.tls:
            c.tls_set(ca_certs=str(config.tls.ca),
                      certfile=str(config.tls.cert) if config.tls.cert else None,
                      keyfile=str(config.tls.key) if config.tls.key else None)
        c.will_set(self.status_topic, self._status("offline"), qos=1, retain=True)
        c.on_connect = self._on_connect
        c.on_disconnect = self._on_disconnect
        c.on_publish = self._on_publish
        c.on_subscribe = self._on_subscribe
        c.on_message = self._on_message
        self._sender: threading.Thread | None = None
        self._unacked: list[mqtt.MQTTMessageInfo] = []     # table messages awaiting PUBACK
        # their mids, for _on_publish (no lock: paho calls it holding its own; set operations
        # are atomic): a PUBACK read before its mid went in only wakes the sender, as before
        self._table_mids: set[int] = set()
        self._confirmations: list[int] = []     # the controller's marks, for the sender to write
        self._markers: dict[str, threading.Event] = {}
        self.sync_topic = topics.sync_topic(unit_id) if topics.UNIT_ID.match(unit_id) else None

    # -- life cycle --------------------------------------------------------------------

    def _status(self, state: str) -> str:
        body: dict[str, Any] = {"schema": 1, "unit": self.unit_id, "role": self.role, "state": state}
        if state == "online":
            body.update(firmware=__version__, config_hash=self.config_digest, boot_id=self.boot_id)
        return json.dumps(body, sort_keys=True, separators=(",", ":"))

    def start(self, wait: float | None = 10.0) -> "MqttBus":
        """Connect in the background (retrying for ever); wait up to ``wait`` seconds for the
        first connection and the broker's acknowledgement of its subscriptions (None: do not
        wait). A unit still starts when the broker is down."""
        self._client.connect_async(self.config.host, self.config.port, keepalive=self.config.keepalive)
        self._client.loop_start()
        if self.outbox is not None:
            if self.outbox.went_back is not None:        # recorded before a restart: alarmed again
                self._lost_due = time.monotonic() + self.lost_grace
            self._sender = threading.Thread(target=self._send_loop, name=f"outbox:{self.unit_id}",
                                            daemon=True)
            self._sender.start()
        if wait is not None and not self.wait_subscribed(wait):
            log.warning("%s: no broker at %s yet; retrying in the background", self.unit_id, self.config.url)
        return self

    def close(self, timeout: float = 5.0) -> None:
        """Say ``offline`` (retained) and disconnect cleanly (unless :meth:`hang_up` did)."""
        hung_up, self._closing = self._closing, True
        self._wake.set()
        if self._connected.is_set() and not hung_up:
            info = self._client.publish(self.status_topic, self._status("offline"), qos=1, retain=True)
            try:
                info.wait_for_publish(timeout)
            except (RuntimeError, ValueError):
                pass
        self._client.disconnect()
        self._client.loop_stop()
        if self._sender is not None:
            self._sender.join(timeout)

    def hang_up(self) -> None:
        """Say ``offline`` and disconnect for good, at once, from any thread (paho's too:
        nothing here waits); paho never reconnects. A jackpot controller that stepped down
        must not take the persistent session (the shared client id) back from the one that
        took over. :meth:`close` still stops the threads."""
        if self._closing:
            return
        self._closing = True
        self._wake.set()
        if self._connected.is_set():        # queued ahead of the DISCONNECT: the broker takes it first
            self._client.publish(self.status_topic, self._status("offline"), qos=1, retain=True)
        self._client.disconnect()       # paho's loop, DISCONNECTING or DISCONNECTED, does not reconnect

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    def wait_connected(self, timeout: float) -> bool:
        return self._connected.wait(timeout)

    def wait_subscribed(self, timeout: float) -> bool:
        """Connected, and every subscription acknowledged by the broker (so listening)."""
        deadline = time.monotonic() + timeout
        return (self._connected.wait(timeout)
                and self._subscribed.wait(max(0.0, deadline - time.monotonic())))

    def add_link_listener(self, listener: LinkListener) -> None:
        self._listeners.append(listener)

    # -- paho callbacks (network thread) -----------------------------------------------

    @_guarded
    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        if reason_code.is_failure:
            log.error("%s: broker refused the connection: %s", self.unit_id, reason_code)
            return
        if self._closing:                   # hung up while paho was reconnecting: leave at once
            client.disconnect()
            return
        _no_delay(client)
        with self._lock:
            self._gen += 1
            self._conn += 1
            self._sent_through = 0 if self.resend_acked else self._first_unacked()
            patterns = sorted({p for p, _, _ in self._subs} | {p for p, _ in self._raw}
                              | {p for p, _ in self._deferred})
            if self.sync_topic is not None:
                patterns.append(self.sync_topic)
            if self.outbox is not None:
                patterns += [topics.confirmed_topic(self.link_id, self.unit_id),
                             topics.jackpot_status_topic(self.link_id)]
            if self._bridge_topic is not None:
                patterns.append(self._bridge_topic)
            self._progress_at = time.monotonic()
            self._subscribed.clear()
            self._subacks = {client.subscribe(pattern, qos=1)[1] for pattern in patterns}
            if not self._subacks:
                self._subscribed.set()
        client.publish(self.status_topic, self._status("online"), qos=1, retain=True)
        self.connects += 1
        self._connected.set()
        self._wake.set()
        for listener in list(self._listeners):
            listener(True)

    def _first_unacked(self) -> int:
        if self.outbox is None:
            return 0
        waiting = [p for p in self.outbox.pending(limit=100000) if not p.acked]
        return waiting[0].seq - 1 if waiting else self.outbox.last_seq

    @_guarded
    def _on_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        was = self._connected.is_set()
        self._connected.clear()
        self._subscribed.clear()
        if was:
            for listener in list(self._listeners):
                listener(False)

    @_guarded
    def _on_subscribe(self, client, userdata, mid, reason_codes, properties) -> None:
        refused = [str(rc) for rc in reason_codes if rc.is_failure]
        if refused:
            log.error("%s: the broker refused a subscription: %s", self.unit_id, ", ".join(refused))
        with self._lock:
            if mid in self._subacks:
                self._subacks.discard(mid)
                if not self._subacks:
                    self._subscribed.set()

    @_guarded
    def _on_publish(self, client, userdata, mid, reason_code, properties) -> None:
        # the sender thread reads each report's MQTTMessageInfo.is_published(): no mid
        # bookkeeping to race with (paho calls this holding its own message lock)
        if mid in self._table_mids:            # a table message's: nothing for the sender
            self._table_mids.discard(mid)
            return
        if self.outbox is not None:
            self._wake.set()

    def _drop(self, why: str, *args: Any) -> None:
        """Count an incoming message dropped and log it (the first ten, then every 1000th:
        a flood must not fill the log)."""
        self.dropped += 1
        if self.dropped <= 10 or self.dropped % 1000 == 0:
            log.warning("%s: " + why + " (%d dropped so far)", self.unit_id, *args, self.dropped)

    def _on_message(self, client, userdata, msg) -> None:
        # paho's network thread: an exception here would end it (no more messages, no
        # keepalive) and the message, never PUBACKed, would come back on every restart.
        # Whatever goes wrong, the message is counted, logged (rate-limited) and dropped.
        handed = False                                  # a deferred sink acknowledges it
        try:
            if self.outbox is not None and msg.topic == topics.jackpot_status_topic(self.link_id):
                self._controller_status(msg.payload, resend=not msg.retain)
            elif msg.topic == self._bridge_topic:
                self._floor_up = bytes(msg.payload).strip() != b"0"
            handed = self._defer(msg)
            if not handed:
                self._take(msg.topic, msg.payload)
        except Exception as exc:                        # noqa: BLE001 - see above
            self._drop("dropped a message on %s: %s while handling it: %.200s", str(msg.topic)[:200],
                       type(exc).__name__, exc)
        finally:
            if self.manual_ack and not handed:
                self._ack(msg, self._conn)

    def _controller_status(self, payload: bytes, resend: bool) -> None:
        """The controller (re)connected (``resend``: not the retained status): send again
        everything it has not confirmed. A broker restarted without the controller's session
        (killed before its autosave) dropped what the outbox resent before the controller
        subscribed again."""
        try:
            state = wirejson.loads(payload).get("state")
        except (ValueError, AttributeError):
            return                                      # its other receivers judge it
        if state in ("online", "offline"):
            self._controller_online = state == "online"
        if state == "online" and resend:
            with self._lock:
                self._gen += 1
                self._sent_through = 0 if self.resend_acked else self._first_unacked()
                self._progress_at = time.monotonic()
            self._wake.set()

    def _resend_if_stalled(self, inflight: int) -> None:
        """Sender thread: every report was taken by the broker, yet the controller, online
        and reachable, has confirmed nothing more for ``resend_stalled`` seconds: send the
        unconfirmed again (duplicates are dropped by the controller)."""
        assert self.outbox is not None
        if (inflight or not self._connected.is_set() or not self._controller_online or not self._floor_up
                or time.monotonic() - self._progress_at < self.resend_stalled):
            return
        stats = self.outbox.stats()
        if not stats["acked_unconfirmed"] or stats["waiting"]:
            self._progress_at = time.monotonic()        # nothing waits for the controller
            return
        with self._lock:
            self._gen += 1
            self._sent_through = 0
            self._progress_at = time.monotonic()
        self.stalled_resends += 1
        log.warning("%s: the controller confirmed nothing for %.0f s past report %d; sending the %d "
                    "unconfirmed again", self.unit_id, self.resend_stalled, stats["confirmed"],
                    stats["acked_unconfirmed"])

    def _defer(self, msg: mqtt.MQTTMessage) -> bool:
        """Hand ``msg`` to the deferred sink of its topic, if any (True: it acknowledges)."""
        if not self._deferred or len(msg.payload) > self.max_payload:
            return False
        with self._lock:
            sinks = [s for p, s in self._deferred if topic_matches(p, msg.topic)]
            conn = self._conn
        if not sinks:
            return False
        sinks[0](msg.topic, bytes(msg.payload), lambda: self._ack(msg, conn))
        return True

    def _ack(self, msg: mqtt.MQTTMessage, conn: int) -> None:
        """PUBACK ``msg``, unless the connection it came on is gone: its message id may name
        another message on the new one; the broker sends it again and the receiver drops
        the duplicate."""
        if msg.qos == 0:
            return
        with self._lock:
            if conn == self._conn and self._connected.is_set():
                self._client.ack(msg.mid, msg.qos)

    def _take(self, topic: str, payload: bytes) -> None:
        if len(payload) > self.max_payload:
            self.oversized += 1
            self._drop("dropped a %d-byte message on %s unread (limit %d bytes)", len(payload), topic,
                       self.max_payload)
            return
        if topic == self.sync_topic:
            try:
                token = wirejson.loads(payload).get("token")
            except (ValueError, AttributeError):
                token = None
            marker = self._markers.pop(token, None) if isinstance(token, str) else None
            if marker is not None:
                marker.set()
            return
        if self.outbox is not None and topic == topics.confirmed_topic(self.link_id, self.unit_id):
            self._on_confirmed(payload)
            return
        with self._lock:
            raw = [s for p, s in self._raw if topic_matches(p, topic)]
            subs = [(p, sub, s) for p, sub, s in self._subs if topic_matches(p, topic)]
        for sink in raw:
            self._call(sink, topic, topic, payload)
        if not subs:
            return
        try:
            message = Message.from_json(payload)
        except ValueError as exc:
            self._drop("dropped an undecodable message on %s: %.200s", topic, exc)
            return
        if message.topic != topic:
            self._drop("dropped a message for %.200s sent on %s", message.topic, topic)
            return
        for _, subscriber, deliver in subs:
            if subscriber != message.sender:
                self._call(deliver, topic, message)

    def _call(self, sink: Callable[..., None], topic: str, *args: Any) -> None:
        """One sink; what it raises is counted and logged, and the other sinks still run."""
        try:
            sink(*args)
        except Exception as exc:                        # noqa: BLE001 - a sink must not end paho's thread
            self.sink_errors += 1
            self._drop("a receiver of %s failed on a message (dropped): %s: %.200s", topic,
                       type(exc).__name__, exc)

    def _on_confirmed(self, payload: bytes) -> None:
        """paho's thread: a confirmation mark read and checked; the outbox's sender writes it
        (:meth:`_take_confirmations`): paho's network thread carries the unit's packets (a
        seat's card messages, the PUBACKs) and must not wait for the journal's lock and file."""
        try:
            data = wirejson.loads(payload)
            if not isinstance(data, dict) or data.get("unit") != self.unit_id:
                raise ValueError(f"a confirmation for {data.get('unit') if isinstance(data, dict) else data!r:.60}"
                                 f", not {self.unit_id}")
            through = data.get("through_seq")
            if isinstance(through, bool) or not isinstance(through, int) or through < 0:
                raise ValueError(f"through_seq {through!r:.40} is not a sequence number")
        except ValueError as exc:
            self.bad_marks += 1
            self._drop("refused a confirmation mark %.100r: %s", payload[:100], exc)
            return
        if self.outbox is None:
            return
        if self._sender is None:                      # no sender started (tests): taken here
            self._take_confirmation(through)
            return
        with self._lock:
            self._confirmations.append(through)
            del self._confirmations[:-MAX_CONFIRMATIONS]     # a flood keeps the newest
        self._wake.set()

    def _take_confirmations(self) -> None:
        """Sender thread: the confirmation marks read since it last looked, in order."""
        with self._lock:
            marks, self._confirmations = self._confirmations, []
        for through in marks:
            self._take_confirmation(through)

    def _take_confirmation(self, through: int) -> None:
        assert self.outbox is not None               # the sender runs only with an outbox
        if through > self.outbox.last_seq and not self.outbox.numbered and self.outbox.start_after(through):
            # a new outbox under a unit id the controller holds reports of (a unit started
            # anew): its reports go after them, else each is refused as a seq reused
            log.warning("%s: a new outbox; the controller holds this unit id's reports through %d: "
                        "numbering from %d", self.unit_id, through, through + 1)
            return
        if through > self.outbox.last_seq and self.outbox.numbered:
            # the controller holds seqs this outbox never numbered: the unit was restarted
            # from an older copy of its state (or, without the ACL, the mark is forged);
            # nothing is deleted, the unit is told and takes no bets (issue #11.5)
            self.bad_marks += 1
            behind = self.outbox.mark_behind(through)
            if behind is not None:
                log.error("%s: behind its confirmed mark: outbox through seq %d, controller confirmed "
                          "through %d", self.unit_id, behind["outbox_seq"], behind["confirmed"])
                for listener in list(self._behind_listeners):
                    listener(dict(behind))
            return
        if through < self.outbox.confirmed:
            self._went_back(through)
            return
        # Never further than what this outbox has actually sent: the broker acknowledged it
        # (persisted) or this process handed it to paho. A forged mark or one a controller
        # kept from a previous life of this unit id must not delete a report the controller
        # cannot hold; the controller repeats its mark after the resend.
        sent = max(self.outbox.sent_through(), self._handed_through)
        if through > sent:
            self.bad_marks += 1
            self._drop("confirmation mark %d is beyond report %d, the last this unit sent: taken "
                       "only through %d", through, sent, sent)
        if self.outbox.confirm_through(min(through, sent)):
            self._progress_at = time.monotonic()

    def _went_back(self, through: int) -> None:
        """The controller confirms less than it had: what this unit keeps of the difference
        goes again (the controller drops what it still holds); what is no longer kept waits
        :attr:`lost_grace` for the controller's own mark (an older retained mark after a
        broker's restart is followed by the controller's), then is alarmed."""
        assert self.outbox is not None
        went = self.outbox.reopen_after(through)
        if went is None:
            return
        self.controller_went_back += 1
        with self._lock:
            self._gen += 1
            self._sent_through = min(self._sent_through, through)
            self._progress_at = time.monotonic()
        if went.lost is not None:
            self._lost_due = time.monotonic() + self.lost_grace
        log.warning("%s: the jackpot controller's confirmed mark went back from %d to %d (it, or the broker's "
                    "retained mark, came back from an older copy): %d kept report(s) sent again%s", self.unit_id,
                    went.confirmed, through, went.resent,
                    "" if went.lost is None else f"; reports {went.lost[0]}-{went.lost[1]} are no longer kept here")
        self._wake.set()

    def _alarm_lost(self) -> None:
        """Sender thread: the lost range recorded, still not covered by the controller's mark
        after the grace, goes to the listeners (once a start; a restart alarms it again)."""
        assert self.outbox is not None
        if self._lost_due is None or time.monotonic() < self._lost_due or not self._connected.is_set():
            return
        self._lost_due = None
        lost = self.outbox.went_back
        if lost is None:
            return                        # a mark covered it meanwhile
        log.error("%s: the jackpot controller went back to seq %d and does not hold reports %d-%d, which this "
                  "unit no longer keeps (it had confirmed through %d): reconcile them from this unit's journal",
                  self.unit_id, lost["controller"], lost["first"], lost["last"], lost["confirmed"])
        for listener in list(self._lost_listeners):
            listener(dict(lost))

    def add_lost_listener(self, listener: Callable[[dict[str, int]], None]) -> None:
        """``listener({"controller", "confirmed", "first", "last"})`` when the controller's mark
        went back and stayed, for :attr:`lost_grace` seconds, below reports this unit no longer
        keeps; on the outbox's sender thread."""
        self._lost_listeners.append(listener)

    def add_behind_listener(self, listener: Callable[[dict[str, int]], None]) -> None:
        """``listener({"outbox_seq": n, "confirmed": m})`` when this unit's outbox is found
        behind the controller's confirmed mark (at once if it already was); on the outbox's sender thread."""
        self._behind_listeners.append(listener)
        behind = self.outbox.behind if self.outbox is not None else None
        if behind is not None:
            listener(dict(behind))

    # -- Bus ---------------------------------------------------------------------------

    def publish(self, message: Message) -> None:
        """Hand a table message to paho at QoS 1 (queued while the link is down)."""
        info = self._client.publish(message.topic, message.to_json(), qos=1)
        if info.rc not in (mqtt.MQTT_ERR_SUCCESS, mqtt.MQTT_ERR_NO_CONN):
            raise LinkError(f"{self.unit_id}: cannot publish on {message.topic}: {mqtt.error_string(info.rc)}")
        self.published += 1
        if len(self._table_mids) >= MAX_TABLE_MIDS:     # PUBACKs lost with a link: never read
            self._table_mids.clear()
        self._table_mids.add(info.mid)
        with self._lock:
            self._unacked = [i for i in self._unacked if _published(i) is False]
            self._unacked.append(info)

    # -- quiet (tables of units in one process: the demo, tests, the bench) -------------

    def wait_published(self, timeout: float) -> bool:
        """Every table message this bus published has been acknowledged by the broker
        (and so is queued for every subscriber)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            infos = list(self._unacked)
        for info in infos:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                info.wait_for_publish(left)
            except (RuntimeError, ValueError):
                return False
            if not _published(info):
                return False
        with self._lock:
            self._unacked = [i for i in self._unacked if _published(i) is False]
        return True

    def send_marker(self) -> threading.Event:
        """A marker through the broker back to this client: once it is back, everything the
        broker had queued for this client before it has been delivered (the broker keeps
        a client's QoS 1 messages in order)."""
        token = uuid.uuid4().hex
        event = threading.Event()
        self._markers[token] = event
        if self.sync_topic is None:
            raise LinkError(f"{self.unit_id}: only a <table>/<unit> id has a sync topic")
        self._client.publish(self.sync_topic, json.dumps({"schema": 1, "token": token}), qos=1)
        return event

    def subscribe(self, pattern: str, sink: Sink, subscriber: str) -> None:
        with self._lock:
            new = all(p != pattern for p, _, _ in self._subs) and all(p != pattern for p, _ in self._raw)
            self._subs.append((pattern, subscriber, sink))
        if new and self._connected.is_set():
            self._client.subscribe(pattern, qos=1)

    def unsubscribe(self, subscriber: str) -> None:
        with self._lock:
            gone = {p for p, s, _ in self._subs if s == subscriber}
            self._subs = [x for x in self._subs if x[1] != subscriber]
            still = {p for p, _, _ in self._subs} | {p for p, _ in self._raw} | {p for p, _ in self._deferred}
        for pattern in gone - still:
            self._client.unsubscribe(pattern)

    def subscribe_raw(self, pattern: str, sink: RawSink) -> None:
        """Bytes as they come (meters, presence, reports): ``sink(topic, payload)``."""
        with self._lock:
            new = all(p != pattern for p, _, _ in self._subs) and all(p != pattern for p, _ in self._raw)
            self._raw.append((pattern, sink))
        if new and self._connected.is_set():
            self._client.subscribe(pattern, qos=1)

    def subscribe_deferred(self, pattern: str, sink: DeferredSink) -> None:
        """Like :meth:`subscribe_raw` on a ``manual_ack`` link, but the broker's PUBACK
        waits until the sink calls the ``ack`` it is given (from any thread)."""
        if not self.manual_ack:
            raise LinkError(f"{self.unit_id}: deferred acknowledgement needs manual_ack=True")
        with self._lock:
            new = all(p != pattern for p, _, _ in self._subs) and all(p != pattern for p, _ in self._raw) \
                and all(p != pattern for p, _ in self._deferred)
            self._deferred.append((pattern, sink))
        if new and self._connected.is_set():
            self._client.subscribe(pattern, qos=1)

    def publish_raw(self, topic: str, payload: str | bytes, qos: int = 1, retain: bool = False):
        return self._client.publish(topic, payload, qos=qos, retain=retain)

    # -- reports -----------------------------------------------------------------------

    def report(self, kind: str, body: dict[str, Any], key: str | None = None,
               **extra: Any) -> int | None:
        """Durably queue a report for the controller; its sequence number (None: ``key``
        was reported before). Returns once it is on disk, not once it is sent."""
        if self.outbox is None:
            raise LinkError(f"{self.unit_id}: this link has no outbox; reports need one")
        # no wake here: once committed (now, or with the step it was put in) the outbox's
        # listener (:meth:`_committed`) hands it to paho or wakes the sender; a step's report
        # is not visible to the sender before, and a key reported before has nothing to send
        return self.outbox.put(topics.report_topic(self.unit_id), kind, body, key=key, extra=extra)

    def _send_loop(self) -> None:
        """The outbox's one sender. It must outlive anything paho or SQLite throws at it:
        a dead sender would leave every later report on disk, unsent, until a restart."""
        assert self.outbox is not None
        inflight: list[tuple[mqtt.MQTTMessageInfo, int]] = []
        while not self._closing:
            try:
                inflight = self._send_step(inflight)
            except Exception:                         # noqa: BLE001 - logged, then go on
                log.exception("%s: outbox sender step failed; retrying", self.unit_id)
                inflight = []                         # the next connect resends what is unconfirmed
                time.sleep(0.5)

    def _send_step(self, inflight: list[tuple[mqtt.MQTTMessageInfo, int]]
                   ) -> list[tuple[mqtt.MQTTMessageInfo, int]]:
        assert self.outbox is not None               # the sender runs only with an outbox
        woken = self._wake.wait(0.5)
        self._wake.clear()
        self._take_confirmations()
        self._alarm_lost()
        with self._lock:
            inflight, self._handed = inflight + self._handed, []
        if inflight:
            done, still = [], []
            for info, seq in inflight:          # is_published() read once per report
                state = _published(info)
                if state:
                    done.append((info, seq))
                elif state is not None:
                    still.append((info, seq))
                # None: paho took it while the link was going down and will never say;
                # it stays in the outbox and the next connect sends it again
            if done:
                self.outbox.mark_acked_many([seq for _, seq in done])
            inflight = still
        if not self._connected.is_set() or len(inflight) >= MAX_INFLIGHT:
            return inflight
        self._resend_if_stalled(len(inflight))
        with self._lock:
            gen, after = self._gen, self._sent_through
        if woken and after >= self.outbox.put_through:
            return inflight                # a PUBACK: nothing committed past what was sent
        rows = self.outbox.pending(after=after, limit=256)
        for row in rows:
            if self._closing or len(inflight) >= MAX_INFLIGHT:
                break
            with self._lock:
                if gen != self._gen:
                    break
                if row.seq <= self._sent_through:      # _committed handed it over meanwhile
                    continue
                info = self._client.publish(row.topic, row.payload, qos=1)
                if info.rc not in (mqtt.MQTT_ERR_SUCCESS, mqtt.MQTT_ERR_NO_CONN):
                    log.error("%s: cannot publish report %d: %s", self.unit_id, row.seq,
                              mqtt.error_string(info.rc))
                    break
                inflight.append((info, row.seq))
                self._sent_through = row.seq
                self._handed_through = max(self._handed_through, row.seq)
                if info.rc != mqtt.MQTT_ERR_SUCCESS:
                    break                     # link went down: the next connect resends
        else:
            if len(rows) == 256:
                self._wake.set()
        return inflight

    def _committed(self) -> None:
        """Reports were committed (a step's, on the thread that wrote it): hand them to paho
        at once, in order after what was sent, instead of waking the sender thread for it (a
        thread hand-off on a card's way to its report, issue #17.5). The sender still marks
        their PUBACKs and does everything else (resends, a full window, a link down)."""
        assert self.outbox is not None
        with self._lock:
            if self._closing or not self._connected.is_set() or len(self._handed) >= MAX_INFLIGHT // 2:
                self._wake.set()
                return
            gen = self._gen
            for row in self.outbox.committed(after=self._sent_through):    # as written: no read
                if row.seq != self._sent_through + 1 or gen != self._gen:
                    break                             # a gap (not yet committed): the sender's
                info = self._client.publish(row.topic, row.payload, qos=1)
                if info.rc not in (mqtt.MQTT_ERR_SUCCESS, mqtt.MQTT_ERR_NO_CONN):
                    break                             # the sender tries it again (and logs it)
                self._handed.append((info, row.seq))
                self._sent_through = row.seq
                self._handed_through = max(self._handed_through, row.seq)
                if info.rc != mqtt.MQTT_ERR_SUCCESS:
                    break                             # link went down: the next connect resends
            if self._sent_through >= self.outbox.put_through:
                return                                # all handed: the PUBACK wakes the sender
        self._wake.set()

    def drained(self) -> bool:
        """Every report has been acknowledged by the broker."""
        return self.outbox is None or self.outbox.stats()["waiting"] == 0

    def wait_drained(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.drained():
                return True
            time.sleep(0.02)
        return self.drained()
