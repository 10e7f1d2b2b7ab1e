"""What an index refresh did (:class:`IndexReport`), and the progress callback it reports to: a
module of its own so that the index (:mod:`memkit.index.index`) and the refresh that writes it
(:mod:`memkit.index.writer`) both use it without importing each other."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

__all__ = ["IndexReport", "Progress"]

Progress = Callable[[int, int], None]  # (done, total) entries embedded


@dataclass
class IndexReport:
    """What an index run did."""

    entries: int = 0
    files: int = 0
    changed_files: int = 0
    new: int = 0  #: entries embedded
    reused: int = 0  #: entries of changed files whose vectors were already known
    removed: int = 0  #: entries that vanished
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)
    rebuilt_model: bool = False  #: no index existed for this model yet
    busy: bool = False  #: another process was writing the sidecar for longer than the refresh would wait
    model: str = ""  #: the name of the model the vectors are from
    dim: int = 0  #: their dimension
    judged: int = 0  #: entries given the judge's vector (memkit.index.judge_vectors), after the index
    judge_seconds: float = 0.0  #: the time that took (not in ``seconds``)

    def to_dict(self) -> dict[str, object]:
        """As ``memkit index --json`` prints it."""
        return {"entries": self.entries, "files": self.files, "changed_files": self.changed_files,
                "new": self.new, "reused": self.reused, "removed": self.removed,
                "seconds": round(self.seconds, 3), "errors": list(self.errors),
                "model": self.model, "dim": self.dim, "judged": self.judged,
                "judge_seconds": round(self.judge_seconds, 3)}

    def fill_judge(self, fill: Callable[[], int]) -> None:
        """Run ``fill`` (the judge's vectors after the index: how many it stored) and record its
        count and its time (``judged``, ``judge_seconds``)."""
        started = time.monotonic()
        self.judged = fill()
        self.judge_seconds = time.monotonic() - started

    def summary(self) -> str:
        text = (f"indexed {self.entries:,} entries in {self.seconds:.1f} s: "
                f"{self.new:,} new, {self.removed:,} removed")
        if self.reused:
            text += f", {self.reused:,} reused"
        if self.judged:
            text += f"; {self.judged:,} judge vector{'s' if self.judged != 1 else ''} in {self.judge_seconds:.1f} s"
        return text
