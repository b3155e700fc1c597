"""The ``simd-emu`` command line.

``simd-emu info`` reports the backend, the device and the versions. The programs add
their own subcommands (``render``, ``diffuse``, ``bench``): each lives beside its program
(``renderer.cli``, ...) and has a ``register(subparsers)`` function. They are imported by
name here, so the machine's package does not depend on the programs built on it.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys

from simd.info import environment

__all__ = ["main"]

#: Modules that add subcommands, imported lazily by name.
COMMAND_MODULES = ("renderer.cli", "diffusion.cli", "simd.balance.mimd.cli")


def _info(args: argparse.Namespace) -> int:
    env = environment()
    if args.json:
        print(json.dumps(env, indent=2))
        return 0
    print(f"backend : {env['backend']}")
    print(f"gpu     : {env['gpu'] or 'none (' + env['gpu_unavailable_reason'] + ')'}")
    print(f"cpu     : {env['cpu']} ({env['cpu_count']} cores)")
    print(f"python  : {env['python']} on {env['platform']}")
    for name, version in env["versions"].items():
        print(f"  {name:<14} {version or '-'}")
    from kernels.registry import registered

    if env["backend"] == "cupy":
        print("kernels on cupy:")
        for primitive, module in registered("cupy").items():
            print(f"  {primitive:<14} {module}")
    return 0


def _register_missing(sub, module_name: str, exc: ModuleNotFoundError) -> None:
    """A subcommand whose program needs a package that is not installed explains so."""
    command = {"renderer.cli": "render", "diffusion.cli": "diffuse"}.get(module_name, "bench")
    message = (
        f"'simd-emu {command}' needs the package {exc.name!r}, which is not installed: "
        "pip install 'simd-emu[data]'"
    )

    def fail(args: argparse.Namespace) -> int:
        print(message, file=sys.stderr)
        return 2

    parser = sub.add_parser(command, help=f"(unavailable: needs {exc.name})")
    parser.add_argument("rest", nargs=argparse.REMAINDER)
    parser.set_defaults(func=fail)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="simd-emu",
        description="A SIMD computer (CM-5, MasPar MP-1) emulated on the GPU or with NumPy.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    info = sub.add_parser("info", help="backend, device and versions")
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(func=_info)
    for module_name in COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and module_name.startswith(exc.name):
                continue  # that program is not part of this installation
            _register_missing(sub, module_name, exc)
            continue
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
