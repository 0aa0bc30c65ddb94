"""dtrain::models::ToyCnn for the peer benchmarks: its PyTorch twin,
models/torch_twins/toy_cnn.py (the one definition the tests share)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models"))
from torch_twins.toy_cnn import ToyCnn  # noqa: E402,F401
