"""matplotlib's config and cache folder where the user's own is not writable (a user run
with root's HOME, a HOME it may not write): a private one under the temporary folder, so
that matplotlib does not print its warning and make a new folder on every run."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def ensure_writable() -> None:
    """Set MPLCONFIGDIR (when unset) if matplotlib's default folder cannot be made."""
    if "MPLCONFIGDIR" in os.environ:
        return
    config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "matplotlib"
    with contextlib.suppress(OSError):
        config.mkdir(parents=True, exist_ok=True)
        if os.access(config, os.W_OK | os.X_OK):
            return
    import tempfile  # here: every harness command starts here, and few come this far

    private = Path(tempfile.gettempdir()) / f"harness-matplotlib-{os.getuid()}"
    with contextlib.suppress(OSError):
        private.mkdir(mode=0o700, exist_ok=True)
        if os.access(private, os.W_OK | os.X_OK):
            os.environ["MPLCONFIGDIR"] = str(private)
