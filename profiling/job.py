"""What the tuner asks of one child process, written as JSON so that the child needs no shared state."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass
class ChildJob:
    module_path: str  # the generated kernel module
    timer: str  # cupti, events or host
    csv_path: str  # timing rows are appended here (schema.COLUMNS)
    progress_path: str  # "start <config>" / "done <config>" lines, flushed as the child goes
    time_configs: list[str] = field(default_factory=list)
    check_configs: list[str] = field(default_factory=list)  # relative errors go to check_path
    check_path: str = ""
    baseline: bool = False  # also time torch.matmul on the same inputs
    warmup: int = 5
    iters: int = 20
    markers: bool = False  # launch marker kernels around the baseline (for external profilers)
    l2_bytes: int = 0  # inputs are rotated over enough buffer sets to exceed twice this
    seed: int = 0

    def save(self, path: Path) -> None:
        Path(path).write_text(json.dumps(asdict(self), indent=1))

    @classmethod
    def load(cls, path: Path) -> ChildJob:
        return cls(**json.loads(Path(path).read_text()))
