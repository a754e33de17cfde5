"""Reads a --space file (a YAML mapping of field -> values) into the range space a size is pruned from."""

from __future__ import annotations

from pathlib import Path

import yaml

from tune_gemm.core.errors import UserError
from tune_gemm.space.ranges import RangeSpace, space_for, space_from_mapping


def read_space(path: Path | None, vendor: str) -> RangeSpace:
    """The vendor's full space, or the file's fields over it; UserError for a file that cannot be read, is not YAML
    or names a field or value the space does not take."""
    if path is None:
        return space_for(vendor)
    try:
        return space_from_mapping(yaml.safe_load(Path(path).read_text()), f"space file {path}", space_for(vendor))
    except OSError:
        raise UserError(f"space file {path} cannot be read") from None
    except yaml.YAMLError:
        raise UserError(f"space file {path} is not valid YAML") from None
    except ValueError as error:
        raise UserError(str(error)) from None
