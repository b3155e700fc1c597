"""The launch path of the CuPy backend's own kernels without a GPU: the parameter buffer
laid out from the kernel's C signature, what the driver gets, and the host work of one
launch."""

from __future__ import annotations

import ctypes
import struct
import types

import numpy as np
import pytest

from kernels import counting, cuda_args, cupy_launch
from kernels import cuda_router_source as router_src
from kernels import cuda_scan_source as scan_src
from tests.kernels.host_calls import calls_of


def _array(ptr):
    """What a launch reads of a CuPy array: its data pointer."""
    return types.SimpleNamespace(data=types.SimpleNamespace(ptr=ptr))


def _launch(source, name, args, grid=(3, 1, 1), block=(128, 1, 1)):
    """Launch kernel ``name`` of ``source`` with a recording driver; (the driver's
    arguments but the parameters, the parameters as the kernel reads them)."""
    calls = []
    params = cuda_args.kernel_params(source, name).params
    launch = cupy_launch.DriverLaunch(0xF00, params, lambda *a: calls.append(a))
    launch(7, grid, block, args)
    *dims, addresses, extra = calls[-1]
    fmt = cupy_launch.parameter_format(source, name)
    slots = (ctypes.c_void_p * len(params)).from_address(addresses)
    raw = b"".join(ctypes.string_at(p, 8) for p in slots)
    return tuple(dims) + (extra,), struct.unpack(fmt, raw)


def test_the_scan_kernels_parameters_are_laid_out_from_its_c_signature():
    source = scan_src.scan_source("add", "float32", pairs=True)
    args = (
        _array(0x1000),
        None,  # a null pointer
        _array(0x2000),
        np.int64(10),
        np.int64(5),
        np.float32(2.5),
        np.int32(9),
        _array(0x3000),
        np.uint64(4096),
        np.int32(2),
        np.int32(4),
        _array(0x4000),
    )
    launch, params = _launch(source, scan_src.SCAN_KERNEL, args)
    assert launch == (0xF00, 3, 1, 1, 128, 1, 1, 0, 7, 0)
    assert params == (0x1000, 0, 0x2000, 10, 5, 2.5, 9, 0x3000, 4096, 2, 4, 0x4000)


def test_the_get_kernels_fill_is_a_word_of_the_elements_size():
    source = router_src.gather_source(2)
    fmt = cupy_launch.parameter_format(source, router_src.GET_KERNEL)
    assert fmt == "<QQQH6xQqqQi4x"  # the fill an unsigned short, the row an int
    args = (_array(1), _array(2), None, np.uint16(0xBEEF), _array(3), 5, 6, None, np.int32(0))
    _, params = _launch(source, router_src.GET_KERNEL, args)
    assert params == (1, 2, 0, 0xBEEF, 3, 5, 6, 0, 0)


def test_a_value_that_does_not_fit_its_parameter_raises():
    """CuPy would pass a Python float as 8 bytes to an ``int`` and shift every later
    parameter; packed by the parameter's own type it cannot be passed at all."""
    source = router_src.router_source("add", "int32")
    good = (_array(1), _array(2), None, _array(3), 4, 5, None, np.int32(0))
    _launch(source, router_src.SEND_KERNEL, good)
    with pytest.raises(struct.error):
        _launch(source, router_src.SEND_KERNEL, good[:-1] + (0.5,))
    with pytest.raises(struct.error):
        _launch(source, router_src.SEND_KERNEL, good[:-1] + (2**40,))
    with pytest.raises(ValueError):  # one argument short
        _launch(source, router_src.SEND_KERNEL, good[:-1])


def test_the_host_work_of_a_launch_is_one_call_and_a_loop():
    source = scan_src.scan_source("add", "int32", pairs=False)
    params = cuda_args.kernel_params(source, scan_src.SCAN_KERNEL).params
    launch = cupy_launch.DriverLaunch(1, params, lambda *a: None)
    args = (_array(1), _array(1), _array(2), 4, 4, np.int32(0), np.int32(0), _array(3),
            np.uint64(8), np.int32(1), np.int32(1), _array(4))  # fmt: skip
    launch(0, (1, 1, 1), (128, 1, 1), args)
    events = calls_of(lambda: launch(0, (1, 1, 1), (128, 1, 1), args))
    # the launch, its list comprehension (Python 3.11), the driver's stand-in (the lambda
    # that calls the launch is the fourth)
    assert events["call"] <= 4, events
    assert events["c_call"] <= 6, events  # zip, the lock's enter and exit, pack_into


def test_on_the_counting_stand_in_a_launch_is_the_kernels_call():
    source = router_src.gather_source(4)
    kernel = counting.RawModule(code=source).get_function(router_src.GET_KERNEL)
    launch = cupy_launch.launcher(counting.cupy, kernel, source, router_src.GET_KERNEL)
    xp = counting.cupy
    src, out = xp.asarray(np.arange(5, dtype=np.float32)), xp.empty(3, dtype=np.float32)
    index = xp.asarray(np.array([4, 0, 6]))
    with counting.measure() as c:
        args = (src, index, None, np.uint32(0), out, np.int64(3), np.int64(5), None, np.int32(0))
        launch(0, (1, 1, 1), (256, 1, 1), args)
    assert c.total.launches == 1 and c.total.ops[f"kernel:{router_src.GET_KERNEL}"] == 1
    assert out.view(np.ndarray).tolist() == [4.0, 0.0, 1.0]  # 6 wraps to 1, as CuPy's take
