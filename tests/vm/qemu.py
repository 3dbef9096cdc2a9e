"""Boot a throwaway cgroup-v2 Linux VM that runs one Python program of this repo, and collect its output.

Why: this machine and CI mount memory/pids/cpu as cgroup v1 controllers, so
`sandbox._cgroup`'s v2 path (one unified hierarchy) could never run here. A VM
with its own kernel can mount cgroup2 with every controller: qemu boots the
kernel from ``scripts/install-cgroup-v2-vm.sh`` with a tiny initramfs built here
(busybox + the virtio/9p modules), which mounts the host's ``/`` read-only over
virtio-9p, mounts cgroup2 on ``/sys/fs/cgroup`` and runs the program as pid 1's
child with the host's own Python. The program writes its results into a
directory shared read-write with the host (a second 9p export). No systemd,
nothing written outside the temp directory; a raw disk image the caller made
(``disk=``) is attached as /dev/vda. qemu uses KVM when
the host has hardware KVM (kvm_intel/kvm_amd) and emulates otherwise (TCG): the
machines this project runs on are VMs whose /dev/kvm is PVM, which boots only
PVM-aware guest kernels (a stock kernel hangs after decompression).
"""

from __future__ import annotations

import fcntl
import gzip
import os
import re
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

KERNEL_DIR = Path(os.environ.get("SHELLRT_VM_KERNEL", "/opt/shellrt-vm-kernel"))
QEMU = "qemu-system-x86_64"
BUSYBOX = Path("/bin/busybox")
#: The modules that mount the host root over virtio-9p, then those of a virtio-blk ext4 disk (ext4
#: supports idmapped mounts, 9p does not); loaded in the order their ``depends=`` give. crc32c is
#: ext4's soft dependency (metadata checksums), which no modprobe here would resolve.
MODULES = (
    "virtio_ring",
    "virtio",
    "virtio_pci_modern_dev",
    "virtio_pci_legacy_dev",
    "virtio_pci",
    "9pnet",
    "9pnet_virtio",
    "netfs",
    "fscache",
    "9p",
    "virtio_blk",
    "crc32c_generic",
    "ext4",
)
_KVM_CREATE_VM = 0xAE01


def missing_parts() -> list[str]:
    """What this machine lacks to boot the VM (empty: it can), each saying how to get it."""
    missing = []
    if shutil.which(QEMU) is None:
        missing.append(f"{QEMU} (sh scripts/install-cgroup-v2-vm.sh)")
    if not (KERNEL_DIR / "vmlinuz").is_file():
        missing.append(f"a kernel in {KERNEL_DIR} (sh scripts/install-cgroup-v2-vm.sh)")
    if not BUSYBOX.is_file():
        missing.append(f"{BUSYBOX} (apt-get install busybox-static)")
    for tool in ("mkfs.ext4", "debugfs"):  # the ext4 workspace disk: made, and read back
        if shutil.which(tool) is None:
            missing.append(f"{tool} (apt-get install e2fsprogs)")
    return missing


def boot_image() -> Path:
    """The uncompressed kernel when the install script extracted one with a PVH entry (qemu starts
    it directly: no firmware boot path and no decompression, ~13 s of each emulated boot here),
    else the compressed one."""
    pvh = KERNEL_DIR / "vmlinux"
    return pvh if pvh.is_file() else KERNEL_DIR / "vmlinuz"


def kvm_unusable_reason() -> str | None:
    """None when qemu can use KVM for a stock kernel here, else why not (then it emulates: TCG)."""
    if not any(Path(f"/sys/module/{m}").exists() for m in ("kvm_intel", "kvm_amd")):
        pvm = " (this host's KVM is PVM, which boots only PVM-aware guest kernels)"
        return "no hardware KVM module is loaded" + (pvm if Path("/sys/module/kvm_pvm").exists() else "")
    try:
        fd = os.open("/dev/kvm", os.O_RDWR | os.O_CLOEXEC)
    except OSError as exc:
        return f"/dev/kvm cannot be opened ({exc.strerror})"
    try:
        os.close(fcntl.ioctl(fd, _KVM_CREATE_VM, 0))
    except OSError as exc:
        return f"/dev/kvm cannot create a VM ({exc.strerror}): nested virtualisation is off"
    finally:
        os.close(fd)
    return None


def _module_depends(path: Path) -> list[str]:
    match = re.search(rb"depends=([^\0]*)\0", path.read_bytes())
    return [name for name in (match.group(1).decode() if match else "").split(",") if name]


def _load_order(modules_dir: Path) -> list[str]:
    """MODULES ordered so that each comes after the modules it depends on."""
    order: list[str] = []

    def visit(name: str) -> None:
        if name in order:
            return
        path = modules_dir / f"{name}.ko"
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing: rerun sh scripts/install-cgroup-v2-vm.sh")
        for dependency in _module_depends(path):
            visit(dependency)
        order.append(name)

    for name in MODULES:
        visit(name)
    return order


def _cpio_entry(name: str, mode: int, data: bytes = b"") -> bytes:
    """One 'newc' cpio record (the initramfs format)."""
    encoded = name.encode() + b"\0"
    fields = [0, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(encoded), 0]
    header = b"070701" + b"".join(b"%08X" % value for value in fields)
    record = header + encoded
    record += b"\0" * (-len(record) % 4)
    record += data + b"\0" * (-len(data) % 4)
    return record


_INIT = """#!/bin/busybox sh
/bin/busybox --install -s /bin
mkdir -p /proc /sys /dev /newroot
mount -t proc proc /proc
mount -t devtmpfs devtmpfs /dev
for m in {modules}; do insmod /modules/$m.ko || echo "VM-INIT: insmod $m failed"; done
o=trans=virtio,version=9p2000.L,msize=262144
mount -t 9p -o $o,ro,cache=loose hostroot /newroot || echo "VM-INIT: cannot mount the host root"
mount -t 9p -o $o out /newroot/{out} || echo "VM-INIT: cannot mount the output directory"
mount -t proc proc /newroot/proc
mount -t sysfs sysfs /newroot/sys
mount -t cgroup2 cgroup2 /newroot/sys/fs/cgroup
mount -t devtmpfs devtmpfs /newroot/dev
mkdir -p /newroot/dev/shm
mount -t tmpfs -o mode=1777 tmpfs /newroot/dev/shm
mkdir /newroot/dev/shm/.vm
cp /bin/busybox /stage2 /newroot/dev/shm/.vm/
umount /proc
echo "VM-INIT: running the program"
# switch_root, not chroot: the kernel refuses user namespaces (bwrap) to a chrooted process
exec switch_root /newroot /dev/shm/.vm/busybox sh /dev/shm/.vm/stage2
"""
_STAGE2 = """cd /
/usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME=/dev/shm \\
    TMPDIR=/dev/shm PYTHONDONTWRITEBYTECODE=1 PYTHONPATH={pythonpath} \\
    {python} {program} {out} {args} >{out}/stdout 2>{out}/stderr
echo $? >{out}/exit-status
sync
echo "VM-INIT: done, $(cut -d' ' -f1 /proc/uptime) s after boot"
/dev/shm/.vm/busybox poweroff -f
"""


def build_initramfs(
    directory: Path, *, python: str, program: Path, args: tuple[str, ...], pythonpath: Path, out: Path
) -> Path:
    """A gzip'd cpio initramfs in ``directory`` whose /init runs ``program`` and powers off."""
    modules_dir = KERNEL_DIR / "modules"
    order = _load_order(modules_dir)
    q = shlex.quote
    init = _INIT.format(modules=" ".join(order), out=q(str(out)))
    stage2 = _STAGE2.format(
        out=q(str(out)),
        python=q(python),
        program=q(str(program)),
        args=" ".join(map(q, args)),
        pythonpath=q(str(pythonpath)),
    )
    records = [
        _cpio_entry("bin", 0o040755),
        _cpio_entry("modules", 0o040755),
        _cpio_entry("bin/busybox", 0o100755, BUSYBOX.read_bytes()),
        _cpio_entry("init", 0o100755, init.encode()),
        _cpio_entry("stage2", 0o100644, stage2.encode()),
    ]
    records += [
        _cpio_entry(f"modules/{n}.ko", 0o100644, (modules_dir / f"{n}.ko").read_bytes()) for n in order
    ]
    records.append(_cpio_entry("TRAILER!!!", 0))
    path = directory / "initramfs.cpio.gz"
    path.write_bytes(gzip.compress(b"".join(records), compresslevel=1))
    return path


@dataclass(frozen=True)
class VmRun:
    """What one boot produced."""

    exit_status: int | None  # the program's exit status (None: it never finished)
    stdout: str
    stderr: str
    console: str  # the kernel console and init's messages
    seconds: float  # from qemu start to its exit
    accelerator: str  # "kvm", or "tcg" (emulation, several times slower)
    kernel_release: str


def run_in_vm(
    program: Path,
    *args: str,
    workdir: Path,
    pythonpath: Path,
    python: str = "/usr/bin/python3",
    timeout: float = 120,
    disk: Path | None = None,
) -> VmRun:
    """Boot the VM, run ``python program OUT *args`` in it as root, and return what it left in OUT."""
    out = workdir / "out"
    out.mkdir()
    initramfs = build_initramfs(
        workdir, python=python, program=program, args=args, pythonpath=pythonpath, out=out
    )
    console = workdir / "console.log"
    accel = ["-accel", "tcg"] if kvm_unusable_reason() else ["-accel", "kvm", "-cpu", "max"]
    argv = [
        QEMU,
        *accel,
        "-smp",
        "2",
        "-m",
        "768",
        "-nodefaults",
        "-no-reboot",
        "-display",
        "none",
        "-serial",
        f"file:{console}",
        "-kernel",
        str(boot_image()),
        "-initrd",
        str(initramfs),
        "-append",
        # mitigations=off: page-table isolation makes every system call flush the emulated TLB
        # (the run is ~10% faster without); side channels in a throwaway guest are not under test
        "console=ttyS0 panic=-1 loglevel=4 rdinit=/init mitigations=off",
        "-virtfs",
        "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
        "-virtfs",
        f"local,path={out},mount_tag=out,security_model=none",
        *(["-drive", f"file={disk},format=raw,if=virtio"] if disk is not None else []),
    ]
    started = time.monotonic()
    qemu = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    seconds = time.monotonic() - started
    if qemu.returncode != 0:
        raise RuntimeError(f"qemu failed ({qemu.returncode}): {qemu.stderr.strip()}")

    def read(name: str) -> str:
        path = out / name
        return path.read_text(errors="replace") if path.exists() else ""

    status = read("exit-status").strip()
    return VmRun(
        exit_status=int(status) if status.isdigit() else None,
        stdout=read("stdout"),
        stderr=read("stderr"),
        console=console.read_text(errors="replace") if console.exists() else "",
        seconds=seconds,
        accelerator=accel[1],
        kernel_release=(KERNEL_DIR / "release").read_text().strip()
        if (KERNEL_DIR / "release").exists()
        else "?",
    )
