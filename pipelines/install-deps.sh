#!/bin/sh
# Install the Debian packages listed in $1 that are not installed yet; apt-get only when needed.
set -eu
list=${1:-configs/debian-packages-run.txt}
missing=""
for p in $(grep -v '^#' "$list"); do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "install-deps: installing:$missing" >&2
if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing packages:$missing (run as root or install them)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq $missing >/dev/null
