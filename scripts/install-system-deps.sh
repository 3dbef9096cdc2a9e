#!/bin/sh
# System packages the full test suite needs, from Debian's packages:
#   bubblewrap (bwrap sandbox), ripgrep (Grep fast path; the pure-Python fallback
#   is tested too), docker.io (docker sandbox), debootstrap + busybox-static
#   (registry-free test images), procps/iproute2 (process and network checks),
#   strace (the session CPU test watches an init server).
# Idempotent and quiet when everything is present.
set -eu

missing=""
command -v bwrap >/dev/null 2>&1 || missing="$missing bubblewrap"
command -v rg >/dev/null 2>&1 || missing="$missing ripgrep"
command -v dockerd >/dev/null 2>&1 || missing="$missing docker.io"
command -v debootstrap >/dev/null 2>&1 || missing="$missing debootstrap"
[ -x /bin/busybox ] || missing="$missing busybox-static"
command -v ps >/dev/null 2>&1 || missing="$missing procps"
command -v ip >/dev/null 2>&1 || missing="$missing iproute2"
# the docker bridge firewall: an nftables table loaded into each bridge container's netns
command -v nft >/dev/null 2>&1 || missing="$missing nftables"
# bwrap as root: nsenter (the session's idmapped mount namespace) and setpriv (the sandbox uid)
command -v nsenter >/dev/null 2>&1 || missing="$missing util-linux"
command -v setpriv >/dev/null 2>&1 || missing="$missing util-linux"
command -v gcc >/dev/null 2>&1 || missing="$missing gcc libc6-dev"
# building the newer git the git tests also run against (install-newer-git.sh)
[ -f /usr/include/zlib.h ] || missing="$missing zlib1g-dev"
command -v make >/dev/null 2>&1 || missing="$missing make"
command -v xz >/dev/null 2>&1 || missing="$missing xz-utils"
# watching an init server's system calls (tests/test_zyg22_session_cpu.py)
command -v strace >/dev/null 2>&1 || missing="$missing strace"

if [ -n "$missing" ]; then
    echo "install-system-deps: installing$missing" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq $missing >/dev/null
fi
