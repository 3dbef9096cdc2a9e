#!/bin/sh
# What tests/test_cgroup_v2_vm.py boots: qemu, and Debian's kernel (bookworm: 6.1),
# with a unified cgroup v2 hierarchy, because this machine and CI mount
# memory/pids/cpu as cgroup v1 and the v2 path of sandbox/_cgroup.py must be
# tested for real. Only vmlinuz and the virtio + 9p modules (the host root) and the
# virtio-blk + ext4 ones (a workspace disk that supports idmapped mounts) are kept: the kernel
# package is downloaded with `apt-get download`, not installed (no initramfs
# build, nothing in the host's /boot or /lib/modules). busybox-static comes from
# install-system-deps.sh. Idempotent and quiet when everything is present.
#
#   sh scripts/install-cgroup-v2-vm.sh [DIR]   # kernel into DIR, default /opt/shellrt-vm-kernel
set -eu

dest="${1:-/opt/shellrt-vm-kernel}"
export DEBIAN_FRONTEND=noninteractive
if ! command -v qemu-system-x86_64 >/dev/null 2>&1; then
    echo "install-cgroup-v2-vm: installing qemu-system-x86" >&2
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends qemu-system-x86 >/dev/null
fi
if ! command -v mkfs.ext4 >/dev/null 2>&1 || ! command -v debugfs >/dev/null 2>&1; then
    echo "install-cgroup-v2-vm: installing e2fsprogs (the ext4 workspace disk)" >&2
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends e2fsprogs >/dev/null
fi
# ext4.ko: a kernel installed before the workspace disk existed is refreshed
[ -f "$dest/vmlinuz" ] && [ -f "$dest/modules/ext4.ko" ] && exit 0

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
# the linux-image-amd64 metapackage names the current kernel package
kernel_package() {
    apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -n 1
}
package="$(kernel_package)"
if [ -z "$package" ]; then
    apt-get update -qq
    package="$(kernel_package)"
fi
[ -n "$package" ] || { echo "install-cgroup-v2-vm: apt knows no linux-image-amd64 kernel package" >&2; exit 1; }
echo "install-cgroup-v2-vm: fetching $package" >&2
chown _apt "$work" 2>/dev/null || true
apt-get download -qq "$package" >/dev/null
dpkg-deb --fsys-tarfile ./*.deb | tar -x --wildcards \
    './boot/vmlinuz-*' \
    './lib/modules/*/kernel/drivers/virtio/virtio.ko' \
    './lib/modules/*/kernel/drivers/virtio/virtio_ring.ko' \
    './lib/modules/*/kernel/drivers/virtio/virtio_pci*.ko' \
    './lib/modules/*/kernel/net/9p/9pnet.ko' \
    './lib/modules/*/kernel/net/9p/9pnet_virtio.ko' \
    './lib/modules/*/kernel/fs/netfs/netfs.ko' \
    './lib/modules/*/kernel/fs/fscache/fscache.ko' \
    './lib/modules/*/kernel/fs/9p/9p.ko' \
    './lib/modules/*/kernel/drivers/block/virtio_blk.ko' \
    './lib/modules/*/kernel/crypto/crc32c_generic.ko' \
    './lib/modules/*/kernel/lib/crc16.ko' \
    './lib/modules/*/kernel/fs/mbcache.ko' \
    './lib/modules/*/kernel/fs/jbd2/jbd2.ko' \
    './lib/modules/*/kernel/fs/ext4/ext4.ko'
mkdir -p kernel/modules
cp boot/vmlinuz-* kernel/vmlinuz
find lib/modules -name '*.ko' -exec cp {} kernel/modules/ \;
basename boot/vmlinuz-* | sed 's/^vmlinuz-//' >kernel/release
mkdir -p "$(dirname "$dest")"
rm -rf "$dest"
mv kernel "$dest"
