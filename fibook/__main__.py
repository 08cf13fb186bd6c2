"""Command line: ``python -m fibook COMMAND``.

``data``   check that the datasets are present and intact (``--download`` fetches what is missing).
``scales`` print the table of named scales.
"""

from __future__ import annotations

import argparse
import sys

from fibook import data, scales


def cmd_data(args) -> int:
    names = ["fashion_mnist"] + (["cifar10"] if args.cifar10 else [])
    for name in names:
        try:
            ds = data.load_dataset(name, root=args.root, download=args.download)
        except data.DatasetError as e:
            print(f"{name}: {e}", file=sys.stderr)
            return 1
        print(f"{name}: train {len(ds.train):,} / val {len(ds.val):,} / test {len(ds.test):,} images "
              f"of shape {ds.image_shape}, checksums ok")
    return 0


def cmd_scales(args) -> int:
    for row in scales.scale_table():
        print("  ".join(f"{k}={v}" for k, v in row.items()))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fibook", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("data", help="check (or download) the datasets")
    p.add_argument("--root", default=None, help="data folder (default: $FIBOOK_DATA or the checkout's data/)")
    p.add_argument("--download", action="store_true", help="let torchvision download what is missing")
    p.add_argument("--cifar10", action="store_true", help="also check CIFAR-10 (needed for gpu/paper scales)")
    p.set_defaults(func=cmd_data)
    p = sub.add_parser("scales", help="print the named scales")
    p.set_defaults(func=cmd_scales)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
