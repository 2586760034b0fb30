#!/usr/bin/env bash
# The image's initramfs, made once (mmdebstrap hooks in scripts/image).
#   usage: image/initramfs.sh divert ROOTFS   (essential hook: before the kernel is installed)
#          image/initramfs.sh build ROOTFS    (customize hook: after every package)
# Why: the kernel's postinst, initramfs-tools' and udev's triggers each run update-initramfs;
# under qemu-user one mkinitramfs with Debian's MODULES=most (hundreds of modules, a
# modprobe per module, each an emulated process) ran for more than 20 minutes. Here it is
# diverted while packages install, then run once with MODULES=list: the few modules a
# Raspberry Pi needs to mount its root from the SD card.
set -euo pipefail
step="$1" root="$2"
in_root() { env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 chroot "$root" "$@"; }
real=/usr/sbin/update-initramfs
case "$step" in
    divert)
        in_root dpkg-divert --local --rename --divert "$real.betbox-build" --add "$real" >/dev/null
        printf '#!/bin/sh\n# diverted during the image build: image/initramfs.sh runs it once at its end\nexit 0\n' > "$root$real"
        chmod 0755 "$root$real" ;;
    build)
        rm -f "$root$real"
        in_root dpkg-divert --local --rename --divert "$real.betbox-build" --remove "$real" >/dev/null
        # a root without a kernel (--rootfs-only) has no /lib/modules: ls fails, which under
        # pipefail and errexit would end the build here instead of saying so below
        kver="$(ls "$root/lib/modules" 2>/dev/null | sort -V | tail -n 1 || true)"
        [ -n "$kver" ] && [ -x "$root$real" ] || { echo "initramfs: no kernel in this root (rootfs only)"; exit 0; }
        cat > "$root/etc/initramfs-tools/conf.d/betbox.conf" <<'CONF'
# betbox: only the modules listed in /etc/initramfs-tools/modules (image/initramfs.sh)
MODULES=list
COMPRESS=zstd
COMPRESSLEVEL=3
CONF
        cat > "$root/etc/initramfs-tools/modules" <<'MODULES'
# betbox: what a Raspberry Pi 3/4/5 needs to mount its root from the SD card
# (Debian's arm64 kernel builds these as modules; their dependencies come along)
gpio-raspberrypi-exp
clk-raspberrypi
reset-raspberrypi
bcm2835-dma
bcm2835
sdhci-iproc
sdhci-brcmstb
mmc_block
ext4
vfat
nls_cp437
nls_ascii
MODULES
        # raspi-firmware writes cmdline.txt from this (customize.sh writes the final one)
        printf "ROOTPART=LABEL=rootfs\n" >> "$root/etc/default/raspi-firmware"
        started=$(date +%s)
        in_root update-initramfs -c -k "$kver"
        # raspi-firmware's kernel hook ran while the initramfs was missing: again, now it is there
        [ -x "$root/etc/kernel/postinst.d/z50-raspi-firmware" ] && in_root /etc/kernel/postinst.d/z50-raspi-firmware "$kver" || true
        echo "initramfs: $kver, $(du -h "$root/boot/initrd.img-$kver" | cut -f1), made in $(( $(date +%s) - started )) s"
        ;;
    *) echo "image/initramfs.sh: step must be divert or build, not '$step'" >&2; exit 2 ;;
esac
