"""Device choice (nnconsole.engine.backend.device): a GPU asked for without a usable CUDA stack fails loudly,
naming the extra to install."""
from __future__ import annotations

import pytest


def test_gpu_request_without_cuda_fails_loudly():
    from nnconsole.engine.backend.device import DeviceError, cuda_diagnosis, select_device

    if cuda_diagnosis() is None:
        pytest.skip("this machine has a usable GPU")
    with pytest.raises(DeviceError, match="nnconsole\\[cuda\\]"):
        select_device("cuda")
