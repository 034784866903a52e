"""Times torch.export and eager CPU inference of the BERT-base fixture (models/scripts/zoo.py,
the same weights and inputs as models/full/bert_base). Runs inside the Debian chroot that has
real PyTorch; prints one JSON object."""
import json
import statistics
import sys
import time

sys.path.insert(0, sys.argv[1])  # folder holding zoo.py
import torch  # noqa: E402
import zoo  # noqa: E402

threads = int(sys.argv[2]) if len(sys.argv) > 2 else 1
torch.set_num_threads(threads)
fx = zoo.build_bert_base()
model, args = fx.model, fx.args

t0 = time.perf_counter()
ep = torch.export.export(model, args, strict=False)
export_s = time.perf_counter() - t0

with torch.no_grad():
    for _ in range(3):
        model(*args)
    times = []
    for _ in range(20):
        t0 = time.perf_counter()
        model(*args)
        times.append(time.perf_counter() - t0)
print(json.dumps({
    "torch": torch.__version__,
    "threads": threads,
    "export_seconds": export_s,
    "eager_ms_p50": statistics.median(times) * 1e3,
    "eager_ms_min": min(times) * 1e3,
}))
