#!/bin/sh
# A git newer than Debian 12's 2.39 for tests/test_tools_bash_git.py, which runs once per git
# binary it finds. Debian 12 has no newer git (bookworm-backports carries none) and Debian 13's
# binary package needs glibc 2.38, so git is built from Debian 13's source package into PREFIX
# (default /opt/shellrt-git) without touching the system git. Idempotent; about 3-10 minutes.
set -eu

prefix="${1:-/opt/shellrt-git}"
[ -x "$prefix/bin/git" ] && exit 0
for tool in gcc make tar xz; do
    command -v "$tool" >/dev/null 2>&1 || { echo "install-newer-git: $tool is missing" >&2; exit 1; }
done
[ -f /usr/include/zlib.h ] || { echo "install-newer-git: zlib1g-dev is missing" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
# The mirror the system already uses for its main Debian archive.
mirror="$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | sed -n 's/^URIs: *//p' | grep -v security | head -n 1)"
[ -n "$mirror" ] || mirror="$(sed -n 's/^deb \([^ ]*\) .*/\1/p' /etc/apt/sources.list 2>/dev/null | grep -v security | head -n 1)"
[ -n "$mirror" ] || { echo "install-newer-git: no Debian mirror in the apt sources" >&2; exit 1; }
echo "deb-src $mirror trixie main" > "$work/sources.list"
apt_opts="-o Dir::Etc::SourceList=$work/sources.list -o Dir::Etc::SourceParts=/dev/null \
-o Dir::State::Lists=$work/lists -o Dir::Cache=$work/cache -o APT::Sandbox::User=root"
# shellcheck disable=SC2086
apt-get $apt_opts -qq update
# shellcheck disable=SC2086
(cd "$work" && apt-get $apt_opts -qq source --download-only git >/dev/null)
tar -xf "$work"/git_*.orig.tar.* -C "$work"
cd "$work"/git-*/
make -j"$(nproc)" NO_GETTEXT=1 NO_TCLTK=1 NO_PERL=1 NO_PYTHON=1 NO_CURL=1 NO_EXPAT=1 NO_OPENSSL=1 \
    NO_INSTALL_HARDLINKS=1 prefix="$prefix" install >/dev/null
"$prefix/bin/git" --version
