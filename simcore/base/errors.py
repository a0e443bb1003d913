"""Typed errors: every input problem names where it is and what was expected."""

from __future__ import annotations


class SimcoreError(Exception):
    """Base of every error simcore raises on purpose."""


class SWFError(SimcoreError, ValueError):
    """A Standard Workload Format file that cannot be read as it stands."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        self.path = str(path)
        self.line = line
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {message}")


class SWFFieldCountError(SWFError):
    """A data line without exactly 18 fields."""


class SWFValueError(SWFError):
    """A field that is not a number, or not an integer where SWF wants one."""


class SWFEmptyError(SWFError):
    """An empty file, or one with a header but no job lines."""


class SWFCompressionError(SWFError):
    """A gzip stream that is truncated or corrupt."""


class CleaningError(SimcoreError, ValueError):
    """A cleaning rule set to `reject` found offending jobs."""


class TraceError(SimcoreError):
    """A trace could not be acquired: unknown name, failed download, checksum mismatch."""


class SpecError(SimcoreError, ValueError):
    """An impossible or malformed machine, policy or workload specification."""


class ConfigError(SimcoreError, ValueError):
    """A configuration value that does not validate; the message names the key."""


class ArchiveError(SimcoreError, ValueError):
    """A dataset archive that cannot be packed, or whose members do not match its manifest."""


class IntegrityError(SimcoreError):
    """A stored artefact (workload file, cache entry, trace) that is unreadable or whose
    content does not match the checksum or key it was written with."""
