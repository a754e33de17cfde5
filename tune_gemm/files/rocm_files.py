"""Files written by the ROCm tuning script: its config keys read into ours, and the note for GPUs that are not AMD.

Its versions spelled the scheduling hint two ways: v3.4 wrote `instruction_sched_variant` holding the double
quotes it pasted into generated code (`'"default"'`); later versions write `schedule_hint` (`'none'`). Both
become `Config.schedule_hint`, the launch option's name in Triton's AMD backend, and results are written with
`schedule_hint`. Its `num_stages: 0` (AMD's stream pipeliner) is kept on AMD; elsewhere `Config.for_vendor`
says what runs instead, and `vendor_note` says so once per run.
"""

from __future__ import annotations

from tune_gemm.core.config import AMD_KNOBS, NUM_STAGES_FOR_AMD_ZERO, Config
from tune_gemm.core.errors import UserError

LEGACY_HINT_KEY = "instruction_sched_variant"


def _unquoted(value: object) -> object:
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return value


def config_fields(entry: dict, where: str) -> dict[str, object]:
    """The config fields an entry holds, under Config's names (values not yet checked)."""
    found: dict[str, object] = {name: entry[name] for name in Config.field_names() if name in entry}
    if "schedule_hint" in found:
        found["schedule_hint"] = _unquoted(found["schedule_hint"])
    if LEGACY_HINT_KEY in entry:
        legacy = _unquoted(entry[LEGACY_HINT_KEY])
        if found.setdefault("schedule_hint", legacy) != legacy:
            raise UserError(f"{where}: schedule_hint {found['schedule_hint']!r} and {LEGACY_HINT_KEY} {legacy!r} "
                            "disagree")
    return found


def vendor_note(configs: list[Config], vendor: str, where: str) -> str | None:
    """One line for a run whose recorded configs hold AMD-only settings this device does not take; None if none."""
    if vendor == "amd":
        return None
    knobs = [name for name in AMD_KNOBS if any(name in config.amd_knobs for config in configs)]
    changes = []
    if knobs:
        changes.append(f"AMD-only knobs ({', '.join(knobs)}) are ignored")
    if any(config.num_stages == 0 for config in configs):
        changes.append(f"num_stages 0 (AMD's stream pipeliner, which double-buffers) runs as num_stages "
                       f"{NUM_STAGES_FOR_AMD_ZERO}")
    if not changes:
        return None
    return f"note: {where} holds AMD-only settings, not taken here ({vendor}): {'; '.join(changes)}"
