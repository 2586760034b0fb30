"""Issue #13.1: the card's partition table (image/partition.sh) on a small stand-in root:
BOOT, a read-only root, the RAUC application slot pair app.0/app.1 and the state partition,
each file system where the table says and holding what it should."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ("sfdisk", "mkfs.vfat", "mcopy", "mkfs.ext4", "debugfs", "blkid")
pytestmark = pytest.mark.skipif(any(shutil.which(t) is None for t in TOOLS),
                                reason=f"needs {', '.join(TOOLS)} (scripts/setup image)")


def stand_in_root(d: Path) -> Path:
    (d / "boot/firmware").mkdir(parents=True)
    (d / "boot/firmware/config.txt").write_text("arm_64bit=1\n")
    release = d / "opt/betbox/releases/0.1.0"
    (release / "bin").mkdir(parents=True)
    (release / "VERSION").write_text("0.1.0\n")
    (d / "opt/betbox/current").symlink_to("releases/0.1.0")
    (d / "var/lib/betbox").mkdir(parents=True)
    (d / "etc").mkdir()
    (d / "etc/fstab").write_text("LABEL=rootfs / ext4 ro 0 1\n")
    return d


def piece(img: Path, part: dict, out: Path) -> Path:
    with open(img, "rb") as src, open(out, "wb") as dst:
        src.seek(part["start"] * 512)
        dst.write(src.read(part["size"] * 512))
    return out


def debugfs(fs: Path, request: str) -> str:
    return subprocess.run(["debugfs", "-R", request, str(fs)], capture_output=True, text=True, check=True).stdout


def test_the_card_has_boot_root_two_app_slots_and_state(tmp_path):
    root = stand_in_root(tmp_path / "rootfs")
    (tmp_path / "work").mkdir()
    img = tmp_path / "card.img"
    subprocess.run([str(ROOT / "image/partition.sh"), str(root), str(tmp_path / "work"), str(img), "seat"],
                   check=True, capture_output=True, text=True, timeout=300)
    table = json.loads(subprocess.run(["sfdisk", "--json", str(img)], capture_output=True, text=True,
                                      check=True).stdout)["partitiontable"]
    assert table["label"] == "dos"
    parts = {p["node"].removeprefix(str(img)): p for p in table["partitions"]}
    assert [(n, parts[n]["type"]) for n in sorted(parts)] == [("1", "c"), ("2", "83"), ("3", "83"), ("4", "5"),
                                                              ("5", "83"), ("6", "83")]
    assert parts["1"].get("bootable") is True
    assert parts["5"]["size"] == parts["6"]["size"]                 # A and B hold the same releases
    labels = {}
    for n in ("1", "2", "3", "5", "6"):
        fs = piece(img, parts[n], tmp_path / f"p{n}")
        labels[n] = subprocess.run(["blkid", "-o", "value", "-s", "LABEL", str(fs)], capture_output=True,
                                   text=True).stdout.strip()
    assert labels == {"1": "BOOT", "2": "rootfs", "3": "state", "5": "app-a", "6": "app-b"}
    # the root: the slot's mount point, no release of its own (it lives in app.0)
    assert "current" in debugfs(tmp_path / "p2", "ls -l /opt/betbox")
    assert "0.1.0" not in debugfs(tmp_path / "p2", "ls /opt/betbox/releases")
    assert debugfs(tmp_path / "p5", "cat /VERSION").strip() == "0.1.0"
    assert "primary=A" in debugfs(tmp_path / "p3", "cat /boot/appslot.env")
    assert subprocess.run(["mdir", "-i", str(tmp_path / "p1"), "::/config.txt"], capture_output=True).returncode == 0
    # the stand-in root is as it was (the proof runs in it after the image is made)
    assert (root / "opt/betbox/current").is_symlink() and (root / "opt/betbox/releases/0.1.0/VERSION").is_file()
    assert (root / "boot/firmware/config.txt").is_file()
