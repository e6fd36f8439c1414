"""What a benchmark result records about where it was measured (command, commit, date, machine), and the
size on disk it reports for a pipeline: the pages print both beside every table."""
import datetime
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Optional

from .loading import resolve_model


def provenance() -> Dict[str, Any]:
    """What a benchmark page prints beside each table: the command, the
    commit, the date and the machine it ran on."""
    import numba
    import numpy
    import spacy as _spacy

    from . import __version__
    from .runtime import compiled

    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo", encoding="utf8") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    try:
        mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
    except (ValueError, OSError, AttributeError):
        mem_gib = 0.0
    args = [Path(sys.argv[0]).name if sys.argv[0].endswith("__main__.py") else sys.argv[0], *sys.argv[1:]]
    command = "python -m spacy_sparse " + " ".join(args[1:]) if args[0] == "__main__.py" else " ".join(args)
    return {
        "command": command,
        "commit": commit or f"spacy-sparse {__version__}",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(mem_gib, 1),
                    "python": platform.python_version(), "spacy": _spacy.__version__, "numba": numba.__version__,
                    "numpy": numpy.__version__, "kernels": "compiled" if compiled.COMPILED else "jit"},
    }


def directory_bytes(path: Any) -> Optional[int]:
    """Bytes of every file under a pipeline directory (None if not one)."""
    path = resolve_model(path)
    if not path.is_dir():
        return None
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
