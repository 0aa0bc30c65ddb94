"""dtrain::models::ToyCnn in PyTorch: the seed tutorials' LeNet-5 shaped CNN.

  conv(in_channels -> 6, k5) -> relu -> maxpool 2
  conv(6 -> 16, k5)          -> relu -> maxpool 2
  flatten(16*5*5) -> fc 120 -> relu -> fc 84 -> relu -> fc num_classes

Input (B, in_channels, 32, 32); the defaults are the C++ model's
(ToyCnnOptions: 3 channels as CIFAR-10, 10 classes).
"""

import torch.nn.functional as F
from torch import nn


class ToyCnn(nn.Module):
    def __init__(self, in_channels=3, num_classes=10):
        super().__init__()
        # Registered in the C++ model's order and under its names.
        self.conv1 = nn.Conv2d(in_channels, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, num_classes)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.flatten(1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)
