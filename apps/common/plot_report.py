"""PNG pictures of the training apps' CSV reports; the apps run it as a child
process after each epoch (apps/common/plots.h), never inside themselves.

  python plot_report.py curves REPORT.csv OUT.png
      train and test loss, test accuracy (and mean class accuracy, instance
      or class mIoU where the report has them) and samples/s per epoch
  python plot_report.py confusion CONFUSION.csv OUT.png
      a heat map of a confusion matrix (rows: true classes, columns:
      predicted), each row as shares of its class's samples

The picture is written beside OUT.png and renamed over it, so a reader
never sees half of one. Exits 3, saying so in one line, when matplotlib
cannot be imported; 2 when the CSV cannot be read.
"""

import csv
import os
import sys

MISSING_MATPLOTLIB = 3
BAD_INPUT = 2

# Columns drawn on the accuracy panel when the report has them, with their labels.
SCORES = [("test_accuracy", "test accuracy"), ("mean_class_accuracy", "mean class accuracy"),
          ("instance_miou", "instance mIoU"), ("class_miou", "class mIoU")]


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def by_epoch(rows):
    """One row per epoch, the last one written (a resumed run may repeat one)."""
    last = {}
    for row in rows:
        try:
            last[int(row["epoch"])] = row
        except (KeyError, TypeError, ValueError):
            continue
    return [last[epoch] for epoch in sorted(last)]


def column(rows, name):
    values = []
    for row in rows:
        try:
            values.append(float(row[name]))
        except (KeyError, TypeError, ValueError):
            values.append(float("nan"))
    return values


def save(figure, out):
    temporary = f"{out}.tmp-{os.getpid()}.png"
    figure.savefig(temporary, dpi=110)
    os.replace(temporary, out)


def curves(plt, report, out):
    rows = by_epoch(read_rows(report))
    if not rows:
        print(f"plot_report.py: '{report}' holds no epoch yet", file=sys.stderr)
        return BAD_INPUT
    epochs = [int(row["epoch"]) for row in rows]
    figure, (loss, score, rate) = plt.subplots(1, 3, figsize=(13, 3.8))
    for name, label in (("train_loss", "train loss"), ("test_loss", "test loss")):
        loss.plot(epochs, column(rows, name), marker="o", label=label)
    loss.set_title("loss")
    for name, label in SCORES:
        if name in rows[0]:
            score.plot(epochs, column(rows, name), marker="o", label=label)
    score.set_title("test scores")
    score.set_ylim(0, 1.02)
    rate.plot(epochs, column(rows, "samples_per_s"), marker="o", color="tab:green")
    rate.set_title("samples/s")
    rate.set_ylim(bottom=0)
    for axes in (loss, score, rate):
        axes.set_xlabel("epoch")
        axes.grid(alpha=0.3)
        if len(epochs) < 12:
            axes.set_xticks(epochs)
    loss.legend()
    score.legend(loc="lower right")
    figure.suptitle(os.path.basename(report))
    figure.tight_layout()
    save(figure, out)
    return 0


def confusion(plt, path, out):
    with open(path, newline="") as f:
        table = list(csv.reader(f))
    if len(table) < 2:
        print(f"plot_report.py: '{path}' holds no confusion matrix", file=sys.stderr)
        return BAD_INPUT
    names = table[0][1:]
    counts = [[int(cell) for cell in row[1:]] for row in table[1:]]
    shares = [[cell / max(sum(row), 1) for cell in row] for row in counts]
    size = max(4.0, 0.32 * len(names) + 2.5)
    figure, axes = plt.subplots(figsize=(size + 1, size))
    image = axes.imshow(shares, cmap="Blues", vmin=0, vmax=1)
    axes.set_xticks(range(len(names)), names, rotation=90, fontsize=8)
    axes.set_yticks(range(len(names)), names, fontsize=8)
    axes.set_xlabel("predicted")
    axes.set_ylabel("true")
    if len(names) <= 20:
        for t, row in enumerate(counts):
            for p, count in enumerate(row):
                if count:
                    axes.text(p, t, str(count), ha="center", va="center", fontsize=7,
                              color="white" if shares[t][p] > 0.6 else "black")
    figure.colorbar(image, ax=axes, fraction=0.046, label="share of the true class")
    figure.tight_layout()
    save(figure, out)
    return 0


def main(argv):
    if len(argv) != 4 or argv[1] not in ("curves", "confusion"):
        print(__doc__, file=sys.stderr)
        return BAD_INPUT
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"matplotlib is not installed for {sys.executable}", file=sys.stderr)
        return MISSING_MATPLOTLIB
    draw = curves if argv[1] == "curves" else confusion
    try:
        return draw(plt, argv[2], argv[3])
    except (OSError, ValueError, KeyError) as error:
        print(f"plot_report.py: cannot draw '{argv[2]}': {error}", file=sys.stderr)
        return BAD_INPUT


if __name__ == "__main__":
    sys.exit(main(sys.argv))
