"""clgraph.Forecaster: the attention-RNN forecaster from numpy or pandas."""
from __future__ import annotations

import os
import warnings
from typing import Any, List, NamedTuple, Optional, Sequence, Union

import numpy as np

from . import _clgraph


class ForecastResult(NamedTuple):
    """A forecast with what each step attended to: `values` [horizon,
    channels]; `attention` [horizon, window]: row h's weight k (k <
    count[h]) is that of the state of step first[h] + k (1-based: steps up to
    the history's length are history, later ones forecast); count[h] is 0
    for a step with no earlier state to attend (docs/forecast.md)."""

    values: Any
    attention: np.ndarray
    first: List[int]
    count: List[int]


class Forecaster:
    """A forecaster model directory (docs/forecast.md) loaded on a device.

    ``forecast(history, horizon)`` takes a history of the model's columns
    (an ndarray [T, channels], a pandas DataFrame with those columns, or a
    list of either) and returns the next `horizon` steps in the same form:
    a DataFrame continues the history's index (its dates at their inferred
    frequency). One forecast runs at a time per Forecaster.
    """

    def __init__(self, model_dir: Union[str, os.PathLike], device: str = "cpu", place: Optional[str] = None,
                 plugins: Sequence[str] = (), intra_threads: int = 0):
        self.model_dir = os.fspath(model_dir)
        self._c = _clgraph.Forecaster(self.model_dir, device, place, [os.fspath(p) for p in plugins],
                                      int(intra_threads))
        names, self.window = self._c.columns()
        self.columns = list(names)

    def _values(self, history) -> np.ndarray:
        if hasattr(history, "columns") and hasattr(history, "index"):  # a pandas DataFrame
            missing = [c for c in self.columns if c not in history.columns]
            if missing:
                raise _clgraph.InvalidInput(f"the history has no column {missing[0]!r}; the model reads "
                                            + ", ".join(self.columns))
            history = history[self.columns].to_numpy()
        arr = np.ascontiguousarray(history, dtype=np.float64)
        if arr.ndim == 1 and len(self.columns) == 1:
            arr = arr.reshape(-1, 1)
        return arr

    def _frame(self, history, values):
        import pandas as pd
        idx = history.index
        n = len(values)
        if isinstance(idx, pd.DatetimeIndex) and len(idx) >= 3:
            freq = idx.freq
            if freq is None:
                with warnings.catch_warnings():  # pandas changes infer_freq's return type: both serve below
                    warnings.simplefilter("ignore")
                    freq = pd.infer_freq(idx)
            if freq is not None:
                new = pd.date_range(idx[-1], periods=n + 1, freq=freq)[1:]
                return pd.DataFrame(values, index=new, columns=self.columns)
        if isinstance(idx, pd.RangeIndex):
            return pd.DataFrame(values, index=pd.RangeIndex(idx.stop, idx.stop + n * idx.step, idx.step),
                                columns=self.columns)
        return pd.DataFrame(values, columns=self.columns)

    def forecast(self, history, horizon: int = 1, return_attention: bool = False, batch_size: int = 0):
        """The next `horizon` steps after each history (see the class)."""
        many = isinstance(history, (list, tuple))
        items = list(history) if many else [history]
        arrays = [self._values(h) for h in items]
        raw = self._c.forecast(arrays, int(horizon), int(batch_size), bool(return_attention))
        out = []
        for h, (vals, att, first, count) in zip(items, raw):
            values = np.frombuffer(vals, np.float64).reshape(int(horizon), len(self.columns)).copy()
            if hasattr(h, "columns") and hasattr(h, "index"):
                values = self._frame(h, values)
            if return_attention:
                a = np.frombuffer(att, np.float32).reshape(int(horizon), self.window).copy()
                values = ForecastResult(values, a, first, count)
            out.append(values)
        return out if many else out[0]
