#!/bin/sh
# Installs Debian's chromium for the dashboard's browser test when
# /usr/bin/chromium (or $CHROMIUM) is absent; does nothing otherwise.
set -eu
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [ -x "$CHROMIUM" ]; then
	exit 0
fi
SUDO=
if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
fi
echo "install-chromium: $CHROMIUM is missing; installing Debian's chromium" >&2
$SUDO apt-get update
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium
