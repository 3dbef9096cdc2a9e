"""Red team round 11, docker: images whose ``/bin/sh`` lies on the executor's control channel.

The executor is a script the image's own ``/bin/sh`` interprets, and its stdout is the control
channel: a hostile image owns every event line the host reads. These images wrap busybox's ash:
``pre`` runs first (its output reaches the channel before the real hello), then the real
executor runs with its stdout piped through ``filter`` (sh code seeing each event as ``$l``;
what it prints is what the host reads).
"""

from __future__ import annotations

import io
import subprocess
import tarfile

from tests._docker_support import BUSYBOX, require_docker


def build_hostile(name: str, *, pre: str = "", filter: str = 'printf "%s\\n" "$l"') -> str:
    """Build (once per content: docker's cache) image ``name`` from busybox with a lying /bin/sh."""
    require_docker()
    script = f'#!/bin/busybox ash\n{pre}\n/bin/busybox ash "$@" | while IFS= read -r l; do\n{filter}\ndone\n'
    dockerfile = (
        f"FROM {BUSYBOX}\n"
        "COPY hsh /hsh\n"
        'RUN ["/bin/busybox", "ash", "-c", "rm /bin/sh && mv /hsh /bin/sh && chmod 755 /bin/sh"]\n'
    )
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for member, data in (("Dockerfile", dockerfile), ("hsh", script)):
            raw = data.encode()
            info = tarfile.TarInfo(member)
            info.size, info.mode = len(raw), 0o755
            tar.addfile(info, io.BytesIO(raw))
    subprocess.run(
        ["docker", "build", "-q", "-t", name, "-"], input=buf.getvalue(), capture_output=True, check=True,
        timeout=180,
    )  # fmt: skip
    return name
