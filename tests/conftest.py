"""Shared test settings."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True, scope="session")
def one_thread():
    """Tests check behaviour, not speed, on shared machines where two torch threads run small and
    mid-sized batches several times slower (measured 6x to 10x): one thread keeps the suite's time
    predictable."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
