"""tune_gemm.files.sizes under random YAML documents: it loads valid sizes or raises the user-facing error, nothing else."""

from __future__ import annotations

import yaml
from helpers import problem
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tune_gemm.core.errors import UserError
from tune_gemm.files.sizes import SizeRequest, load_sizes

KEYS = ["M", "N", "K", "rowMajorA", "rowMajorB", "dtype_a", "dtype_b", "dtype_c", "BLOCK_SIZE_M", "BLOCK_SIZE_N",
        "BLOCK_SIZE_K", "SPLIT_K", "num_warps", "other"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10, 1 << 40), st.floats(allow_nan=True),
                    st.sampled_from(["T", "N", "fp16", "bf16", "fp8", "x", "__import__('os')", ""]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)),
                      max_leaves=8)
entries = st.dictionaries(st.sampled_from(KEYS), values, max_size=len(KEYS))
documents = st.one_of(values, st.lists(st.one_of(entries, values), max_size=4))
DEFAULTS = problem(1, 1, 1)


def _check(path) -> None:
    try:
        loaded = load_sizes(path, DEFAULTS)
    except UserError as error:
        assert str(error) and "\n" not in str(error)
        return
    assert loaded and all(isinstance(request, SizeRequest) and request.problem.M > 0 for request in loaded)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
          database=None)
@given(document=documents)
def test_random_documents(tmp_path, document):
    path = tmp_path / "sizes.yaml"
    path.write_text(yaml.safe_dump(document))
    _check(path)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
          database=None)
@given(text=st.text(alphabet=st.sampled_from(list("-{}[]:,'\" \nMNK1609abTfp!&*|>%@`")), max_size=60))
def test_random_text(tmp_path, text):
    path = tmp_path / "sizes.yaml"
    path.write_text(text)
    _check(path)
