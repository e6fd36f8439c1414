"""Many readers or one writer: what keeps prediction off arrays that training is replacing.

Prediction reads a model's hash tables and weight rows from numba kernels, which do not check bounds; training
grows and replaces those arrays. A prediction that mixed arrays from before and after a change could read past an
array's end and crash the process. So every prediction holds the model's guard for reading, and every change
(an update, a sparsity step) holds it for writing: predictions run together, a change waits for them to finish,
and predictions that start while a change waits queue behind it (so training is not starved). The thread that
writes may also read (nothing it calls can then deadlock).
"""
import threading
from contextlib import contextmanager
from typing import Iterator


class ReadWriteGuard:
    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = None  # the ident of the thread that writes
        self._depth = 0      # its nested writes
        self._waiting = 0    # writers waiting

    @contextmanager
    def reading(self) -> Iterator[None]:
        me = threading.get_ident()
        if self._writer == me:  # the writer reads what it is writing
            yield
            return
        with self._cond:
            while self._writer is not None or self._waiting:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def writing(self) -> Iterator[None]:
        me = threading.get_ident()
        with self._cond:
            if self._writer == me:
                self._depth += 1
            else:
                self._waiting += 1
                while self._writer is not None or self._readers:
                    self._cond.wait()
                self._waiting -= 1
                self._writer, self._depth = me, 1
        try:
            yield
        finally:
            with self._cond:
                self._depth -= 1
                if not self._depth:
                    self._writer = None
                    self._cond.notify_all()
