#!/usr/bin/python3
"""Golden data for the recurrent operators (gru, lstm, gru_cell, lstm_cell).

Regenerate (from the repository root; needs torch and numpy, e.g. Debian's
python3-torch under /usr/bin/python3):

    /usr/bin/python3 tools/py/gen_golden_rnn.py [OUT_DIR]

OUT_DIR defaults to tests/golden/rnn. The output is deterministic: every case
seeds torch with its own fixed seed, and only the CPU is used.

References:
  gru / lstm            torch.nn.GRU / torch.nn.LSTM(batch_first=True) run on
                        pack_padded_sequence(x, lengths, enforce_sorted=False)
                        and unpacked with pad_packed_sequence(total_length=S);
                        zero initial state. Positions of x beyond a row's
                        length are NaN: they must not reach any result.
  gru_cell / lstm_cell  torch.nn.GRUCell / torch.nn.LSTMCell.

Files written:
  index.txt     one line per case: "<op> <file>", op being the clgraph
                operator name (gru, lstm, gru_cell, lstm_cell).
  <case>.bin    little-endian:
                  char[4]  magic "CGT1"
                  int32    number of tensors
                  per tensor: int32 dtype (1 = f32, 2 = i32), int32 ndim,
                              int32 dims[ndim], then the elements, row-major.
                Tensor 0 is i32 [4]: hidden, layers, bidirectional, n_outputs.
                Then the operator's inputs in its input order (for gru/lstm:
                x, lengths, then the weights in state_dict order), then its
                n_outputs expected outputs (gru: out, h_n; lstm: out, h_n,
                c_n; gru_cell: h'; lstm_cell: h', c').
"""
import os
import struct
import sys

import numpy as np
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

F32, I32 = 1, 2

# (name, module, batch, seq, input, hidden, layers, bidirectional, lengths)
SEQ_CASES = [
    ("gru_uni_l1", "gru", 3, 5, 4, 6, 1, 0, [5, 2, 4]),
    ("gru_bi_l1", "gru", 3, 5, 4, 6, 1, 1, [5, 2, 4]),
    ("gru_uni_l2", "gru", 3, 7, 3, 5, 2, 0, [6, 1, 3]),
    ("gru_bi_l2", "gru", 3, 5, 4, 6, 2, 1, [5, 2, 4]),
    ("gru_bi_l3", "gru", 3, 6, 2, 3, 3, 1, [2, 6, 1]),
    ("gru_b1_bi_l2", "gru", 1, 4, 5, 7, 2, 1, [4]),
    ("lstm_uni_l1", "lstm", 3, 5, 4, 6, 1, 0, [5, 2, 4]),
    ("lstm_bi_l1", "lstm", 3, 5, 4, 6, 1, 1, [5, 2, 4]),
    ("lstm_uni_l2", "lstm", 3, 7, 3, 5, 2, 0, [6, 1, 3]),
    ("lstm_bi_l2", "lstm", 3, 5, 4, 6, 2, 1, [5, 2, 4]),
    ("lstm_bi_l3", "lstm", 3, 6, 2, 3, 3, 1, [2, 6, 1]),
    ("lstm_b1_bi_l2", "lstm", 1, 4, 5, 7, 2, 1, [4]),
]

# (name, module, batch, input, hidden)
CELL_CASES = [
    ("gru_cell_b3", "gru_cell", 3, 4, 6),
    ("gru_cell_b1", "gru_cell", 1, 5, 3),
    ("lstm_cell_b3", "lstm_cell", 3, 4, 6),
    ("lstm_cell_b1", "lstm_cell", 1, 5, 3),
]

# Parameters are drawn from a wider range than PyTorch's default
# U(-1/sqrt(H), 1/sqrt(H)) so that the gates also reach their flat parts.
PARAM_RANGE = 0.8


def tensor_bytes(arr):
    arr = np.ascontiguousarray(arr)
    if arr.dtype == np.float32:
        dtype = F32
    elif arr.dtype == np.int32:
        dtype = I32
    else:
        raise TypeError("unsupported dtype %s" % arr.dtype)
    head = struct.pack("<ii", dtype, arr.ndim) + struct.pack("<%di" % arr.ndim, *arr.shape)
    return head + arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()


def write_case(path, config, inputs, outputs):
    tensors = [np.array(config, dtype=np.int32)] + inputs + outputs
    with open(path, "wb") as f:
        f.write(b"CGT1")
        f.write(struct.pack("<i", len(tensors)))
        for t in tensors:
            f.write(tensor_bytes(t))


def f32(t):
    return t.detach().cpu().numpy().astype(np.float32)


def init_params(module):
    with torch.no_grad():
        for p in module.parameters():
            p.uniform_(-PARAM_RANGE, PARAM_RANGE)


def seq_case(seed, kind, B, S, I, H, L, bidir, lengths):
    torch.manual_seed(seed)
    cls = torch.nn.GRU if kind == "gru" else torch.nn.LSTM
    rnn = cls(I, H, L, batch_first=True, bidirectional=bool(bidir))
    init_params(rnn)
    x = torch.randn(B, S, I)
    for b, n in enumerate(lengths):
        x[b, n:, :] = float("nan")
    lens = torch.tensor(lengths, dtype=torch.int64)
    with torch.no_grad():
        packed = pack_padded_sequence(x, lens, batch_first=True, enforce_sorted=False)
        out, state = rnn(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=S)
    states = [state] if kind == "gru" else list(state)
    assert not torch.isnan(out).any()
    # state_dict order is PyTorch's _flat_weights order.
    weights = [f32(v) for v in rnn.state_dict().values()]
    assert len(weights) == 4 * L * (2 if bidir else 1)
    inputs = [f32(x), np.array(lengths, dtype=np.int32)] + weights
    outputs = [f32(out)] + [f32(s) for s in states]
    return [H, L, bidir, len(outputs)], inputs, outputs


def cell_case(seed, kind, B, I, H):
    torch.manual_seed(seed)
    cls = torch.nn.GRUCell if kind == "gru_cell" else torch.nn.LSTMCell
    cell = cls(I, H)
    init_params(cell)
    x = torch.randn(B, I)
    h = torch.randn(B, H)
    weights = [f32(cell.weight_ih), f32(cell.weight_hh), f32(cell.bias_ih), f32(cell.bias_hh)]
    with torch.no_grad():
        if kind == "gru_cell":
            outputs = [f32(cell(x, h))]
            inputs = [f32(x), f32(h)] + weights
        else:
            c = torch.randn(B, H)
            h1, c1 = cell(x, (h, c))
            outputs = [f32(h1), f32(c1)]
            inputs = [f32(x), f32(h), f32(c)] + weights
    return [H, 1, 0, len(outputs)], inputs, outputs


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join("tests", "golden", "rnn")
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(1)
    index = []
    for seed, (name, kind, *dims) in enumerate(SEQ_CASES, start=1000):
        write_case(os.path.join(out_dir, name + ".bin"), *seq_case(seed, kind, *dims))
        index.append("%s %s.bin" % (kind, name))
    for seed, (name, kind, *dims) in enumerate(CELL_CASES, start=2000):
        write_case(os.path.join(out_dir, name + ".bin"), *cell_case(seed, kind, *dims))
        index.append("%s %s.bin" % (kind, name))
    with open(os.path.join(out_dir, "index.txt"), "w") as f:
        f.write("\n".join(index) + "\n")
    print("wrote %d cases to %s" % (len(index), out_dir))


if __name__ == "__main__":
    main()
