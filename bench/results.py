"""Write one benchmark's section into bench/RESULTS.md, replacing that section from an earlier run."""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path


def machine() -> str:
    """One line naming the machine, so numbers are never quoted without it."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{cores} cores ({cpu}), {mem:.0f} GiB RAM, Python {platform.python_version()}, {platform.system()}"
    )


def write_section(path: Path, name: str, body: str) -> None:
    """Replace `<!-- bench:name -->...<!-- /bench:name -->` in `path` (or append it)."""
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    block = f"{start}\n{body.rstrip()}\n{end}"
    text = (
        path.read_text(encoding="utf-8")
        if path.exists()
        else "# Benchmark results\n\nWritten by `make bench`.\n"
    )
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.DOTALL)
    text = (
        pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    )
    path.write_text(text, encoding="utf-8")
