"""Wire protocols of the card shoe and the RFID reader (see ``docs/protocols/``).

Pure code: bytes in, frames and messages out; no ports, no clock, no threads.
"""
