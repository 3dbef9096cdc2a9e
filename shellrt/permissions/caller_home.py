"""The one home a rule's ``~/`` means: the permission layer's and the sandbox masks' alike.

Why: with ``HOME`` empty, relative or ``~``, the permission layer anchored ``Read(~/tok)`` at ``/``
or below the current directory (``Path.home()`` / ``$HOME`` as given; ``HOME=~`` even raised),
while the sandbox compile masked the password database's home: a rule that denied one file in
governance and masked another (red team round 42). Both now call `caller_home`, defined once in
`shellrt.supervisor._caller_home` (the lean `shellrt run`, which loads no permissions, reads it there).
"""

from __future__ import annotations

from shellrt.supervisor._caller_home import caller_home, password_home

__all__ = ["caller_home", "password_home"]
