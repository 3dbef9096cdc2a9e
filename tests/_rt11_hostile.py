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

#: The executor marks each event after its hello with the session's secret (round 51); the image's
#: shell is the executor and has it. The filter sees each event without it (``$l``), and each line
#: it prints with ``printf`` or ``echo`` gets it back, in the same single write.
_MARKS = r"""_tk=
printf() {
  [ -n "$_tk" ] || { command printf "$@"; return; }
  _fmt=$1; shift; _nf="$_tk "
  while :; do
    case $_fmt in
      *'\n'?*) _nf="$_nf${_fmt%%'\n'*}\\n$_tk "; _fmt=${_fmt#*'\n'} ;;
      *) _nf="$_nf$_fmt"; break ;;
    esac
  done
  command printf "$_nf" "$@"
}
echo() { if [ -n "$_tk" ]; then command echo "$_tk $*"; else command echo "$@"; fi; }
"""
_UNMARK = (
    '_f=${l%% *}; [ "${#_f}" = 32 ] && case ${l#* } in [SEXKPZ]" "*) l=${l#* }; _tk=$_f ;; esac\n'
)


def build_hostile(name: str, *, pre: str = "", filter: str = 'printf "%s\\n" "$l"') -> str:
    """Build (once per content: docker's cache) image ``name`` from busybox with a lying /bin/sh."""
    require_docker()
    script = f'#!/bin/busybox ash\n{_MARKS}{pre}\n/bin/busybox ash "$@" | while IFS= read -r l; do\n{_UNMARK}{filter}\ndone\n'
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
