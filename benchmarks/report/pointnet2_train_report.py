"""Summary of benchmarks/run_pointnet2_train.sh's rounds: for each
configuration and program, the median over rounds of its per-round median
step time, and dtrain's speedups (the other's time over dtrain's).

CSV: preset,batch_size,points,threads,impl,rounds,step_ms,step_ms_min,
step_ms_max,clouds_per_s,speedup_vs_torch_python,speedup_vs_torch_python_dtrain_ops,
speedup_vs_torch_python_dtrain_channels_last,speedup_vs_dtrain_separate_norm_relu
(step_ms: median over rounds; min and max show the spread between rounds)
(speedups on the dtrain_cpp rows only). Programs timed under bf16
autocast have impl names ending in _bf16 and are compared among
themselves. A bar chart of clouds/s per configuration goes to --png when
matplotlib is importable.
"""

import argparse
import csv
import statistics
from collections import defaultdict

IMPLS = ["torch_python", "torch_python_dtrain", "torch_python_dtrain_channels_last",
         "dtrain_cpp_separate_norm_relu", "dtrain_cpp"]
PEERS = IMPLS[:-1]
COLOURS = {"torch_python": "#999999", "torch_python_dtrain": "#6699cc",
           "torch_python_dtrain_channels_last": "#336699",
           "dtrain_cpp_separate_norm_relu": "#e69999", "dtrain_cpp": "#cc3333"}
LABELS = {"torch_python": "PyTorch, pure-PyTorch ops",
          "torch_python_dtrain": "PyTorch + dtrain ops (torch.ops)",
          "torch_python_dtrain_channels_last": "PyTorch + dtrain ops, channels-last",
          "dtrain_cpp_separate_norm_relu": "dtrain (C++), LibTorch batch norm + ReLU",
          "dtrain_cpp": "dtrain (C++)"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds-csv", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--png")
    args = parser.parse_args()
    times = defaultdict(list)
    for row in csv.DictReader(open(args.rounds_csv)):
        impl, amp = row["impl"], ""
        if impl.endswith("_bf16"):
            impl, amp = impl[:-len("_bf16")], "_bf16"
        key = (row["preset"], int(row["batch_size"]), int(row["points"]), int(row["threads"]), amp)
        times[key, impl].append(float(row["step_ms_median"]))
    configs = sorted({key for key, _ in times}, key=lambda k: (k[2], k[0]))
    rows = []
    for config in configs:
        median = {impl: statistics.median(times[config, impl]) for impl in IMPLS
                  if (config, impl) in times}
        for impl, ms in median.items():
            speedups = [""] * len(PEERS)
            if impl == "dtrain_cpp":
                speedups = [f"{median[peer] / ms:.3g}" if peer in median else "" for peer in PEERS]
            rows.append([*config[:4], impl + config[4], len(times[config, impl]), f"{ms:.4g}",
                         f"{min(times[config, impl]):.4g}", f"{max(times[config, impl]):.4g}",
                         f"{1000 * config[1] / ms:.4g}", *speedups])
            print(f"{config[0]:>8} B={config[1]:<3} N={config[2]:<5} {impl + config[4]:<20} "
                  f"{ms:9.1f} ms/step ({min(times[config, impl]):.1f}-{max(times[config, impl]):.1f}) "
                  f"{1000 * config[1] / ms:7.1f} clouds/s "
                  f"{' '.join(s for s in speedups if s)}")
    with open(args.out, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["preset", "batch_size", "points", "threads", "impl", "rounds",
                         "step_ms", "step_ms_min", "step_ms_max", "clouds_per_s", "speedup_vs_torch_python",
                         "speedup_vs_torch_python_dtrain_ops",
                         "speedup_vs_torch_python_dtrain_channels_last",
                         "speedup_vs_dtrain_separate_norm_relu"])
        writer.writerows(rows)
    if args.png:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("no matplotlib: no plot")
            return 0
        fig, axes = plt.subplots(1, len(configs), figsize=(6 * len(configs), 4.5), squeeze=False)
        for ax, config in zip(axes[0], configs):
            impls = [i for i in IMPLS if (config, i) in times]
            rates = [1000 * config[1] / statistics.median(times[config, i]) for i in impls]
            ax.bar(range(len(impls)), rates, color=[COLOURS[i] for i in impls])
            ax.set_xticks(range(len(impls)))
            ax.set_xticklabels([LABELS[i] for i in impls], rotation=20, ha="right", fontsize=7)
            ax.set_ylabel("training clouds / s (higher is better)")
            ax.set_title(f"{config[0]}, batch {config[1]} x {config[2]} points, "
                         f"{config[3]} threads{', bf16 autocast' if config[4] else ''}",
                         fontsize=9)
        fig.tight_layout()
        fig.savefig(args.png, dpi=110)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
