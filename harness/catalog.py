"""Which suites a command sees: the workloads folder's, then those of each HARNESS_SUITES_PATH
folder, and any suite folder named by its path on the command line."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.errors import BadInput
from harness.suites import Suite, discover, load_suite, select


@dataclass(frozen=True)
class Shadowed:
    """A suite hidden by an earlier one of the same name in the search order."""

    suite: Suite
    by: Suite


@dataclass(frozen=True)
class Catalog:
    suites: dict[str, Suite]  # by name: the first suite of each name
    shadowed: tuple[Shadowed, ...]

    def hidden_by(self, suite: Suite) -> list[Suite]:
        return [s.suite for s in self.shadowed if s.by is suite]


def find_suites(workloads: Path, suites_path: Sequence[Path]) -> Catalog:
    """The suites of `workloads`, then of each folder of `suites_path`; the first of a name
    wins and the later ones are kept as shadowed."""
    for folder in suites_path:
        if not folder.is_dir():
            raise BadInput(f"HARNESS_SUITES_PATH: {folder} is not a folder")
    suites: dict[str, Suite] = {}
    shadowed: list[Shadowed] = []
    seen: set[Path] = set()
    for root in (workloads, *suites_path):
        for name, suite in discover(root).items():
            manifest = suite.manifest.resolve()
            if manifest in seen:
                continue  # the same folder reached twice, e.g. workloads/ also on the path
            seen.add(manifest)
            if name in suites:
                shadowed.append(Shadowed(suite=suite, by=suites[name]))
            else:
                suites[name] = suite
    return Catalog(suites=suites, shadowed=tuple(shadowed))


def is_path(argument: str) -> bool:
    """A SUITE argument with a `/` or naming an existing folder is a suite folder's path."""
    return "/" in argument or Path(argument).is_dir()


def suite_at(folder: Path) -> Suite:
    """The suite in `folder` (a path given on the command line)."""
    if not folder.exists():
        raise BadInput(f"suite folder {folder.absolute()} does not exist")
    manifest = folder / "suite.toml"
    if not manifest.is_file():
        raise BadInput(f"{folder.absolute()} is not a suite folder: it has no suite.toml")
    return load_suite(manifest)


def choose(
    arguments: Sequence[str] | None, workloads: Path, suites_path: Sequence[Path]
) -> list[Suite]:
    """The suites named by `arguments` (names or folder paths), all when None. The search
    path is read only when a name needs it: a suite given by its path runs on its own."""
    if arguments is None:
        return list(find_suites(workloads, suites_path).suites.values())
    catalog: Catalog | None = None
    chosen: dict[Path, Suite] = {}  # by manifest: a suite named twice runs once
    for argument in arguments:
        if is_path(argument):
            suite = suite_at(Path(argument))
        else:
            catalog = catalog or find_suites(workloads, suites_path)
            (suite,) = select(catalog.suites, [argument])
        chosen.setdefault(suite.manifest.resolve(), suite)
    return list(chosen.values())


NOT_BUILT = "not built: run `make deps`"


def unmet_requirements(suite: Suite) -> str | None:
    """Why the suite cannot run here (commands of its `requires` not on PATH), or None."""
    missing = suite.missing_requirements()
    if not missing:
        return None
    return f"needs {', '.join(missing)}, not found on PATH (see `harness doctor`)"


def require_built(suite: Suite) -> Suite:
    """The suite, if it can run here and its binary exists; bad input otherwise (run and
    bench need it)."""
    if (unmet := unmet_requirements(suite)) is not None:
        raise BadInput(f"suite '{suite.name}' cannot run here: {unmet}")
    if not suite.built:
        raise BadInput(f"suite '{suite.name}' is {NOT_BUILT} (missing {suite.binary})")
    return suite
