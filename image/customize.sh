#!/usr/bin/env bash
# mmdebstrap customize hook: betbox into the arm64 root ROOTFS for ROLE at VERSION.
#   usage: image/customize.sh ROOTFS ROLE VERSION SOURCE_TREE
set -euo pipefail
root="$1" role="$2" version="$3" src="$4"
in_root() { env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 chroot "$root" "$@"; }   # none of the host's PIP_* settings
release="/opt/betbox/releases/$version"

# the betbox user and the groups its ports need (gpio is Raspberry Pi OS's group)
in_root groupadd -f --system gpio
in_root id betbox >/dev/null 2>&1 || in_root useradd --system --home-dir /var/lib/betbox --shell /usr/sbin/nologin betbox
for g in dialout gpio video render input; do
    in_root getent group "$g" >/dev/null || in_root groupadd --system "$g"
done
in_root usermod -aG dialout,gpio,video,render,input betbox

# lgpio (gpiozero's pin factory on a Pi): PyPI has no aarch64 wheel and bookworm no package, so
# its sdist (hash-locked, image/requirements-arm64-sdist.txt) is built here once, in this root
# against its own CPython 3.11 with liblgpio linked in (PYPI=1), the compiler removed again;
# the wheel is cached by the sdist's name in $BETBOX_IMAGE_CACHE/wheels for the next build
lgpio_wheels() {
    local sdist cached built
    sdist="$(cd "$root/tmp/betbox-build/sdist" && ls lgpio-*.tar.gz)"
    cached="${BETBOX_IMAGE_CACHE:-$src/build/image-cache}/wheels/${sdist%.tar.gz}"
    if ! ls "$cached"/*.whl >/dev/null 2>&1; then
        in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
            gcc libc6-dev python3-dev swig >/dev/null
        in_root env PYPI=1 "$release/bin/pip" wheel -q --no-index --no-deps --no-build-isolation \
            -w /tmp/betbox-build/built "/tmp/betbox-build/sdist/$sdist"
        in_root env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q --autoremove \
            gcc libc6-dev python3-dev swig >/dev/null
        mkdir -p "$cached"; cp "$root"/tmp/betbox-build/built/lgpio-*.whl "$cached/"
    fi
    built="$(basename "$(ls "$cached"/lgpio-*.whl | head -n 1)")"
    cp "$cached/$built" "$root/tmp/betbox-build/"
    in_root "$release/bin/pip" install -q --no-index --no-deps "/tmp/betbox-build/$built"
    echo "customize: lgpio $built (sha256 $(sha256sum "$cached/$built" | cut -c1-16)…)"
}

# a versioned venv from the hash-locked wheels, offline: two builds of a version carry the same bytes
in_root python3 -m venv "$release"
in_root "$release/bin/pip" install -q --no-index --find-links /tmp/betbox-build/wheels \
    --require-hashes -r /tmp/betbox-build/requirements.txt
wheel="$(cd "$root/tmp/betbox-build/wheels" && ls betbox-*.whl)"     # expanded in the image's /tmp
in_root "$release/bin/pip" install -q --no-index --no-deps "/tmp/betbox-build/wheels/$wheel"
# its own shell with errexit: a failed build leaves lgpio out (gpiozero falls back to its
# native pin factory; the ARM proof says so) instead of failing the whole image
export root release src BETBOX_IMAGE_CACHE
export -f in_root lgpio_wheels
bash -euo pipefail -c lgpio_wheels || echo "customize: WARNING: lgpio could not be built; the image has no lgpio" >&2
find "$root$release" -name __pycache__ -prune -exec rm -rf {} +
ln -sfn "releases/$version" "$root/opt/betbox/current"
# betbox runs from the booted application slot, mounted at /opt/betbox/current whatever its
# version: the venv's python finds its own packages from where it is (its console scripts'
# #! lines name the release's build path, so the launcher does not use them)
cat > "$root/usr/local/bin/betbox" <<'LAUNCHER'
#!/bin/sh
# betbox from the booted application slot (image/customize.sh)
exec /opt/betbox/current/bin/python -m firmware "$@"
LAUNCHER
chmod 0755 "$root/usr/local/bin/betbox"
# the release's signed manifest (betbox verify at every start) and the keyring it is checked
# against (also RAUC's): the development CA unless BETBOX_SIGNER_CERT/KEY and BETBOX_KEYRING
# name the production ones
echo "$version" > "$root$release/VERSION"
if [ -n "${BETBOX_SIGNER_CERT:-}" ]; then
    cert="$BETBOX_SIGNER_CERT" key="$BETBOX_SIGNER_KEY" keyring="$BETBOX_KEYRING"
else
    "$src/image/dev-ca" "$src/build/dev-ca"
    cert="$src/build/dev-ca/signer.pem" key="$src/build/dev-ca/signer.key" keyring="$src/build/dev-ca/ca.pem"
fi
"$src/.venv/bin/python" -m firmware verify --sign --tree "$root$release" --cert "$cert" --key "$key"
install -d "$root/etc/rauc"
install -m 0644 "$keyring" "$root/etc/rauc/keyring.pem"

# configuration: the role's layout; `betbox provision` adds identity and secrets
install -d -m 0750 -g 0 "$root/etc/betbox"
install -m 0640 "$src/image/config/$role.toml" "$root/etc/betbox/$role.toml"
in_root chgrp -R betbox /etc/betbox

# systemd: the role's unit, provisioning on first boot, read-only root, state partition
install -m 0644 "$src/systemd/betbox-$role.service" "$root/etc/systemd/system/"
[ -f "$src/systemd/betbox-provision.service" ] && install -m 0644 "$src/systemd/betbox-provision.service" "$root/etc/systemd/system/"
in_root systemctl enable "betbox-$role.service" >/dev/null 2>&1 || \
    ln -sf "/etc/systemd/system/betbox-$role.service" "$root/etc/systemd/system/multi-user.target.wants/"
[ -f "$root/etc/systemd/system/betbox-provision.service" ] && in_root systemctl enable betbox-provision.service >/dev/null 2>&1 || true
install -d -o 0 -g 0 "$root/var/lib/betbox"
cat > "$root/etc/fstab" <<FSTAB
# read-only root: a power cut cannot corrupt it; state lives on its own partition
LABEL=rootfs  /                ext4  ro,noatime                   0 1
LABEL=BOOT    /boot/firmware   vfat  ro,noatime,umask=0077        0 2
LABEL=state   /var/lib/betbox  ext4  rw,noatime,data=journal,nodev,nosuid,noexec  0 2
tmpfs         /tmp             tmpfs nodev,nosuid,size=64M        0 0
tmpfs         /var/tmp         tmpfs nodev,nosuid,size=16M        0 0
tmpfs         /var/log         tmpfs nodev,nosuid,size=32M        0 0
# what a running system writes besides its state: kept in memory (the root stays read-only)
tmpfs         /var/lib/systemd tmpfs nodev,nosuid,size=8M         0 0
tmpfs         /var/lib/chrony  tmpfs nodev,nosuid,size=1M,mode=1777 0 0
tmpfs         /var/cache       tmpfs nodev,nosuid,size=16M        0 0
FSTAB
mkdir -p "$root/etc/systemd/journald.conf.d"
printf '[Journal]\nStorage=volatile\nRuntimeMaxUse=16M\n' > "$root/etc/systemd/journald.conf.d/betbox.conf"
# boot: read-only root, no console blanking (the seat's screen stays on)
if [ -d "$root/boot/firmware" ]; then
    echo "console=tty1 root=LABEL=rootfs rootfstype=ext4 ro rootwait fsck.repair=yes consoleblank=0 quiet" \
        > "$root/boot/firmware/cmdline.txt"
fi
echo "betbox-$role" > "$root/etc/hostname"
in_root systemctl enable chrony >/dev/null 2>&1 || true
in_root systemctl enable systemd-networkd >/dev/null 2>&1 || true
printf '[Match]\nName=e*\n[Network]\nDHCP=yes\n' > "$root/etc/systemd/network/50-wired.network"
echo "customize: betbox $version ($role) in $release"

# RAUC's A/B application slots: app.0 (A) and app.1 (B) are partitions 5 and 6 of the card
# (image/partition.sh); early boot picks one (image/rauc/select-slot: a version that never
# passed its health check falls back) and mounts it read-only at /opt/betbox/current
# Debian splits RAUC: `rauc` is the client, `rauc-service` the D-Bus service and its unit
in_root dpkg -s rauc-service >/dev/null 2>&1 || \
    in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends rauc-service >/dev/null
install -d "$root/usr/lib/betbox"
install -m 0755 "$src/image/rauc/bootloader-backend" "$src/image/rauc/select-slot" "$src/image/rauc/pre-install" \
    "$src/image/rauc/appslot-mount" "$src/image/rauc/health-check" "$root/usr/lib/betbox/"
cat > "$root/etc/rauc/system.conf" <<CONF
[system]
compatible=betbox-$role-rpi
bootloader=custom
data-directory=/var/lib/betbox/rauc

[handlers]
bootloader-custom-backend=/usr/lib/betbox/bootloader-backend
pre-install=/usr/lib/betbox/pre-install

[keyring]
path=/etc/rauc/keyring.pem

[slot.app.0]
device=/dev/mmcblk0p5
type=ext4
bootname=A

[slot.app.1]
device=/dev/mmcblk0p6
type=ext4
bootname=B
CONF
install -m 0644 "$src/image/systemd/betbox-appslot.service" "$src/image/systemd/betbox-health.service" "$root/etc/systemd/system/"
sed -i "s/@ROLE@/$role/g" "$root/etc/systemd/system/betbox-health.service"
install -d "$root/etc/systemd/system/rauc.service.d" "$root/etc/systemd/system/betbox-$role.service.d"
install -m 0644 "$src/image/systemd/rauc-appslot.conf" "$root/etc/systemd/system/rauc.service.d/betbox.conf"
printf '[Unit]\nRequires=betbox-appslot.service\nAfter=betbox-appslot.service betbox-health.service\n' \
    > "$root/etc/systemd/system/betbox-$role.service.d/appslot.conf"
in_root systemctl enable betbox-appslot.service betbox-health.service >/dev/null
echo "customize: A/B application slots, compatible betbox-$role-rpi"
