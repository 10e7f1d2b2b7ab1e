"""Exceptions raised by the memkit library. The CLI turns them into one-line messages."""
from __future__ import annotations


class MemkitError(Exception):
    """Base class of every error memkit raises on purpose."""


class VaultNotFound(MemkitError):
    """No vault at the given path, or none found above the current folder."""


class VaultExists(MemkitError):
    """`init` was asked to create a vault where one already exists."""


class ConfigError(MemkitError):
    """memkit.yaml is unreadable, has an unknown key or a value of the wrong type."""


class TopicNameError(MemkitError, ValueError):
    """A topic name that is empty, reserved or would escape topics/."""


class InvalidValue(MemkitError, ValueError):
    """A value given by the caller that is not allowed (a kind or tag with spaces, a bad date…)."""


class TopicParseError(MemkitError):
    """A topic file that cannot be read (bad YAML frontmatter, not UTF-8, too large)."""

    def __init__(self, path: str, message: str, line: int | None = None) -> None:
        self.path = path
        self.line = line
        where = f"{path} line {line}" if line else path
        super().__init__(f"{where}: {message}")


class TopicNotWritable(MemkitError):
    """A topic file memkit will not write into until a person fixes it (merge conflict, bad frontmatter)."""


class TopicNotFound(MemkitError, KeyError):
    """No topic of that name in the vault."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class EntryNotFound(MemkitError, KeyError):
    """No entry matches the id or text given (or several do)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class AmbiguousEntry(EntryNotFound):
    """Several different entries match the id prefix or text given (the message lists them)."""


class ProvenanceNotFound(EntryNotFound):
    """The entry names no conversation it came from (``memkit why``), or that conversation is gone."""


class VaultLocked(MemkitError):
    """Another writer held the vault lock for too long."""


class ModelError(MemkitError):
    """The embedding model cannot be loaded."""


class LLMError(MemkitError):
    """The configured LLM is unreachable, too slow, or answered something unusable."""


class LLMConfigError(ConfigError, LLMError):
    """The ``llm:`` settings of memkit.yaml cannot work (unknown key, wrong type, incomplete)."""


class TranscriptError(MemkitError):
    """A transcript that cannot be read or parsed."""


class SessionNotFound(MemkitError, KeyError):
    """No conversation session of that id (or several match a prefix)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class SessionAmbiguous(SessionNotFound):
    """Several sessions match the id prefix given (the message lists them)."""


class SessionConflict(MemkitError):
    """A session that cannot take the change now: its id is taken, or it is archived (pruned)."""


class NumericError(MemkitError):
    """A similarity matrix came out with values that are not numbers (inf/NaN), most likely from a
    faulty BLAS; memkit refuses to use it rather than act on garbage."""


class TooManySupersedes(MemkitError):
    """A digest would archive more entries than one conversation may (``MAX_SUPERSEDES``): it
    stopped, wrote nothing, and names them; ``--allow-many-supersedes`` lets it go on."""
