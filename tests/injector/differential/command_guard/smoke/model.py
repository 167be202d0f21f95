import torch
from torch import nn


class TinyClassifier(nn.Module):
    def __init__(self, features=8, classes=4):
        super().__init__()
        self.layer = nn.Linear(features, classes)

    def forward(self, x):
        return self.layer(x)

    def probabilities(self, x):
        return torch.softmax(self(x), dim=-1)
