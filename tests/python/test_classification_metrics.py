"""dtrain's ConfusionMatrix against scikit-learn.

Usage: python test_classification_metrics.py path/to/dtrain_confusion_matrix_probe

Draws predictions for a few class counts -- every class present, a class
with no true samples (scikit-learn's balanced_accuracy_score then leaves
it out of the mean, with a warning), one class only -- and has the C++
program score them split over 1 to 4 ranks. Its overall accuracy must be
accuracy_score's, its mean class accuracy balanced_accuracy_score's and its
rows confusion_matrix's, on the same predictions. Exits 1 naming the first
difference. scikit-learn is installed by scripts/bootstrap.sh.
"""

import random
import subprocess
import sys
import warnings

from sklearn.metrics import accuracy_score, balanced_accuracy_score, confusion_matrix


def cases():
    rng = random.Random(20260511)
    for classes, size, absent in [(2, 7, None), (5, 200, None), (7, 333, 4), (40, 2468, None),
                                  (3, 50, 0), (1, 9, None)]:
        truth = [rng.randrange(classes) for _ in range(size)]
        if absent is not None:
            truth = [t if t != absent else (t + 1) % classes for t in truth]
        # Right about two times in three, otherwise any class (the absent one too).
        predicted = [t if rng.random() < 0.67 else rng.randrange(classes) for t in truth]
        for ranks in (1, 2, 3, 4):
            yield classes, ranks, truth, predicted


def probe(program, classes, ranks, truth, predicted):
    lines = [f"{classes} {ranks}"] + [f"{t} {p}" for t, p in zip(truth, predicted)]
    out = subprocess.run([program], input="\n".join(lines) + "\n", capture_output=True,
                         text=True, check=True).stdout.split("\n")
    values = dict(line.split(" ", 1) for line in out[:2])
    rows = [[int(x) for x in line.split()[1:]] for line in out[2:2 + classes]]
    return float(values["overall_accuracy"]), float(values["mean_class_accuracy"]), rows


def main():
    program = sys.argv[1]
    failures = []
    passed = 0
    for classes, ranks, truth, predicted in cases():
        oa, macc, rows = probe(program, classes, ranks, truth, predicted)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "y_pred contains classes not in y_true"
            expected_macc = balanced_accuracy_score(truth, predicted)
        expected_oa = accuracy_score(truth, predicted)
        expected_rows = confusion_matrix(truth, predicted, labels=list(range(classes))).tolist()
        name = f"{classes} classes, {len(truth)} samples on {ranks} rank(s)"
        problems = []
        if abs(oa - expected_oa) > 1e-12:
            problems.append(f"overall accuracy {oa}, scikit-learn {expected_oa}")
        if abs(macc - expected_macc) > 1e-12:
            problems.append(f"mean class accuracy {macc}, scikit-learn {expected_macc}")
        if rows != expected_rows:
            problems.append(f"confusion matrix {rows}, scikit-learn {expected_rows}")
        if problems:
            failures.append(f"{name}: " + "; ".join(problems))
        else:
            passed += 1
    for failure in failures[:10]:
        print(failure)
    print(f"{passed} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
