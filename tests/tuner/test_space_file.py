"""tune_gemm/space/space_file.py: a --space file read over the vendor's full space, and each way one can be wrong as one
UserError naming the file."""

from __future__ import annotations

import pytest

from tune_gemm.core.errors import UserError
from tune_gemm.space.ranges import space_for
from tune_gemm.space.space_file import read_space


def test_no_file_is_the_vendor_s_full_space():
    assert read_space(None, "nvidia") == space_for("nvidia")


def test_a_file_s_fields_replace_the_full_space_s(tmp_path):
    path = tmp_path / "space.yaml"
    path.write_text("BLOCK_SIZE_M: [16, 32]\nnum_warps: [4]\n")
    space = read_space(path, "nvidia")
    assert space.block_m == (16, 32) and space.num_warps == (4,)
    assert space.block_n == space_for("nvidia").block_n


@pytest.mark.parametrize("text, message", [
    (None, "space file {} cannot be read"),
    ("BLOCK_SIZE_M: [16\n", "space file {} is not valid YAML"),
    ("BLOCK_SIZE_Q: [16]\n", "BLOCK_SIZE_Q"),
])
def test_a_bad_file_is_one_user_error(tmp_path, text, message):
    path = tmp_path / "space.yaml"
    if text is not None:
        path.write_text(text)
    with pytest.raises(UserError) as raised:
        read_space(path, "nvidia")
    assert message.format(path) in str(raised.value)
