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

    def reading(self) -> "_Reading":
        """A context in which the model's arrays stay as they are (a plain
        object, not a generator: a prediction of one short text enters it
        once per component, and the generator's set-up was a few
        microseconds of that)."""
        return _Reading(self)

    def _enter_reading(self) -> bool:
        """Count a reader in; False for the writer's own thread, which reads
        what it is writing and is not counted."""
        if self._writer == threading.get_ident():
            return False
        with self._cond:
            while self._writer is not None or self._waiting:
                self._cond.wait()
            self._readers += 1
        return True

    def _leave_reading(self) -> None:
        with self._cond:
            self._readers -= 1
            if not self._readers and self._waiting:  # only a writer waits for the readers to be gone
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


class _Reading:
    __slots__ = ("_guard", "_counted")

    def __init__(self, guard: ReadWriteGuard) -> None:
        self._guard = guard
        self._counted = False

    def __enter__(self) -> None:
        self._counted = self._guard._enter_reading()

    def __exit__(self, *exc: object) -> None:
        if self._counted:
            self._guard._leave_reading()
