"""Where one config's launch spends its time, kernel by kernel, on a GPU.

A launch of a tuned config can run more than its GEMM kernel: padding copies for odd leading dimensions
(TMA family), split-K partials and their reduction. The tuner times the whole launch; this script splits
it, so that BENCHMARKS.md can say why a shape is slow with a measurement. Each config is launched
`--iters` times under torch.profiler (CUPTI); the table gives each GPU kernel's mean microseconds per launch,
beside torch.matmul's kernels on the same inputs, and with --max_autotune beside the kernels of
torch.compile(mode="max-autotune-no-cudagraphs") over the same matmul (bench_gemm's column: its own padding
kernels, if it pads, show there); with fp32 inputs both peers run as TF32, as the configs do. The inputs stay in L2
between calls.

    python benchmarks/breakdown.py 4095 4097 1023 BM256_BN128_BK64_GM1_SK1_nW8_nS4_TMA1_ES1 [more configs]
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Callable

import torch  # noqa: E402
from script_edges import require_gpu, run_script  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

from tune_gemm.core.config import Config, ConfigNameError  # noqa: E402
from tune_gemm.core.dtypes import DTYPES  # noqa: E402
from tune_gemm.core.errors import UserError  # noqa: E402
from tune_gemm.kernels.bound import launcher_for  # noqa: E402
from tune_gemm.measure.baselines import MATMUL, peer_precision  # noqa: E402


def kernel_times(run: Callable[[], object], iters: int) -> dict[str, float]:
    """Mean GPU microseconds per call of `run`, per kernel name (after two warm-up calls)."""
    for _ in range(2):
        run()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            run()
        torch.cuda.synchronize()
    totals: dict[str, float] = defaultdict(float)
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            totals[event.name] += event.device_time / iters
    return dict(totals)


def _print_table(title: str, times: dict[str, float], flops: float) -> None:
    total = sum(times.values())
    print(f"\n{title}: {total:.1f} us per launch, {flops / total / 1e6:.1f} TFLOP/s")
    for name, micros in sorted(times.items(), key=lambda item: -item[1]):
        print(f"  {micros:9.1f} us  {100 * micros / total:5.1f}%  {name[:100]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("M", type=int)
    parser.add_argument("N", type=int)
    parser.add_argument("K", type=int)
    parser.add_argument("configs", nargs="+", help="config names as the tuner prints them")
    parser.add_argument("--dtype", default="fp16", choices=sorted(DTYPES))
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--max_autotune", action="store_true", help="also break down max-autotune's call")
    args = parser.parse_args(argv)
    try:
        configs = [Config.parse(name) for name in args.configs]
    except ConfigNameError as error:
        raise UserError(str(error)) from None
    require_gpu()
    dtype = DTYPES[args.dtype].torch_dtype
    a = torch.randn(args.M, args.K, device="cuda").to(dtype)
    b = torch.randn(args.K, args.N, device="cuda").to(dtype)
    c = torch.empty(args.M, args.N, device="cuda", dtype=dtype)
    flops = 2.0 * args.M * args.N * args.K
    with peer_precision(dtype):  # fp32: torch.matmul and max-autotune as TF32, as the configs run it
        _print_table("torch.matmul", kernel_times(lambda: torch.matmul(a, b, out=c), args.iters), flops)
        if args.max_autotune:
            from bench_gemm import compiled_peer, inductor_target

            call, failure = compiled_peer(*inductor_target(MATMUL, (a, b, c)))
            if call is None:
                print(f"max-autotune: {failure}")
            else:
                _print_table("max-autotune", kernel_times(call, args.iters), flops)
        for config in configs:
            launcher = launcher_for(config)
            _print_table(str(config), kernel_times(lambda launcher=launcher: launcher(a, b, c), args.iters), flops)
    return 0


if __name__ == "__main__":
    sys.exit(run_script("breakdown", main))
