"""How the model file stores arrays, and how it reads them back checked.

An array field is a numpy array as msgpack-numpy writes it, or, zipped, a
dict of its zlib-compressed bytes (by byte planes: the high bytes of small
numbers are mostly zero), its dtype and its size. Reading checks type and
dimensions, and holds a zipped field's declared size to what the file's own
counts allow before anything is inflated, so a corrupt or hostile file
costs bounded time and memory. Shared by codec.py (weights) and clusters.py
(word clusters), which import nothing of each other.
"""
import zlib
from typing import Any, Dict, Optional

import numpy as np


def array_field(msg: Dict[str, Any], name: str, dtypes, ndim: int, limit: Optional[int] = None) -> np.ndarray:
    """A field as an array of one of `dtypes`; a compressed field may
    declare at most `limit` items, checked before it is inflated."""
    arr = msg.get(name)
    if isinstance(arr, dict):
        arr = unzipped(arr, name, limit)
    if not isinstance(arr, np.ndarray) or arr.ndim != ndim or arr.dtype not in [np.dtype(d) for d in dtypes]:
        raise ValueError(f"Corrupt model: field {name!r} is missing or has the wrong type")
    return arr


def zipped(arr: np.ndarray, planes: bool = True) -> Dict[str, Any]:
    """A 1-d unsigned array, zlib-compressed. With `planes`, its bytes go
    plane by plane (all low bytes, then the next...): the high bytes of
    small numbers are mostly zero and pack to almost nothing."""
    arr = np.ascontiguousarray(arr)
    raw = arr.view(np.uint8).reshape(-1, arr.dtype.itemsize).T.tobytes() if planes else arr.tobytes()
    return {"zlib": zlib.compress(raw, 6), "dtype": arr.dtype.str, "size": int(arr.size), "planes": planes}


def zipped_bytes(fields: Dict[str, Dict[str, Any]]) -> int:
    return sum(len(f["zlib"]) for f in fields.values())


def unzipped(field: Dict[str, Any], name: str, limit: Optional[int] = None) -> np.ndarray:
    """A 1-d array stored by _zipped (version 3: without planes). The
    declared size, held to `limit` (what the file's own counts allow) before
    anything is inflated, bounds what is inflated, so a corrupt or hostile
    file cannot exhaust memory."""
    data, dtype, size = field.get("zlib"), field.get("dtype"), field.get("size")
    planes = field.get("planes", False)
    if not isinstance(data, bytes) or dtype not in ("|u1", "<u2", "<u4", "<u8") or not isinstance(size, int) \
            or not isinstance(planes, bool):
        raise ValueError(f"Corrupt model: field {name!r} is not a valid compressed array")
    width = np.dtype(dtype).itemsize
    n_bytes = size * width
    if size < 0 or n_bytes > 1100 * len(data) + 64:  # beyond what zlib can reach
        raise ValueError(f"Corrupt model: field {name!r} declares an impossible size")
    if limit is not None and size > limit:
        raise ValueError(f"Corrupt model: field {name!r} declares {size:,} items where the file's counts allow "
                         f"{limit:,}")
    inflate = zlib.decompressobj()
    try:
        raw = inflate.decompress(data, n_bytes)
    except zlib.error as err:
        raise ValueError(f"Corrupt model: field {name!r} does not inflate ({err})") from None
    if len(raw) != n_bytes or not inflate.eof or inflate.unconsumed_tail:
        raise ValueError(f"Corrupt model: field {name!r} has the wrong length")
    flat = np.frombuffer(raw, dtype=np.uint8)
    if not planes or width == 1:
        return flat.view(dtype).reshape(size).copy()
    # byte planes -> numbers by shifts (several times faster than a strided transpose)
    planes_ = flat.reshape(width, size)
    out = planes_[0].astype(dtype)
    for k in range(1, width):
        out |= planes_[k].astype(dtype) << np.dtype(dtype).type(8 * k)
    return out
