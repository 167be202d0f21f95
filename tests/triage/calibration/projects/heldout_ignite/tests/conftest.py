# From pytorch/ignite tests/ignite/conftest.py: the `available_device` fixture, here CPU only.
import pytest

available_devices_list = ["cpu"]


@pytest.fixture(params=available_devices_list)
def available_device(request):
    return request.param
