"""A throwaway PKI for the technician's tests, made with the openssl command."""

from __future__ import annotations

import subprocess
from pathlib import Path


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_ca(d: Path, name: str = "ca", cn: str = "betbox test CA") -> Path:
    d.mkdir(parents=True, exist_ok=True)
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "30", "-subj", f"/CN={cn}",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            cwd=d)
    return d / f"{name}.pem"


def make_cert(d: Path, name: str, cn: str, ca: str = "ca", days: int = 30, ext: str = "extendedKeyUsage=clientAuth") -> Path:
    """``name.pem`` and ``name.key``, signed by ``ca``."""
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", "/CN=" + cn.replace("/", "\\/"), cwd=d)
    (d / f"{name}.ext").write_text(ext + "\n")
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-CAcreateserial",
            "-out", f"{name}.pem", "-days", str(days), "-extfile", f"{name}.ext", cwd=d)
    return d / f"{name}.pem"
