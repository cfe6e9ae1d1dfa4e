"""`python -m monologue_eval.tune <command>`: `data` (tune/data.py: the training data from the expert);
the training commands (train, export, evaluate) are added beside it by tune/train.py and tune/export.py."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence


def _data(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from . import data

    ap = sub.add_parser("data", help="generate training data from the expert on every world",
                        description=(data.__doc__ or "").split("\n")[0])
    data.add_arguments(ap)
    ap.set_defaults(func=data.main)


def _train(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from . import train

    ap = sub.add_parser("train", help="LoRA-train the embedded model on a data set's train split (CPU)",
                        description=(train.__doc__ or "").split("\n")[0])
    train.add_arguments(ap)
    ap.set_defaults(func=train.main)


def _export(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from . import export as export  # noqa: PLC0414 (explicit re-import: mypy misses the plain form here)

    ap = sub.add_parser("export", help="convert a trained peft adapter to a GGUF LoRA adapter (llama.cpp)",
                        description=(export.__doc__ or "").split("\n")[0])
    export.add_arguments(ap)
    ap.set_defaults(func=export.main)


def _evaluate(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from . import evaluate

    ap = sub.add_parser("evaluate", help="paired check of an adapter (or the frozen model) on held-out examples",
                        description=(evaluate.__doc__ or "").split("\n")[0])
    evaluate.add_arguments(ap)
    ap.set_defaults(func=evaluate.main)


# each adds its subcommand (parser with `func`)
COMMANDS: list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = [
    _data, _train, _export, _evaluate]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m monologue_eval.tune", description=__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    for add in COMMANDS:
        add(sub)
    ns = ap.parse_args(argv)
    rc: int = ns.func(ns)
    return rc


if __name__ == "__main__":
    sys.exit(main())
