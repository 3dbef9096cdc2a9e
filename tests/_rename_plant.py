"""A sandboxed command's script that swaps shellrt's host directories in a shared temp dir.

Every directory named ``prefix*`` in the workspace's ``tmp/`` is renamed away (``.gone``) and one of
the command's own is made at its name holding ``rel`` with ``content``: what a command whose root
covers another process's ``TMPDIR`` can do to a directory made there by path (red team rounds 30
and 31, mend). It prints ``REPLACED n``.
"""

from __future__ import annotations


def rename_and_plant(prefix: str, rel: str, content: bytes) -> str:
    """The command's Python source (run from the workspace root)."""
    return f"""
import os
n = 0
for d in os.listdir("tmp"):
    if d.startswith({prefix!r}) and not d.endswith(".gone"):
        os.rename(os.path.join("tmp", d), os.path.join("tmp", d + ".gone"))
        planted = os.path.join("tmp", d, {rel!r})
        os.makedirs(os.path.dirname(planted))
        with open(planted, "wb") as fh:
            fh.write({content!r})
        n += 1
print("REPLACED", n)
"""
