"""`betbox` sub-commands: each module here exposes ``register(subparsers)``.

The CLI discovers them, so a new command is a new module and nothing else changes.
"""
