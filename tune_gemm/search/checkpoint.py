"""Per-size checkpoint of a search: what is timed so far, so that rerunning an interrupted command resumes it.

One JSON file per problem, `tune_gemm_work/checkpoints/<file tag>.json` under the run's working directory,
rewritten atomically (temporary file, then os.replace) as timed configs come in and after each round,
and removed once the size is recorded in the results file. It holds a key: the problem, the device and
every setting that makes times comparable (timer, launches, statistic, search, inputs), and a hash of
the generated module (kernel family and pruned configs). A checkpoint whose key differs from the run's
is not resumed: that run starts over, and replaces it.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

DIRECTORY = Path("tune_gemm_work") / "checkpoints"


@dataclass
class RoundState:
    """One round of a search: launches per config, and what it measured so far."""

    warmup: int
    iters: int
    times: dict[str, float] = field(default_factory=dict)  # config -> time_us
    instances: dict[str, int] = field(default_factory=dict)  # config -> launches the time is taken over
    failed: dict[str, str] = field(default_factory=dict)  # config -> reason it has no time
    matmul_us: float | None = None  # torch.matmul on the same inputs, same timer
    complete: bool = False

    def finished(self) -> set[str]:
        return set(self.times) | set(self.failed)


@dataclass
class Checkpoint:
    path: Path
    key: dict
    compile_failed: dict[str, str] = field(default_factory=dict)  # config -> compiler's reason
    rounds: list[RoundState] = field(default_factory=list)
    resumed: bool = False  # loaded from an earlier run's file

    @staticmethod
    def path_for(workdir: Path, file_tag: str) -> Path:
        return Path(workdir).resolve() / DIRECTORY / f"{file_tag}.json"

    @classmethod
    def open(cls, workdir: Path, file_tag: str, key: dict) -> Checkpoint:
        """The checkpoint of this problem and key: the earlier run's if its file matches, else a fresh one."""
        path = cls.path_for(workdir, file_tag)
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):  # none yet, or not ours to trust
            return cls(path, key)
        if data.get("key") != key:
            return cls(path, key)
        rounds = [RoundState(**{f.name: state[f.name] for f in fields(RoundState) if f.name in state})
                  for state in data.get("rounds", [])]
        return cls(path, key, dict(data.get("compile_failed", {})), rounds, resumed=True)

    def round(self, index: int, warmup: int, iters: int) -> RoundState:
        """Round `index`, created when it was not reached before (rounds are reached in order)."""
        if index < len(self.rounds):
            return self.rounds[index]
        self.rounds.append(RoundState(warmup, iters))
        return self.rounds[-1]

    def timed(self) -> int:
        """Configs with a time in any round."""
        return len(set().union(*(state.times for state in self.rounds))) if self.rounds else 0

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {"key": self.key, "compile_failed": self.compile_failed,
                "rounds": [asdict(state) for state in self.rounds]}
        temporary = self.path.with_name(self.path.name + ".tmp")
        temporary.write_text(json.dumps(data))
        os.replace(temporary, self.path)


def discard(path: Path | None) -> None:
    """Remove a checkpoint file (the size is recorded), then `checkpoints/` and `tune_gemm_work/` if empty."""
    if path is None:
        return
    Path(path).unlink(missing_ok=True)
    for directory in (Path(path).parent, Path(path).parent.parent):
        try:
            directory.rmdir()
        except OSError:  # not empty (other sizes, kept files) or already gone
            return


def fingerprint(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
