"""The `mtpsweep` command: provision, analyse, compare, preflight."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from . import provision


def _provision(args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    binary = provision.resolve_server_bin(args.server_bin)
    version = provision.server_version(binary.path)
    print(f"server:  {binary.path}  (from {binary.source})")
    print(f"build:   {version}")
    build = provision.build_id(version)
    if build is None or build.endswith("-unknown") or build.startswith("b0-"):
        print(
            "warning: this build does not identify itself; rebuild with: "
            f"{provision.INSTALL_COMMAND}"
        )
    if not args.no_model:
        model = provision.default_model_path()
        print(f"model:   {model}  ({model.stat().st_size:,} bytes, sha256 checked)")
    print(f"ready in {time.monotonic() - t0:.2f} s")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mtpsweep", description="LLM inference-server experiments: provision and analyse."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("provision", help="locate llama-server and assemble the default model")
    p.add_argument("--server-bin", help="an explicit llama-server executable")
    p.add_argument("--no-model", action="store_true", help="do not assemble the default model")
    p.set_defaults(func=_provision)
    try:  # TEMP until analysis lands
        from .analysis import cli as analysis_cli

        analysis_cli.register(sub)
    except ImportError:
        pass
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
    except provision.ProvisionError as exc:
        print(f"mtpsweep: {exc}", file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())
