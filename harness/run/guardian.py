"""The guardian: a small process of its own session that outlives the harness. The harness
holds a pipe to it; when the pipe closes without a `done` line (the harness was SIGKILLed,
OOM-killed or crashed), it ends the workload's processes at once, removes the perf FIFO
folders and marks the run `abandoned`.

`python -m harness.run.guardian TOKEN [VERSION ROOT]`: the owner token, and the cgroup
hierarchy in use; it reads the run directories to watch from stdin, one a line.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

from harness.run import leftovers
from harness.run.cgroup import Hierarchy

DONE = "done"
WAIT_S = 5.0


class Guardian:
    def __init__(self, token: str, hierarchy: Hierarchy | None) -> None:
        read, self.pipe = os.pipe()
        where = [str(hierarchy.version), str(hierarchy.root)] if hierarchy else []
        env = {k: v for k, v in os.environ.items() if k != leftovers.ENV_MARK}
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "harness.run.guardian", token, *where],
                stdin=read,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # a Ctrl-C or a hang-up of the terminal spares it
                env=env,
            )
        finally:
            os.close(read)

    def watch(self, run_dir: Path) -> None:
        os.write(self.pipe, f"{run_dir}\n".encode())

    def close(self, finished: bool = True) -> None:
        """finished: the harness ends normally, and the guardian leaves without doing anything;
        otherwise the guardian cleans up as if the harness had died."""
        if not finished:
            os.close(self.pipe)
            return  # it works on after the harness has exited
        with contextlib.suppress(OSError):  # it died: nothing to tell it
            os.write(self.pipe, f"{DONE}\n".encode())
        os.close(self.pipe)
        try:
            self.proc.wait(WAIT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def main(argv: list[str]) -> int:
    token = argv[0]
    hierarchy = Hierarchy(int(argv[1]), Path(argv[2])) if len(argv) == 3 else None
    runs: list[Path] = []
    for line in sys.stdin:
        if line.strip() == DONE:
            return 0
        runs.append(Path(line.strip()))
    # EOF without `done`: the harness is gone. Its processes first, then the records and
    # the partial files (mark() removes the perf folders too).
    ended = leftovers.end_processes(token, hierarchy)
    from harness.run.abandoned import mark  # pydantic and the model: only when needed
    from harness.rundoc.jsonfile import RunLoadError, load_run

    for folder in runs:
        try:
            run = load_run(folder)
        except RunLoadError:
            continue
        if run.status == "running":
            mark(folder, run, hierarchy, "found by its guardian", ended)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
