"""betbox firmware: the rules engine, the unit runtime, the MQTT link and the CLI."""

__version__ = "0.1.0"
