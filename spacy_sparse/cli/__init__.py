"""`python -m spacy_sparse COMMAND` (also the `spacy-sparse` script).

One module per command group: `run` (demo, tag, tag-shards), `ud` (ud-text, evaluate-ud, bench-ud),
`measure` (bench, report),
`train` (order-templates, jackknife, prune, quantize, settings, ship-default, config), `convert`
(convert-ud, convert-conll). Reproductions of the papers' tables live in `benchmarks/`
of the repository, not here.
"""
import argparse
import gc
import os
import sys
from typing import List, Optional

from wasabi import msg

from . import convert, measure, run, train, ud


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m spacy_sparse", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for group in (run, ud, measure, train, convert):
        group.register(sub)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:
        # the reader of our stdout went away (`... | head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (ValueError, FileNotFoundError, OSError) as err:
        msg.fail(str(err))
        return 1


def console_main() -> None:
    """The commands' entry point (`python -m spacy_sparse`, `spacy-sparse`):
    main(), then exit without the collector's passes over the whole heap
    that the interpreter's teardown makes. Numba's registries leave some
    160,000 objects behind them, and those passes cost every command about
    0.3 s after its work is done. Freezing keeps the objects out of the
    collector's reach; every object is still released by its reference
    count, and the commands close what they write, so nothing is lost."""
    code = main()
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    console_main()
