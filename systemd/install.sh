#!/bin/sh
# Install betbox on Raspberry Pi OS: ./install.sh dealer|seat|jackpot [CONFIG]
# Creates the betbox user, installs the package, the configuration and the unit file,
# validates the configuration and starts the unit.
set -eu
role="${1:?usage: install.sh dealer|seat|jackpot [CONFIG]}"
case "$role" in dealer|seat|jackpot) ;; *) echo "role must be dealer, seat or jackpot" >&2; exit 2 ;; esac
here="$(cd "$(dirname "$0")" && pwd)"
config="${2:-$here/../docs/examples/$role.toml}"
id betbox >/dev/null 2>&1 || useradd --system --home /var/lib/betbox --shell /usr/sbin/nologin betbox
case "$role" in
  dealer) usermod -aG dialout,gpio betbox 2>/dev/null || true ;;
  seat) usermod -aG dialout,gpio,video,render,input betbox 2>/dev/null || true ;;
esac
python3 -m pip install --break-system-packages "$here/.."
ln -sf "$(command -v betbox)" /usr/local/bin/betbox 2>/dev/null || true
install -d -o root -g betbox -m 0750 /etc/betbox
install -o root -g betbox -m 0640 "$config" "/etc/betbox/$role.toml"
install -d -o betbox -g betbox -m 0750 /var/lib/betbox
# a seat counts chips from its registry (docs/chips.md); the example until the casino's own is there
if [ "$role" = seat ] && [ ! -e /etc/betbox/chips.csv ]; then
  install -o root -g betbox -m 0640 "$here/../docs/examples/chips.csv" /etc/betbox/chips.csv
fi
/usr/local/bin/betbox run --config "/etc/betbox/$role.toml" --check
install -m 0644 "$here/betbox-$role.service" /etc/systemd/system/
systemctl daemon-reload
systemctl enable --now "betbox-$role.service"
echo "betbox $role unit installed; journal: /var/lib/betbox/$role; logs: journalctl -u betbox-$role"
