"""clgraph: dataflow graphs on any OpenCL device and on the CPU.

>>> import clgraph, numpy as np
>>> s = clgraph.Session("model.onnx", device="opencl:0")
>>> [y] = s.run(None, {"x": np.ones((2, 3), np.float32)})

Session runs .cg and ONNX models with the API of onnxruntime.InferenceSession;
devices() lists where they can run. Errors raise Error subclasses whose str()
is the library's one-line message. See docs/python.md.
"""
from __future__ import annotations

from typing import List, NamedTuple

from . import _clgraph
from ._clgraph import (DeviceError, Error, FileError, InvalidInput, NotFound, OutOfMemory, PluginError,
                       Unsupported)
from ._forecast import Forecaster, ForecastResult
from ._session import NodeArg, Session, SessionOptions
from ._translate import TranslationResult, Translator
from ._utility import ConformRow, conform, quantize

__version__ = _clgraph.version()


class Device(NamedTuple):
    """A device: its name for ``device=`` (``"cpu"``, ``"opencl:0"``) and one line on what it is."""

    name: str
    description: str


def devices() -> List[Device]:
    """The devices models can run on: the CPU first, then every OpenCL
    device the installed ICDs offer (none without an ICD: device_note() says why)."""
    return [Device(n, d[len(n):].strip() if d.startswith(n) else d) for n, d in _clgraph.devices()]


def device_note() -> str:
    """Why no OpenCL device was found, or ''."""
    return _clgraph.device_note()


def build_features() -> List[str]:
    """The optional parts this build has: 'opencl', 'clblast', 'onnx', 'png'."""
    return _clgraph.build_features().split()


def rewrites() -> List[tuple]:
    """The graph rewrites ONNX imports run, as (name, what it replaces)."""
    return _clgraph.rewrites()


__all__ = ["Session", "SessionOptions", "NodeArg", "Translator", "TranslationResult", "Forecaster",
           "ForecastResult", "conform", "ConformRow", "quantize", "Device", "devices", "device_note", "build_features",
           "rewrites", "Error", "InvalidInput", "NotFound", "Unsupported", "DeviceError", "FileError",
           "OutOfMemory", "PluginError", "__version__"]
