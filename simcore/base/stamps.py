"""Stamps of made outputs: the sha256 of every file a command made, recorded when it made them.

A stamp sits beside its output (a file or a directory) as `.<name>.sha256`, in `sha256sum -c`
format with paths relative to the output's parent (`tables/utilization.csv`), so that
`sha256sum -c .tables.sha256` run beside the output checks it by hand. A reader that must
take the output exactly as it was made (the dataset archive) compares it with the stamp:
a file missing, edited or added since is then found, whatever its modification time.
Hidden files (a name starting with '.') are bookkeeping, not part of an output.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from simcore.base.atomic import atomic_write_bytes
from simcore.base.checksums import file_digest

_LINE = re.compile(r"([0-9a-f]{64})  (.+)")


def stamp_path(output: str | os.PathLike[str]) -> Path:
    """Where the stamp of `output` is: `.<name>.sha256` beside it."""
    output = Path(output)
    return output.with_name(f".{output.name}.sha256")


def write_stamp(output: str | os.PathLike[str], files: Iterable[str | os.PathLike[str]]) -> Path:
    """Record the sha256 of `files`, which make up `output` (the output itself, or files
    under the directory `output`), in the stamp of `output`; returns the stamp's path."""
    output = Path(output)
    lines = sorted(f"{file_digest(f)}  {Path(f).relative_to(output.parent).as_posix()}\n"
                   for f in files)
    stamp = stamp_path(output)
    atomic_write_bytes(stamp, "".join(lines).encode())
    return stamp


def made_files(output: str | os.PathLike[str]) -> list[Path]:
    """The files of an output as found: itself if a file, else every entry under it that is
    not hidden and not a directory (a symbolic link is listed, not followed), sorted."""
    output = Path(output)
    if not output.is_dir():
        return [output] if output.exists() or output.is_symlink() else []
    return sorted(p for p in output.rglob("*") if (p.is_symlink() or not p.is_dir())
                  and not any(part.startswith(".") for part in p.relative_to(output).parts))


def remove_stamped(output: str | os.PathLike[str]) -> None:
    """Remove the files the stamp of `output` lists, then the stamp: what an earlier run
    made there, so that none of it survives beside what is made next. Files the stamp
    does not list are left (they were not made with the output; the archive refuses them).
    Nothing is removed if there is no stamp or it is not what `write_stamp` writes."""
    output = Path(output)
    listed = _listed(output)
    if isinstance(listed, str):
        return
    for name in listed:
        path = output.parent / name
        if path.is_file() and not path.is_symlink():
            path.unlink()
    stamp_path(output).unlink()


def _listed(output: Path) -> dict[str, str] | str:
    """The files the stamp of `output` lists (path relative to its parent -> sha256), or
    what is wrong with the stamp."""
    stamp = stamp_path(output)
    if not stamp.is_file():
        return f"{output}: no stamp {stamp.name} beside it recording what was made"
    try:
        text = stamp.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        return f"{stamp}: not UTF-8 text ({exc}); expected lines '<sha256>  <path>'"
    listed: dict[str, str] = {}
    top = PurePosixPath(output.name)
    for number, line in enumerate(text.splitlines(), 1):
        match = _LINE.fullmatch(line)
        name = PurePosixPath(match[2]) if match else None
        if name is None or ".." in name.parts or not (name == top or top in name.parents):
            return (f"{stamp}:{number}: {line[:200]!r}; expected '<sha256>  <path>' of a "
                    f"file under {output.name}")
        listed[match[2]] = match[1]
    return listed


def stamp_problems(output: str | os.PathLike[str]) -> list[str]:
    """What differs between `output` and its stamp: no stamp, a line that is not
    '<sha256>  <path>' under `output`, a file listed but missing or edited, a file present
    but not listed. Empty if the output is exactly what was made."""
    output = Path(output)
    listed = _listed(output)
    if isinstance(listed, str):
        return [listed]
    found = {f.relative_to(output.parent).as_posix(): f for f in made_files(output)}
    problems = []
    for name in sorted(listed.keys() | found.keys()):
        if name not in found:
            problems.append(f"{output.parent / name}: missing")
        elif name not in listed:
            problems.append(f"{found[name]}: present but not made with the rest")
        elif found[name].is_symlink() or not found[name].is_file():
            problems.append(f"{found[name]}: not a regular file")
        elif file_digest(found[name]) != listed[name]:
            problems.append(f"{found[name]}: edited since it was made")
    return problems
