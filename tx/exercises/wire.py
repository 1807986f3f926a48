"""Messages between the course's grader and a sandbox (:mod:`tx.exercises.sandbox`).

A message is a JSON header and a binary blob: ``[4-byte header length][header][8-byte blob
length][blob]``. The grader reads a sandbox's headers as JSON and its blobs with
``torch.load(weights_only=True)`` only (:func:`data`): what a sandbox sends is data, never code.
"""

from __future__ import annotations

import io
import json
import select
import socket
import struct
import time
from typing import Any

__all__ = ["FRAME_LIMIT", "send", "receive", "data", "as_data", "Gone", "Late"]

FRAME_LIMIT = 64 << 20  # bytes: the most one message from a sandbox may hold



def send(sock: socket.socket, header: dict[str, Any], blob: bytes = b"") -> None:
    head = json.dumps(header).encode()
    sock.sendall(struct.pack(">I", len(head)) + head + struct.pack(">Q", len(blob)) + blob)


class Gone(Exception):
    """The other end closed the connection, or sent what is not a message."""


class Late(Exception):
    """The deadline passed before a whole message came."""


def _receive_exactly(sock: socket.socket, n: int, deadline: float | None) -> bytes:
    parts, got = [], 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([sock], [], [], left)[0]:
                raise Late
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise Gone
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def receive(sock: socket.socket, deadline: float | None = None) -> tuple[dict[str, Any], bytes]:
    (n,) = struct.unpack(">I", _receive_exactly(sock, 4, deadline))
    if n > 1 << 20:
        raise Gone
    try:
        header = json.loads(_receive_exactly(sock, n, deadline))
    except ValueError:
        raise Gone from None
    (m,) = struct.unpack(">Q", _receive_exactly(sock, 8, deadline))
    if m > FRAME_LIMIT or not isinstance(header, dict):
        raise Gone
    return header, _receive_exactly(sock, m, deadline)


def data(blob: bytes) -> Any:
    """What a sandbox sent: tensors, numbers, strings and containers of them, never code."""
    import torch

    return torch.load(io.BytesIO(blob), weights_only=True)


def as_data(value: Any) -> bytes:
    """``value`` saved so that :func:`data` can read it: containers made plain, tensors made torch.Tensor."""
    import torch

    def plain(v: Any, depth: int = 0) -> Any:
        if depth > 20:
            raise TypeError("nested too deeply")
        if isinstance(v, torch.Tensor):
            return v.detach().as_subclass(torch.Tensor).clone() if type(v) is not torch.Tensor or v.requires_grad \
                else v
        if isinstance(v, (bool, int, float, complex, str, bytes, type(None), torch.Size, torch.dtype)):
            return v
        if hasattr(v, "item") and hasattr(v, "dtype") and getattr(v, "shape", None) == ():  # a numpy scalar
            return v.item()
        if hasattr(v, "__array__") and hasattr(v, "dtype"):  # a numpy array
            return torch.as_tensor(v.__array__())
        if isinstance(v, dict):
            return {plain(k, depth + 1): plain(x, depth + 1) for k, x in v.items()}
        if isinstance(v, (list, tuple, set, frozenset)):
            kind = {list: list, tuple: tuple, set: set, frozenset: set}.get(type(v)) or \
                next(t for t in (list, tuple, set) if isinstance(v, t))
            items = [plain(x, depth + 1) for x in v]
            if kind is tuple and hasattr(v, "_fields"):  # a named tuple is a tuple
                return tuple(items)
            return kind(items)
        raise TypeError(type(v).__name__)

    buffer = io.BytesIO()
    torch.save(plain(value), buffer)
    return buffer.getvalue()
