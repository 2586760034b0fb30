"""The ARM proof: betbox in the image's arm64 root file system, run under qemu-user-static.

Deselected by default (``-m "not image"``): it needs an image build (mmdebstrap, tens of
minutes). Run it with the one command in docs/technician.md::

    scripts/setup image && .venv/bin/python -m pytest tests/tech/test_image.py -m image

It uses ``$BETBOX_IMAGE_OUT/rootfs-seat`` (default ``build/image``; a full image build
leaves it there) and builds it with ``scripts/image --role seat --rootfs-only`` first when it
is not there.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(os.environ.get("BETBOX_IMAGE_OUT", ROOT / "build" / "image"))
GOLDEN = ROOT / "tests/golden/rws-blackjack/split-double-insurance.json"

pytestmark = [
    pytest.mark.image,
    pytest.mark.skipif(os.geteuid() != 0, reason="chroot into the image's root needs root"),
    pytest.mark.skipif(not os.path.exists("/proc/sys/fs/binfmt_misc/qemu-aarch64")
                       and shutil.which("qemu-aarch64-static") is None, reason="needs qemu-user-static"),
]


@pytest.fixture(scope="module")
def rootfs() -> Path:
    root = OUT / "rootfs-seat"
    if not (root / "opt/betbox/current/bin/betbox").is_file():      # (a symlink into the image: not followed here)
        subprocess.run([str(ROOT / "scripts/image"), "--role", "seat", "--out", str(OUT), "--rootfs-only"],
                       check=True, timeout=7200)
    return root


def in_arm(root: Path, *cmd: str, timeout: float = 900, **extra: str) -> subprocess.CompletedProcess:
    """A command in the arm64 root (every binary there runs through qemu-aarch64)."""
    env = {**extra, "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "KIVY_HOME": "/tmp/kivy", "KIVY_NO_ARGS": "1",
           "KIVY_NO_CONSOLELOG": "1", "LANG": "C.UTF-8",
           "PYTHONDONTWRITEBYTECODE": "1"}           # the release stays as signed
    return subprocess.run([shutil.which("chroot") or "/usr/sbin/chroot", str(root), *cmd], capture_output=True, text=True, env=env, timeout=timeout)


def test_the_root_is_arm64_with_python_3_11(rootfs):
    done = in_arm(rootfs, "/opt/betbox/current/bin/python", "-c",
                  "import platform, sys; print(platform.machine(), sys.version_info[:2])")
    assert done.stdout.strip() == "aarch64 (3, 11)", done.stderr


def test_the_wheels_import_on_aarch64(rootfs):
    done = in_arm(rootfs, "/opt/betbox/current/bin/python", "-c",
                  "import kivy, paho.mqtt, serial, gpiozero; print(kivy.__version__)")
    assert done.returncode == 0 and done.stdout.strip().splitlines()[-1].startswith("2."), done.stderr[-2000:]


def test_lgpio_is_built_for_aarch64_and_loads(rootfs):
    """No aarch64 wheel on PyPI, no bookworm package: the image builds it from its sdist
    (scripts/image); its C library answers, and gpiozero's lgpio pin factory imports."""
    done = in_arm(rootfs, "/opt/betbox/current/bin/python", "-c",
                  "import lgpio, platform; from gpiozero.pins.lgpio import LGPIOFactory; "
                  "print(platform.machine(), lgpio.__file__, hex(lgpio._get_lg_version()))")   # liblgpio's lguVersion
    assert done.returncode == 0, done.stderr[-2000:]
    machine, where, version = done.stdout.split()
    assert machine == "aarch64" and where.startswith("/opt/betbox/current/lib/python3.11/site-packages/") and int(version, 16) > 0


def test_betbox_version(rootfs):
    done = in_arm(rootfs, "/usr/local/bin/betbox", "--version")
    assert done.returncode == 0 and done.stdout.startswith("betbox "), done.stderr


def test_betbox_settle_gives_the_golden_result(rootfs):
    golden = json.loads(GOLDEN.read_text())
    (rootfs / "tmp/golden-script.json").write_text(json.dumps(golden["script"]))
    done = in_arm(rootfs, "/usr/local/bin/betbox", "settle", "--json", "/tmp/golden-script.json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == golden["expected"]


def test_betbox_demo_headless_three_rounds(rootfs):
    done = in_arm(rootfs, "/usr/local/bin/betbox", "demo", "--headless", "--rounds", "3", "--state-dir", "/tmp/demo")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def test_the_seats_shipped_configuration_checks(rootfs):
    """The shipped layout with the site's chip registry in place: site data a technician
    copies to /etc/betbox/chips.csv (betbox provision does not carry it); a seat refuses to
    start without one. The lamps' GPIO pins on gpiozero's MockFactory: under qemu there is no
    Pi to find (gpiozero's lgpio factory loads, then reads the board from /proc/cpuinfo)."""
    registry = rootfs / "etc/betbox/chips.csv"
    placed = not registry.exists()
    if placed:
        shutil.copy(ROOT / "docs/examples/chips.csv", registry)
    # the reader's UART as the Pi has it (PL011, char 204:64): the check asks that the port exists
    uart = rootfs / "dev/ttyAMA0"
    made = not uart.exists()
    if made:
        os.mknod(uart, 0o660 | stat.S_IFCHR, os.makedev(204, 64))
    try:
        done = in_arm(rootfs, "/usr/local/bin/betbox", "run", "--config", "/etc/betbox/seat.toml", "--check",
                      GPIOZERO_PIN_FACTORY="mock")
    finally:
        if placed:
            registry.unlink()
        if made:
            uart.unlink()
    assert done.returncode == 0 and "configuration OK" in done.stdout, done.stderr


def test_the_release_verifies_against_its_signed_manifest(rootfs):
    done = in_arm(rootfs, "/usr/local/bin/betbox", "verify", "--tree", "/opt/betbox/current")
    assert done.returncode == 0 and "verdict: VERIFIED" in done.stdout, done.stdout[-2000:] + done.stderr


def test_the_image_enables_the_seat_unit_and_mounts_root_read_only(rootfs):
    assert (rootfs / "etc/systemd/system/multi-user.target.wants/betbox-seat.service").is_symlink()
    fstab = (rootfs / "etc/fstab").read_text()
    assert "LABEL=rootfs  /                ext4  ro," in fstab and "/var/lib/betbox" in fstab
    assert (rootfs / "opt/betbox/current").resolve().parent.name == "releases"


def test_the_image_has_the_rauc_slot_pair_and_mounts_the_booted_one(rootfs):
    conf = (rootfs / "etc/rauc/system.conf").read_text()
    assert "compatible=betbox-seat-rpi" in conf and "bootloader=custom" in conf
    assert "[slot.app.0]\ndevice=/dev/mmcblk0p5" in conf and "[slot.app.1]\ndevice=/dev/mmcblk0p6" in conf
    assert (rootfs / "etc/systemd/system/local-fs.target.wants/betbox-appslot.service").is_symlink()
    assert (rootfs / "etc/systemd/system/multi-user.target.wants/betbox-health.service").is_symlink()
    for tool in ("select-slot", "bootloader-backend", "pre-install", "appslot-mount"):
        assert os.access(rootfs / "usr/lib/betbox" / tool, os.X_OK), tool
    # betbox runs from whichever slot is mounted: the launcher does not name a release
    assert "/opt/betbox/current/bin/python -m firmware" in (rootfs / "usr/local/bin/betbox").read_text()


def test_the_seat_is_a_kiosk_on_kms_drm_as_betbox_with_blanking_off(rootfs):
    unit = (rootfs / "etc/systemd/system/betbox-seat.service").read_text()
    assert "User=betbox" in unit and "SDL_VIDEODRIVER=kmsdrm" in unit and "DeviceAllow=char-drm rw" in unit
    groups = (rootfs / "etc/group").read_text().splitlines()
    for group in ("video", "render", "input", "gpio", "dialout"):
        assert any(g.startswith(group + ":") and "betbox" in g.split(":")[3] for g in groups), group
    cmdline = rootfs / "boot/firmware/cmdline.txt"
    if (rootfs / "boot/firmware").is_dir():                 # a full image (--rootfs-only has no boot files)
        assert "consoleblank=0" in cmdline.read_text() and " ro " in cmdline.read_text()
