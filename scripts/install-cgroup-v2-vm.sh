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
# The kernel also uncompressed (vmlinux), when it has a PVH entry: qemu then starts it directly,
# without the firmware's real-mode boot and the decompression of vmlinuz, which under emulation
# took ~13 s of each boot here (a boot to a shell and power-off: 20.4 s -> 7.0 s). Without one
# (tests/vm/qemu.py boots vmlinuz then) it says so and succeeds.
extract_pvh_kernel() {
    python3 - "$1" "$2" <<'PY' || echo "install-cgroup-v2-vm: no $2 extracted; the VM boots $1 (slower)" >&2
import gzip, io, lzma, os, struct, sys


def pvh_entry(elf: bytes) -> bool:
    """Whether this ELF kernel has Xen's PHYS32_ENTRY note (18), which qemu boots through PVH."""
    if elf[:5] != b"\x7fELF\x02":
        return False
    (phoff,) = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    for i in range(phnum):
        p_type, _, offset, _, _, size = struct.unpack_from("<IIQQQQ", elf, phoff + i * phentsize)
        pos, end = offset, offset + size
        while p_type == 4 and pos + 12 <= end:  # PT_NOTE
            namesz, descsz, kind = struct.unpack_from("<III", elf, pos)
            if elf[pos + 12 : pos + 12 + namesz].rstrip(b"\0") == b"Xen" and kind == 18:
                return True
            pos += 12 + (namesz + 3) // 4 * 4 + (descsz + 3) // 4 * 4
    return False


def unxz(data: bytes) -> bytes:
    return lzma.LZMADecompressor(lzma.FORMAT_XZ).decompress(data)


def gunzip(data: bytes) -> bytes:
    return gzip.GzipFile(fileobj=io.BytesIO(data)).read()


src, dest = sys.argv[1], sys.argv[2]
data = open(src, "rb").read()
for magic, unpack in ((b"\xfd7zXZ\x00", unxz), (b"\x1f\x8b\x08", gunzip)):
    at = data.find(magic)
    while at >= 0:
        try:
            elf = unpack(data[at:])
        except (lzma.LZMAError, OSError, EOFError):
            elf = b""
        if pvh_entry(elf):
            with open(dest + ".part", "wb") as out:
                out.write(elf)
            os.replace(dest + ".part", dest)
            sys.exit(0)
        at = data.find(magic, at + 1)
sys.exit(f"no PVH-bootable kernel found inside {src}")
PY
}
# ext4.ko: a kernel installed before the workspace disk existed is refreshed
if [ -f "$dest/vmlinuz" ] && [ -f "$dest/modules/ext4.ko" ]; then
    [ -f "$dest/vmlinux" ] || extract_pvh_kernel "$dest/vmlinuz" "$dest/vmlinux"
    exit 0
fi

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
extract_pvh_kernel kernel/vmlinuz kernel/vmlinux
find lib/modules -name '*.ko' -exec cp {} kernel/modules/ \;
basename boot/vmlinuz-* | sed 's/^vmlinuz-//' >kernel/release
mkdir -p "$(dirname "$dest")"
rm -rf "$dest"
mv kernel "$dest"
