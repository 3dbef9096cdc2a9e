#!/bin/sh
# Build the docker sandbox test images locally, without any registry.
#
#   shellrt-test-busybox  ~2 MB: busybox-static + applet symlinks (sh, no bash)
#   shellrt-test-debian   debootstrap --variant=minbase bookworm (bash, coreutils)
#   shellrt-test-nosh     scratch + one static binary, no /bin/sh (error-path test)
#
# Idempotent: an image that already exists is skipped. The debootstrap root
# filesystem tarball is cached under $SHELLRT_IMAGE_CACHE (default
# ~/.cache/shellrt-images), keyed by suite, variant and architecture, so CI
# can persist that directory and skip the ~40 s bootstrap. Set FORCE=1 to
# rebuild every image.
set -eu

cache=${SHELLRT_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shellrt-images}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=bookworm
mkdir -p "$cache"

have_image() {
    [ "${FORCE:-0}" != 1 ] && docker image inspect "$1" >/dev/null 2>&1
}

busybox_bin() {
    for b in /bin/busybox /usr/bin/busybox; do
        [ -x "$b" ] && { echo "$b"; return 0; }
    done
    echo "build-test-images: busybox-static is required (apt-get install busybox-static)" >&2
    return 1
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# --- busybox ---------------------------------------------------------------
if have_image shellrt-test-busybox; then
    echo "build-test-images: shellrt-test-busybox exists" >&2
else
    bb=$(busybox_bin)
    root="$tmp/busybox"
    mkdir -p "$root/bin" "$root/tmp" "$root/etc" "$root/workspace" "$root/proc" "$root/sys" "$root/dev"
    cp "$bb" "$root/bin/busybox"
    # Relative links: `busybox --install -s` would point them at the host path.
    for applet in $("$bb" --list); do
        [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
    done
    printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' >"$root/etc/passwd"
    printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
    chmod 1777 "$root/tmp"
    tar -C "$root" -c . | docker import -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' -c 'CMD ["/bin/sh"]' - shellrt-test-busybox >/dev/null
    echo "build-test-images: built shellrt-test-busybox" >&2
fi

# --- no /bin/sh ----------------------------------------------------------------
if have_image shellrt-test-nosh; then
    echo "build-test-images: shellrt-test-nosh exists" >&2
else
    bb=$(busybox_bin)
    root="$tmp/nosh"
    mkdir -p "$root/tool" "$root/tmp"
    cp "$bb" "$root/tool/busybox"
    tar -C "$root" -c . | docker import -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' -c 'CMD ["/tool/busybox", "true"]' - shellrt-test-nosh >/dev/null
    echo "build-test-images: built shellrt-test-nosh" >&2
fi

# --- debian ----------------------------------------------------------------
if have_image shellrt-test-debian; then
    echo "build-test-images: shellrt-test-debian exists" >&2
else
    arch=$(dpkg --print-architecture 2>/dev/null || uname -m)
    tarball="$cache/debian-$suite-minbase-$arch.tar"
    if [ ! -s "$tarball" ]; then
        command -v debootstrap >/dev/null 2>&1 || {
            echo "build-test-images: debootstrap is required (apt-get install debootstrap)" >&2
            exit 1
        }
        root="$tmp/debian"
        echo "build-test-images: debootstrap $suite (minbase) from $mirror ..." >&2
        debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$tmp/debootstrap.log" 2>&1 || {
            tail -n 30 "$tmp/debootstrap.log" >&2
            exit 1
        }
        rm -rf "$root/var/cache/apt/archives/"*.deb "$root/var/lib/apt/lists/"* 2>/dev/null || true
        mkdir -p "$root/workspace"
        tar --numeric-owner -C "$root" -cf "$tarball.part" .
        mv "$tarball.part" "$tarball"
        # Content key, so a CI cache can tell identical root filesystems apart.
        sha256sum "$tarball" | cut -d' ' -f1 >"$tarball.sha256"
    fi
    docker import -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' -c 'CMD ["/bin/bash"]' "$tarball" shellrt-test-debian >/dev/null
    echo "build-test-images: built shellrt-test-debian ($(cat "$tarball.sha256" 2>/dev/null || echo unhashed))" >&2
fi
