"""``betbox verify``: the installed software against its signed manifest; a lab's seeded challenge.

::

    betbox verify                       manifest, digest, signature and files: verified or not
    betbox verify --seed HEX            also the HMAC-SHA-256 answer to the lab's seed
    betbox verify --sign --cert C --key K   (the build) write the signed manifest into --tree

Exit status 0 when verified, 1 when not, 2 when verification could not be done. See
:mod:`firmware.verify`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from firmware import __version__
from firmware.verify import KEYRING, VerifyError, challenge, make_manifest, sign, verify


def default_tree() -> Path:
    """The release this command runs from: its venv (``/opt/betbox/releases/<version>``)."""
    return Path(sys.prefix).resolve()


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("verify", help="check the installed software against its signed manifest")
    p.add_argument("--tree", type=Path, help="the installed release (default: the one running, "
                                             f"{default_tree()})")
    p.add_argument("--keyring", type=Path, default=KEYRING, help=f"trusted CA certificates (default {KEYRING})")
    p.add_argument("--seed", help="a lab's challenge seed (hex): print HMAC-SHA-256 over every file")
    p.add_argument("--manifest", action="store_true", help="print every file's SHA-256")
    p.add_argument("--json", action="store_true", help="one JSON object")
    p.add_argument("--sign", action="store_true", help="(build) write the manifest and its CMS signature into --tree")
    p.add_argument("--cert", type=Path, help="--sign: the signing certificate (PEM)")
    p.add_argument("--key", type=Path, help="--sign: its private key (PEM file; never on the command line)")
    p.set_defaults(func=run)


def _seed(text: str) -> bytes:
    try:
        seed = bytes.fromhex(text)
    except ValueError:
        raise VerifyError(f"--seed {text!r}: expected hex digits (e.g. --seed 9f3a...)") from None
    if len(seed) < 8:
        raise VerifyError(f"--seed: {len(seed)} bytes; a seed is at least 8 bytes (16 hex digits)")
    return seed


def run(args: argparse.Namespace) -> int:
    tree = args.tree or default_tree()
    try:
        if args.sign:
            if args.cert is None or args.key is None:
                raise VerifyError("--sign needs --cert and --key")
            m = sign(tree, args.cert, args.key)
            print(f"{tree}: {len(m.entries)} files, digest {m.digest}, signed by {args.cert}")
            return 0
        seed = _seed(args.seed) if args.seed is not None else None
        result = verify(tree, args.keyring)
        answer = challenge(tree, seed) if seed is not None else None
        manifest = make_manifest(tree) if args.manifest else None
    except VerifyError as exc:
        print(f"betbox verify: {exc}", file=sys.stderr)
        return 2
    if args.json:
        out = {"version": __version__, "tree": str(tree), "verified": result.ok, "digest": result.digest,
               "signed_digest": result.signed_digest, "problems": list(result.problems)}
        if answer is not None:
            out["challenge"] = {"seed": args.seed, "hmac_sha256": answer}
        if manifest is not None:
            out["files"] = dict(manifest.entries)
        print(json.dumps(out, indent=1))
    else:
        if manifest is not None:
            sys.stdout.write(manifest.text)
        print(f"betbox {__version__} at {tree}")
        print(f"digest: {result.digest}")
        print(f"signed: {result.signed_digest or '-'}")
        for problem in result.problems:
            print(f"problem: {problem}")
        if answer is not None:
            print(f"challenge: seed {args.seed} hmac-sha256 {answer}")
        print("verdict: VERIFIED" if result.ok else "verdict: NOT VERIFIED")
    return 0 if result.ok else 1
