"""One way to check a setting: config values, runtime knobs and the methods' settings all fail with a
ValueError that names the setting, says what it must be and shows what it got."""
import math
from typing import Any, Iterable, Optional, Union

Number = Union[int, float]


def check_number(value: Any, what: str, *, whole: bool = False, low: Optional[Number] = None,
                 high: Optional[Number] = None, low_open: bool = False, high_open: bool = False,
                 allow_none: bool = False) -> Any:
    """`value` if it is a (whole) number within the bounds (open bounds exclude themselves), else a
    ValueError. Booleans are not numbers here, NaN and infinities never pass, None passes only with
    `allow_none`. Returns an int for `whole`, a float otherwise, None for an allowed None."""
    if value is None and allow_none:
        return None
    kinds = (int,) if whole else (int, float)
    ok = not isinstance(value, bool) and isinstance(value, kinds) and math.isfinite(value)
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value < high if high_open else value <= high
    if not ok:
        raise ValueError(f"{what} must be {_describe(whole, low, high, low_open, high_open, allow_none)}, "
                         f"got {value!r}")
    return int(value) if whole else float(value)


def check_choice(value: Any, what: str, choices: Iterable[Any]) -> Any:
    """`value` if it is one of `choices`, else a ValueError listing them."""
    choices = tuple(choices)
    # same type too: 1 is not True, and "1" is not 1
    if not any(type(value) is type(c) and value == c for c in choices):
        raise ValueError(f"{what} must be one of {', '.join(repr(c) for c in choices)}; got {value!r}")
    return value


def _describe(whole: bool, low, high, low_open: bool, high_open: bool, allow_none: bool) -> str:
    kind = "a whole number" if whole else "a number"
    if low is not None and high is not None:
        if whole and not low_open and not high_open:
            bounds = f" in {low}..{high}"
        else:
            bounds = f" in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    elif low is not None:
        bounds = f" {'>' if low_open else '>='} {low:g}"
    elif high is not None:
        bounds = f" {'<' if high_open else '<='} {high:g}"
    else:
        bounds = ""
    return ("null or " if allow_none else "") + kind + bounds
