"""The JVM on this machine, for `harness doctor` and the gc probe's JVM part: where the `java`
on PATH keeps its libjvm.so, and whether that libjvm carries HotSpot's USDT probes (SystemTap
SDT notes, as Debian's OpenJDK builds have)."""

from __future__ import annotations

import shutil
from pathlib import Path

from harness.checks import Check

USDT_PROBES = (b"gc__begin", b"gc__end", b"safepoint__begin", b"safepoint__end")
FIX = "apt install openjdk-17-jdk-headless (Debian's build carries the USDT probes)"


def libjvm_of_path_java() -> Path | None:
    """<java home>/lib/server/libjvm.so of the `java` on PATH, if it is there."""
    java = shutil.which("java")
    if java is None:
        return None
    home = Path(java).resolve().parent.parent
    candidate = home / "lib" / "server" / "libjvm.so"
    return candidate if candidate.is_file() else None


def missing_usdt(libjvm: Path) -> list[str]:
    """The probes of USDT_PROBES that libjvm's SDT notes do not name."""
    data = libjvm.read_bytes()
    if b"stapsdt" not in data:
        return [p.decode() for p in USDT_PROBES]
    return [p.decode() for p in USDT_PROBES if p + b"\0" not in data]


def check_usdt(_root: Path) -> Check:
    """`harness doctor`'s line: the JVM's GC and safepoint USDT probes (the gc probe's JVM part)."""
    libjvm = libjvm_of_path_java()
    if libjvm is None:
        return Check("jvm usdt", "missing", "no java on PATH (or no lib/server/libjvm.so)", FIX)
    missing = missing_usdt(libjvm)
    if missing:
        detail = (
            f"{libjvm} lacks the USDT probes {', '.join(missing)}: the gc probe cannot see JVMs"
        )
        return Check("jvm usdt", "missing", detail, FIX + " (or a JDK built with --enable-dtrace)")
    probes = ", ".join(p.decode() for p in USDT_PROBES)
    return Check("jvm usdt", "ok", f"{libjvm} has {probes}: the gc probe can attach to JVMs")
