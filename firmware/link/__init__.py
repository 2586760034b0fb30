"""The MQTT link: the runtime's Bus over a broker, a durable report outbox, presence,
TLS/credentials configuration, and the seat's reports to the jackpot controller."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .config import LinkConfig, LinkConfigError, config_from_url, config_hash, load_link_config
from .mqtt import LinkError, MqttBus
from .outbox import Outbox


def connect_bus(url: str | None, unit_id: str, *, outbox_path: str | Path | None = None,
                username: str | None = None, password: str | None = None,
                tls: dict[str, str] | None = None, link_id: str = "main", role: str = "seat",
                config: Any = None, wait: float | None = 10.0, link: LinkConfig | None = None,
                allow_insecure: bool = False, outbox: Outbox | None = None) -> MqttBus:
    """A started :class:`MqttBus` for one unit (``table-1/seat-3``), ready to hand to a
    ``DealerUnit``/``SeatUnit`` as its ``bus``. With ``outbox_path`` it can also
    :meth:`~MqttBus.report` to the jackpot controller. ``config`` (the unit's whole
    configuration) is hashed into the birth message. ``link``: an already read
    :class:`LinkConfig` (``[link]`` of a unit configuration) instead of ``url`` and options;
    ``allow_insecure``: a password over plain ``mqtt://`` is meant (tests, a loopback lab);
    ``outbox``: an outbox already open (one in the unit's journal) instead of ``outbox_path``."""
    if link is None and url is None:
        raise ValueError("connect_bus: give the broker's url or a LinkConfig")
    cfg = link if link is not None else config_from_url(str(url), username=username, password=password, tls=tls,
                                                        allow_insecure=allow_insecure or None)
    url = cfg.url
    if outbox is None and outbox_path is not None:
        outbox = Outbox(outbox_path, unit_id)
    bus = MqttBus(cfg, unit_id, role=role, outbox=outbox, link_id=link_id,
                  config_digest=config_hash(config if config is not None else {"broker": url}))
    return bus.start(wait)


__all__ = ["LinkConfig", "LinkConfigError", "LinkError", "MqttBus", "Outbox", "config_from_url",
           "config_hash", "connect_bus", "load_link_config"]
