"""`--export json`: per-GPU JSON in the style of seed 003 (`<GPU>-GEMM.json` beside the results file, configs in
small/medium/large buckets), plus every entry, so that the file is a results file too (`load_results` and the
report read it back to the same table).

Layout of one file:

    {"device": "<GPU name>", "source": "<results file>",
     "buckets": {"small": "M <= 256", "medium": "256 < M <= 2048", "large": "M > 2048"},
     "configs": {"<dtypes and layouts, e.g. fp16->fp16 TT>": {"N<N>_K<K>": {"small": {"M": .., <config>}, ..}}},
     "entries": [<the results entries, as the YAML file holds them>]}

Buckets are on M, with seed 003's edges: N and K come from a model's weights and stay fixed while M varies.
Each bucket holds the config tuned for the largest M that falls in it (the bucket's upper end is where it is
most often used); buckets with no tuned M are absent.
"""

from __future__ import annotations

import json
from pathlib import Path

from tune_gemm.outputs.files import by_device, device_tag, write_text
from tune_gemm.runtime.table import TunedEntry, Variant

SMALL_MAX, MEDIUM_MAX = 256, 2048  # seed 003's edges
BUCKET_RULE = {"small": f"M <= {SMALL_MAX}", "medium": f"{SMALL_MAX} < M <= {MEDIUM_MAX}", "large": f"M > {MEDIUM_MAX}"}


def size_bucket(M: int) -> str:
    return "small" if M <= SMALL_MAX else "medium" if M <= MEDIUM_MAX else "large"


def file_name(gpu: str | None) -> str:
    return f"{device_tag(gpu)}-GEMM.json"


def _variant_key(entry: TunedEntry) -> str:
    return Variant.of(entry.problem).label + (" +bias" if entry.problem.bias else "")


def document(gpu: str | None, entries: list[TunedEntry], source: Path) -> dict:
    """The JSON document for one GPU's entries."""
    configs: dict[str, dict[str, dict[str, dict]]] = {}
    for entry in sorted(entries, key=lambda e: e.problem.M):  # the largest M of a bucket is written last: it stays
        weights = configs.setdefault(_variant_key(entry), {}).setdefault(f"N{entry.problem.N}_K{entry.problem.K}", {})
        weights[size_bucket(entry.problem.M)] = {"M": entry.problem.M, **entry.config.as_dict()}
    return {"device": gpu, "source": str(source), "buckets": BUCKET_RULE, "configs": configs,
            "entries": [entry.mapping for entry in entries]}


def write_json(entries: list[TunedEntry], source: Path, directory: Path) -> list[Path]:
    """One file per GPU in `directory`; returns their paths."""
    return [write_text(Path(directory) / file_name(gpu), json.dumps(document(gpu, group, source), indent=1) + "\n",
                       "json export") for gpu, group in by_device(entries).items()]
