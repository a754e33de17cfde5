"""On a GPU (`pytest -m gpu`): launches after the first of a call signature are replayed (tune_gemm.kernels.matmul_family.Replay)
and compute what the first did, on new matrices at every call, in each family and for each kind of TMA operand; a
call of another signature (an unaligned view, the same matrix as A and B) is launched through the JIT again; the
run-time matmul and a CUDA graph replay launches too; launches that copy an operand first or take scratch are
replayed with their copies and scratch made again."""

from __future__ import annotations

import pytest
import torch

from tune_gemm import clear_results, matmul
from tune_gemm.core.config import ATOMIC_REDUCE, SPLIT_EDGE, SPLIT_TAIL, Config
from tune_gemm.kernels import matmul_family
from tune_gemm.kernels.bound import launcher_for
from tune_gemm.kernels.matmul_family import poison, relative_error

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
              pytest.mark.skipif(not matmul_family.REPLAY_LAUNCHES, reason="replays are off (TUNE_GEMM_REPLAY=0)")]
HOPPER = torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)
NEEDS_HOPPER = pytest.mark.skipif(not HOPPER, reason="the TMA and warp-group families need a Hopper GPU")
TOLERANCE = 1e-2  # fp16 inputs, fp32 accumulation: errors are about 2e-4
TMA = {"PERSISTENT_TMA": 1}

CONFIGS = [
    Config(64, 64, 32, 4, 1, 4, 3),
    Config(16, 16, 16, 1, 1, 2, 2, STATIC_SHAPE=1),
    pytest.param(Config(128, 128, 64, 8, 1, 4, 3, **TMA), marks=NEEDS_HOPPER),
    pytest.param(Config(128, 256, 64, 4, 1, 8, 3, EPILOGUE_SUBTILE=1, SWAP_AB=1, **TMA), marks=NEEDS_HOPPER),
    pytest.param(Config(128, 192, 64, 4, 1, 8, 3, **TMA), marks=NEEDS_HOPPER),  # a compound tile: five descriptors
    pytest.param(Config(128, 256, 64, 8, 1, 8, 3, WARP_SPECIALIZE=1, **TMA), marks=NEEDS_HOPPER),
    pytest.param(Config(128, 192, 64, 4, 1, 8, 4, WARP_GROUPS=1, **TMA), marks=NEEDS_HOPPER),
]
# (M, N, K, A column-major, B column-major): C through its descriptor; N = 250: C's rows are 500 bytes, stored through
# pointers (rows 16-byte aligned everywhere else: nothing is copied, so every launch after the first is replayed)
SHAPES = [(512, 384, 256, False, False), (304, 250, 128, True, True), (16, 48, 64, False, True)]


def _operand(rows, cols, column_major, seed, dtype=torch.float16):
    generator = torch.Generator(device="cuda").manual_seed(seed)
    shape = (cols, rows) if column_major else (rows, cols)
    matrix = torch.randn(shape, generator=generator, device="cuda").to(dtype)
    return matrix.t() if column_major else matrix


def _counted_replays(monkeypatch) -> list:
    replayed = []
    replay = matmul_family.Replay.__call__

    def counting(self, *leading):
        replayed.append(self)
        return replay(self, *leading)
    monkeypatch.setattr(matmul_family.Replay, "__call__", counting)
    return replayed


def _launched(launcher, a, b, bias=None):
    c = torch.empty(a.shape[0], b.shape[1], dtype=torch.float16, device="cuda")
    poison(c)
    launcher(a, b, c, *(() if bias is None else (bias,)))
    return c


@pytest.mark.parametrize("config", CONFIGS, ids=str)
@pytest.mark.parametrize("M,N,K,col_a,col_b", SHAPES)
def test_replayed_launches_match_float64_on_new_matrices(monkeypatch, config, M, N, K, col_a, col_b):
    if config.WARP_GROUPS and (col_a or N % 8):
        pytest.skip("the warp-group kernel reads A row-major and stores C through descriptors")
    if config.STATIC_SHAPE and (M, N, K) != (16, 48, 64):
        pytest.skip("one STATIC_SHAPE binary per shape: the small one is enough")
    replayed = _counted_replays(monkeypatch)
    launcher = launcher_for(config)
    bias_ok = not config.SWAP_AB
    for call in range(4):
        a, b = _operand(M, K, col_a, 2 * call), _operand(K, N, col_b, 2 * call + 1)
        bias = torch.randn(M, device="cuda").half() if bias_ok and call % 2 else None
        c = _launched(launcher, a, b, bias)
        assert relative_error(c, a, b, bias) < TOLERANCE, f"call {call}"
    assert len(replayed) == (2 if bias_ok else 3)  # the first call of each signature (bias or none) is captured


@NEEDS_HOPPER
def test_another_signature_is_launched_through_the_jit(monkeypatch):
    replayed = _counted_replays(monkeypatch)
    launcher = launcher_for(Config(128, 128, 64, 8, 1, 4, 3, **TMA))
    a, b = _operand(256, 256, False, 1), _operand(256, 256, False, 2)
    for _ in range(2):
        assert relative_error(_launched(launcher, a, b), a, b) < TOLERANCE
    storage = torch.randn(256 * 256 + 8, device="cuda").half()
    unaligned = storage[1:256 * 256 + 1].view(256, 256)  # 2 bytes past a line: copied before the GEMM
    assert relative_error(_launched(launcher, unaligned, b), unaligned, b) < TOLERANCE
    assert relative_error(_launched(launcher, a, a), a, a) < TOLERANCE  # one matrix as A and B
    assert relative_error(_launched(launcher, b, a), b, a) < TOLERANCE  # ... then two again
    assert len(replayed) == 3  # the second call, the same-matrix call, and the last


@NEEDS_HOPPER
def test_fp8_scales_are_read_at_every_replayed_launch():
    launcher = launcher_for(Config(128, 128, 128, 8, 1, 8, 3, **TMA))
    a = _operand(256, 512, False, 3).to(torch.float8_e4m3fn)
    b = _operand(512, 384, True, 4).to(torch.float8_e4m3fn)  # column-major: read without a copy
    for scale in (0.5, 2.0, 0.25):
        scale_a, scale_b = torch.tensor([scale], device="cuda"), torch.tensor([1.5], device="cuda")
        c = torch.empty(256, 384, dtype=torch.float16, device="cuda")
        poison(c)
        launcher(a, b, c, None, scale_a, scale_b)
        assert relative_error(c, a, b, None, scale_a, scale_b) < 5e-2, scale


@pytest.fixture
def forgetting_choices():
    """The process-wide table emptied before and after: its choices must not outlive the test's default config."""
    clear_results()
    yield
    clear_results()


@pytest.mark.parametrize("config", [
    Config(64, 64, 32, 4, 1, 4, 3),
    pytest.param(Config(128, 128, 64, 8, 1, 4, 3, **TMA), marks=NEEDS_HOPPER),
    pytest.param(Config(128, 256, 64, 4, 1, 8, 3, EPILOGUE_SUBTILE=1, SWAP_AB=1, **TMA), marks=NEEDS_HOPPER),
], ids=str)
def test_the_runtime_matmul_and_a_cuda_graph_replay_launches(monkeypatch, forgetting_choices, config):
    replayed = _counted_replays(monkeypatch)
    monkeypatch.setattr("tune_gemm.runtime.lookup.default_config", lambda *args: config)
    a, b = _operand(384, 256, False, 5), _operand(256, 512, True, 6)
    results = [matmul(a, b) for _ in range(3)]
    assert all(relative_error(c, a, b) < TOLERANCE for c in results) and len({c.data_ptr() for c in results}) == 3
    c = torch.empty(384, 512, dtype=torch.float16, device="cuda")
    launcher = launcher_for(config)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        launcher(a, b, c)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        launcher(a, b, c)
    a.copy_(_operand(384, 256, False, 7))  # new values in the captured matrices
    poison(c)
    graph.replay()
    torch.cuda.synchronize()
    assert relative_error(c, a, b) < TOLERANCE
    assert len(replayed) == 4  # two of the matmul calls, the warm-up's and the captured launch


# (config, M, N, K, input dtype, launches besides the GEMM's per call): rows padded (A's of 260 bytes, B's of 500), a
# row-major fp32 or fp8 B copied K-major, a split K (summed by the reduction kernel, or in the GEMM), stream-K, a split
# tail (144 tiles of 128x128 on 132 SMs), split edge tiles (1064 = 8 tiles of 128 and 40 columns)
COPIES_AND_SCRATCH = [
    pytest.param(Config(128, 128, 64, 8, 1, 4, 3, **TMA), 300, 250, 130, torch.float16, 1, marks=NEEDS_HOPPER),
    pytest.param(Config(128, 128, 32, 4, 1, 8, 3, **TMA), 512, 384, 256, torch.float32, 1, marks=NEEDS_HOPPER),
    pytest.param(Config(128, 128, 128, 8, 1, 8, 3, **TMA), 512, 384, 512, torch.float8_e4m3fn, 1,
                 marks=NEEDS_HOPPER),
    pytest.param(Config(64, 64, 64, 1, 4, 4, 3), 128, 128, 4096, torch.float16, 1),
    pytest.param(Config(64, 64, 64, 1, 4, 4, 3, FUSED_REDUCE=1), 128, 128, 4096, torch.float16, 0),
    pytest.param(Config(64, 64, 64, 1, 4, 4, 3, FUSED_REDUCE=ATOMIC_REDUCE, **TMA), 128, 128, 4096, torch.float16, 0,
                 marks=NEEDS_HOPPER),
    pytest.param(Config(128, 128, 64, 8, 1, 8, 3, STREAM_K=1, **TMA), 1536, 1536, 1024, torch.float16, 0,
                 marks=NEEDS_HOPPER),
    pytest.param(Config(128, 128, 64, 8, 1, 8, 3, STREAM_K=SPLIT_TAIL, **TMA), 1536, 1536, 2048, torch.float16, 0,
                 marks=NEEDS_HOPPER),
    pytest.param(Config(128, 128, 64, 8, 1, 8, 3, NARROW_EDGE=SPLIT_EDGE, **TMA), 512, 1064, 4096, torch.float16, 0,
                 marks=NEEDS_HOPPER),
]


@pytest.mark.parametrize("config,M,N,K,dtype,other_launches", COPIES_AND_SCRATCH)
def test_launches_that_copy_or_take_scratch_are_replayed_and_match_float64(monkeypatch, config, M, N, K, dtype,
                                                                          other_launches):
    replayed = _counted_replays(monkeypatch)
    launcher = launcher_for(config)
    fp8 = dtype.itemsize == 1
    for call in range(3):  # new matrices, C poisoned, and for fp8 new scales, at every call
        a, b = _operand(M, K, False, 2 * call, dtype), _operand(K, N, False, 2 * call + 1, dtype)
        c = torch.empty(M, N, dtype=torch.float16 if fp8 else dtype, device="cuda")
        poison(c)
        scales = (torch.tensor([0.5 + call], device="cuda"), torch.tensor([1.5], device="cuda")) if fp8 else ()
        launcher(a, b, c, *((None, *scales) if fp8 else ()))
        assert relative_error(c, a, b, None, *scales) < (5e-2 if fp8 else TOLERANCE), f"call {call}"
    assert len(replayed) == 2 * (1 + other_launches)  # calls 2 and 3: the GEMM and the copy or reduction
