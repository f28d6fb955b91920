"""A KernelBench-style problem (written for these tests): SiLU then a learned per-column scale."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features))

    def forward(self, x):
        return torch.nn.functional.silu(x) * self.weight


def get_inputs():
    return [torch.randn(200, 256)]


def get_init_inputs():
    return [256]
