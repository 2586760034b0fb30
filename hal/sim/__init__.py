"""Device simulators: a card shoe and an RFID reader speaking the documented protocols
on a pseudo-terminal or a real serial port, for bench tests and end-to-end tests."""
