"""What the tuner asks of one child process, written as JSON so that the child needs no shared state."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass
class ChildJob:
    module_path: str  # the generated kernel module: it holds every config
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
    rotating_bytes: int | None = None  # --rotating_tensor: total bytes of the input sets instead (0: one set)
    init_type: str = "randn"  # how timing inputs are filled (checks always use randn)
    cache_flush: bool = False  # --icache_flush: flush the cache before every launch (tune_gemm.measure.cache_flush)
    env: dict[str, str] = field(default_factory=dict)  # set in the child's environment, e.g. its GPU
    ready_path: str = ""  # time configs as this file reports them compiled (tune_gemm.measure.stream)
    stop_path: str = ""  # stop timing once this file exists (the tuner's time budget is spent)
    batch: int = 1  # configs timed per profiler session (cupti), their rows written together
    seed: int = 0
    parts: dict[str, str] = field(default_factory=dict)  # config -> a smaller module that holds it (tune_gemm.generate.parts)

    def module_of(self, name: str) -> str:
        """The module to load config `name` from: its part when the job names one, else the whole module."""
        return self.parts.get(name, self.module_path)

    def save(self, path: Path) -> None:
        Path(path).write_text(json.dumps(asdict(self), indent=1))

    @classmethod
    def load(cls, path: Path) -> ChildJob:
        return cls(**json.loads(Path(path).read_text()))
