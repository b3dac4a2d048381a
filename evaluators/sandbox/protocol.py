"""Length-prefixed message framing for the three sandbox channels.

host <-> zygote: ``len(4 bytes, big endian) + JSON`` over the zygote's stdin/stdout pipes.
child -> zygote: the same, plus an HMAC-SHA256 tag over ``seq || payload`` keyed with a
fresh per-run secret, so bytes the candidate might manage to push into the result pipe
cannot pass for results (it does not know the key, and frames cannot be replayed or
reordered because the sequence number is in the tag).
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import struct

_LEN = struct.Struct(">I")
TAG_BYTES = 32
MAX_FRAME = 64 * 1024 * 1024  # bytes; a larger length prefix means a corrupted stream


def encode(obj) -> bytes:
    """One JSON frame: 4-byte length + UTF-8 JSON (NaN/inf allowed)."""
    data = json.dumps(obj, separators=(",", ":")).encode()
    return _LEN.pack(len(data)) + data


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd`` (blocking)."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def read_exact(fd: int, n: int) -> bytes | None:
    """Read exactly ``n`` bytes from a blocking fd; None on EOF before that."""
    chunks, got = [], 0
    while got < n:
        chunk = os.read(fd, n - got)
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_frame(fd: int):
    """Read one plain JSON frame from a blocking fd; None on EOF."""
    head = read_exact(fd, _LEN.size)
    if head is None:
        return None
    (size,) = _LEN.unpack(head)
    if size > MAX_FRAME:
        raise ValueError(f"frame of {size} bytes is too large")
    body = read_exact(fd, size)
    if body is None:
        return None
    return json.loads(body)


def mac(key: bytes):
    """A keyed HMAC-SHA256 object to sign with; its repr and attributes do not show the key
    (the child keeps only this, so even a format-string attribute walk cannot print it)."""
    return hmac.new(key, digestmod=hashlib.sha256)


def sign(base, seq: int, obj) -> bytes:
    """Signed frame: 4-byte length of the payload + 32-byte tag + JSON payload.

    ``base`` is the object from ``mac(key)``; it is copied, never updated in place.
    """
    payload = json.dumps(obj, separators=(",", ":")).encode()
    h = base.copy()
    h.update(seq.to_bytes(8, "big") + payload)
    return _LEN.pack(len(payload)) + h.digest() + payload


class SignedReader:
    """Incremental parser of signed frames from a byte stream (the child's result pipe).

    ``feed(data)`` returns the frames completed by ``data``. After a bad tag or a bad length
    the reader is ``corrupt`` and ignores everything that follows.
    """

    def __init__(self, key: bytes):
        self._key = key
        self._buf = bytearray()
        self._seq = 0
        self.corrupt: str | None = None

    def feed(self, data: bytes) -> list:
        if self.corrupt:
            return []
        self._buf += data
        out = []
        while len(self._buf) >= _LEN.size + TAG_BYTES:
            (size,) = _LEN.unpack_from(self._buf)
            if size > MAX_FRAME:
                self.corrupt = "frame length out of range"
                return out
            end = _LEN.size + TAG_BYTES + size
            if len(self._buf) < end:
                break
            tag = bytes(self._buf[_LEN.size:_LEN.size + TAG_BYTES])
            payload = bytes(self._buf[_LEN.size + TAG_BYTES:end])
            del self._buf[:end]
            want = hmac.new(self._key, self._seq.to_bytes(8, "big") + payload, hashlib.sha256).digest()
            if not hmac.compare_digest(tag, want):
                self.corrupt = "bad frame tag"
                return out
            self._seq += 1
            try:
                out.append(json.loads(payload))
            except ValueError:
                self.corrupt = "bad frame payload"
                return out
        return out

    @property
    def pending(self) -> int:
        """Bytes received that do not yet form a whole frame."""
        return len(self._buf)
