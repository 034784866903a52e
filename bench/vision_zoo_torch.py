"""PyTorch-side timings for bench/vision_zoo.sh: torch.export time and eager latency.

Runs inside the Debian chroot that models/export_all.sh uses (torch + torchvision). For each
model: torch.export.export wall time (strict=False, as the zoo exports), then eager fp32
latency at batch 1 (median and minimum of N runs after warm-up, torch's default thread
count; the minimum is the figure least disturbed by other load on a shared machine). Prints one
JSON object. Weights are random: timing does not depend on their values.

  python3 vision_zoo_torch.py resnet18 resnet50 ... > times.json
"""
import json
import statistics
import sys
import time

import torch
import torchvision


def measure(name: str, runs: int = 10) -> dict:
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).eval()
    x = torch.randn(1, 3, 224, 224)
    t0 = time.perf_counter()
    torch.export.export(model, (x,), strict=False)
    export_s = time.perf_counter() - t0
    with torch.no_grad():
        for _ in range(3):
            model(x)
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            model(x)
            times.append(time.perf_counter() - t)
    return {
        "export_seconds": export_s,
        "eager_ms_median": 1e3 * statistics.median(times),
        "eager_ms_min": 1e3 * min(times),
        "eager_threads": torch.get_num_threads(),
    }


def main() -> None:
    out = {"torch": torch.__version__, "torchvision": torchvision.__version__, "models": {}}
    for name in sys.argv[1:]:
        out["models"][name] = measure(name)
        print(f"{name}: {out['models'][name]}", file=sys.stderr)
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
