"""Small files replaced whole: a reader sees the old bytes or the new ones, never a torn file.

Every such write goes through a temporary file beside the target and `os.replace`. A failed write
(a full disk, a read-only folder, an interrupt) must not leave that temporary file behind: a
0-byte `.tmp` in the index folder is litter a user has to explain, and one per failed attempt
adds up on a disk that is already full.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
from pathlib import Path

_serial = itertools.count()


def replace_file(path: Path, data: bytes) -> None:
    """Write `data` to `path` atomically; raises OSError with no temporary file left behind.

    The temporary name carries the process, the thread and a counter, so two threads (or two
    processes) writing the same target at once never write into one temporary file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.{next(_serial)}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise
