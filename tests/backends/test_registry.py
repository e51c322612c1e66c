"""Backends are registered once by name; each implements `Backend` with dataclass options."""

import dataclasses
import subprocess
import sys

import pytest

from dycl.backends import BACKENDS, Backend, backend_class, backend_options, get_all_backends, runner_factory


@pytest.mark.parametrize("name", BACKENDS)
def test_each_registered_backend_implements_the_interface(name):
    cls = backend_class(name)
    assert issubclass(cls, Backend) and cls.name == name
    assert dataclasses.is_dataclass(cls.Options) and cls.Options.__dataclass_params__.frozen
    assert backend_options(name, {}) == dataclasses.asdict(cls.Options())  # every option has a default
    assert cls.tool_packages
    assert runner_factory(name) is get_all_backends()[name].runner()


def test_options_are_checked_against_the_options_dataclass():
    assert backend_options("tvm", {"database": "/tmp/db"})["database"] == "/tmp/db"
    with pytest.raises(TypeError, match=r"unknown onnxruntime backend option\(s\) \['target'\]; known: opset"):
        backend_options("onnxruntime", {"target": "llvm"})
    with pytest.raises(ValueError, match="unknown backend 'xla'"):
        backend_class("xla")


def test_a_compile_worker_does_not_import_the_driver():
    code = "import sys, dycl.backends.worker; assert 'dycl.backends.driver' not in sys.modules"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
