#!/usr/bin/env bash
# Installs what toolgate's tests need on a fresh Debian machine. Idempotent:
# it installs only what is missing.
set -euo pipefail

need_apt=()
command -v git >/dev/null || need_apt+=(git)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "installing Debian packages: ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}"
fi
go mod download
