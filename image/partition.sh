#!/usr/bin/env bash
# The card image from a built root: partitions made from directories, placed with sfdisk.
#   usage: image/partition.sh ROOTFS WORKDIR IMAGE ROLE
#   1 BOOT    FAT   /boot/firmware (the Pi's firmware, kernel, initramfs), read-only
#   2 rootfs  ext4  /, mounted read-only
#   3 state   ext4  /var/lib/betbox: journals, outboxes, the slot file, RAUC's data
#   4 (extended: an MBR holds four primaries; the Pi 3 boots from MBR only)
#   5 app.0   ext4  application slot A: the release, mounted at /opt/betbox/current
#   6 app.1   ext4  application slot B: empty until the first update (RAUC writes it)
set -euo pipefail
rootfs="$1" work="$2" img="$3" role="$4"
release="$(readlink "$rootfs/opt/betbox/current")"             # releases/<version>
boot_mb=256 state_mb=512
app_mb=$(( $(du -sm "$rootfs/opt/betbox/$release" | cut -f1) * 15 / 10 + 64 ))   # room for bigger releases
# the root without what lives on other partitions: boot firmware, the releases (the slot has it)
hold="$work/hold"; mkdir -p "$hold"
mv "$rootfs/boot/firmware" "$hold/firmware"; mkdir "$rootfs/boot/firmware"
mv "$rootfs/opt/betbox/releases" "$hold/releases"; mkdir "$rootfs/opt/betbox/releases"
rm "$rootfs/opt/betbox/current"; mkdir "$rootfs/opt/betbox/current"
restore() {
    rmdir "$rootfs/boot/firmware" "$rootfs/opt/betbox/releases" "$rootfs/opt/betbox/current" 2>/dev/null || true
    [ -d "$hold/firmware" ] && mv "$hold/firmware" "$rootfs/boot/firmware"
    [ -d "$hold/releases" ] && mv "$hold/releases" "$rootfs/opt/betbox/releases"
    [ -e "$rootfs/opt/betbox/current" ] || ln -s "$release" "$rootfs/opt/betbox/current"
}
trap restore EXIT
root_mb=$(( $(du -sm "$rootfs" | cut -f1) * 13 / 10 + 128 ))
mkfs.vfat -n BOOT -C "$work/boot.vfat" $(( boot_mb * 1024 )) >/dev/null
mcopy -s -i "$work/boot.vfat" "$hold"/firmware/* ::/
mkfs.ext4 -q -L rootfs -d "$rootfs" "$work/root.ext4" "${root_mb}M"
mkfs.ext4 -q -L app-a -d "$hold/releases/${release#releases/}" "$work/app-a.ext4" "${app_mb}M"
mkfs.ext4 -q -L app-b "$work/app-b.ext4" "${app_mb}M"
mkdir -p "$work/state/boot"; cp -a "$rootfs/var/lib/betbox/." "$work/state/" 2>/dev/null || true
printf 'primary=A\nstate_A=good\nstate_B=bad\n' > "$work/state/boot/appslot.env"   # the slot file
mkfs.ext4 -q -L state -d "$work/state" "$work/state.ext4" "${state_mb}M"
total_mb=$(( 4 + boot_mb + root_mb + 3 * 2 + 2 * app_mb + state_mb + 4 ))
rm -f "$img"; truncate -s "${total_mb}M" "$img"
# (the extended partition's start is given: else sfdisk puts it in the free MiBs before BOOT)
sfdisk -q "$img" <<LAYOUT
label: dos
start=4MiB, size=${boot_mb}MiB, type=c, bootable
size=${root_mb}MiB, type=83
size=${state_mb}MiB, type=83
start=$(( 4 + boot_mb + root_mb + state_mb ))MiB, type=5
size=${app_mb}MiB, type=83
size=${app_mb}MiB, type=83
LAYOUT
# each file system at its partition's start, read back from the table sfdisk wrote
place() {
    local start
    start="$(sfdisk -d "$img" | sed -n "s|^$img$2 : start= *\([0-9]*\),.*|\1|p")"
    [ -n "$start" ] || { echo "image/partition.sh: partition $2 missing in $img" >&2; exit 1; }
    dd if="$1" of="$img" bs=4M seek="$(( start * 512 ))" oflag=seek_bytes conv=notrunc,sparse status=none
}
place "$work/boot.vfat" 1
place "$work/root.ext4" 2
place "$work/app-a.ext4" 5
place "$work/app-b.ext4" 6
place "$work/state.ext4" 3
echo "partition: $img: boot ${boot_mb} MiB, root ${root_mb} MiB, app.0/app.1 ${app_mb} MiB each, state ${state_mb} MiB ($role)"
