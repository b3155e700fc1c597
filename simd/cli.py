"""The ``simd-emu`` command line.

``simd-emu info`` reports the backend, the device and the versions, and ``simd-emu warmup``
(:mod:`simd.warmup`) runs every program's warm-up. The programs built on the machine add
their own subcommands; this module names none of them. Each program
declares its command in the ``simd_emu.commands`` entry-point group of its distribution
(``pyproject.toml``)::

    [project.entry-points."simd_emu.commands"]
    mycommand = "myprogram.cli:register"

and :func:`build_parser` calls every ``register(subparsers)`` it finds. The entry point's
name is the command's name: when a program cannot be imported because a third-party
package is missing, its command still shows in ``--help`` and, when run, says which
package to install (``pip install 'simd-emu[data]'``) and exits with status 2. Command
modules import nothing heavy at module level, so ``--help`` stays fast.

What a command needs beyond the machine (``numpy``, ``numba``) is declared by its module,
by the extra of ``simd-emu`` that installs it, as the names the packages are imported by::

    REQUIRES = {"data": ("PIL", "skimage", "tqdm")}

Before calling a command's handler, :func:`main` looks for each of those packages of the
handler's module (:func:`~simd.programs.missing_requirements`, with
:func:`importlib.util.find_spec`, which imports nothing); when one is missing the command
does no work, prints one line naming the packages and the extra to install, and exits with
status 2.

Where the commands come from (:func:`command_entry_points`): the installed distributions'
metadata, as ``pip install`` (editable or not) writes it. A source tree that is used
without being installed (``PYTHONPATH=.``, as on a GPU box) or whose installed metadata
predates the group has no such entry points; then, and only then, the group is read from
the ``pyproject.toml`` beside the ``simd`` package, when that file is this project's. So
``python -m simd.cli render`` works from a plain checkout and the list of commands has
one source, ``pyproject.toml``, either way. Tests pass ``commands=`` to
:func:`build_parser` or :func:`main` to choose the command modules themselves.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.metadata
import io
import json
import logging
import sys
import warnings
from collections.abc import Mapping
from typing import NoReturn

from simd.info import environment
from simd.outputs import OutputError
from simd.programs import DISTRIBUTION, entry_points, missing_requirements

__all__ = [
    "GROUP",
    "build_parser",
    "command_entry_points",
    "entry_points",
    "main",
    "missing_requirements",
]

#: Entry-point group of the programs' subcommands.
GROUP = "simd_emu.commands"

#: Namespace attributes holding the full name of the command parsed ("simd-emu bench mimd")
#: and its parser.
_COMMAND = "_simd_emu_command"
_PARSER = "_simd_emu_parser"


def command_entry_points() -> dict[str, str]:
    """The subcommands to register: ``{command: "module:function"}``, sorted by command.

    From the installed metadata; where it has none, from this source tree's
    ``pyproject.toml`` (see the module docstring); otherwise empty (``info`` only).
    """
    return entry_points(GROUP)


def _info(args: argparse.Namespace) -> int:
    from simd.launch import launched_rank, launched_ranks, mpi_status

    if launched_ranks() > 1:
        # Under mpiexec every rank joins MPI (a launcher fails the job when some ranks
        # initialise MPI and others exit without it); rank 0 alone reports.
        mpi_status()
        if launched_rank() != 0:
            return 0
    env = environment()
    if args.json:
        print(json.dumps(env, indent=2))
        return 0
    print(f"backend : {env['backend']}")
    print(f"gpu     : {env['gpu'] or 'none (' + env['gpu_unavailable_reason'] + ')'}")
    if env["nvrtc"]:
        print(f"nvrtc   : {env['nvrtc']} (CuPy compiles its kernels with it)")
    if env["numba_cuda"]:
        print(f"numba   : {env['numba_cuda']}")
    print(f"cpu     : {env['cpu']} ({env['cpu_count']} cores)")
    print(f"python  : {env['python']} on {env['platform']}")
    mpi = env["mpi"]
    if mpi["available"]:
        aware = "CUDA-aware" if mpi["cuda_aware"] else "not CUDA-aware"
        print(
            f"mpi     : {mpi['library']}, {aware} (GPU arrays to MPI: {mpi['gpu_arrays']}); "
            f"{mpi['ranks']} rank(s) in this launch"
        )
    else:
        print(f"mpi     : none ({mpi['unavailable']})")
    print(f"cache   : {_cache_line(env['cache'])}")
    for name, version in env["versions"].items():
        print(f"  {name:<14} {version or '-'}")
    from kernels.registry import registered

    if env["backend"] == "cupy":
        print("kernels on cupy:")
        for primitive, module in registered("cupy").items():
            print(f"  {primitive:<14} {module}")
    return 0


def _cache_line(cache: Mapping) -> str:
    """The cache folder and its size, and how to clear it.

    >>> _cache_line({"folder": "/c", "bytes": 302_600_000})
    '/c (302.6 MB of data sets and GPU kernels; delete the folder to clear it)'
    >>> _cache_line({"folder": "/c", "bytes": 0})
    '/c (empty)'
    """
    if not cache["bytes"]:
        return f"{cache['folder']} (empty)"
    return (
        f"{cache['folder']} ({cache['bytes'] / 1e6:.1f} MB of data sets and GPU kernels; "
        "delete the folder to clear it)"
    )


def version() -> str:
    """The installed distribution's version; ``simd.__version__`` in an uninstalled checkout."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        import simd

        return simd.__version__


def _name_commands(parser: argparse.ArgumentParser) -> None:
    """Every subcommand parser, at any depth, records its full name in the namespace."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for subparser in action.choices.values():
                subparser.set_defaults(**{_COMMAND: subparser.prog, _PARSER: subparser})
                _name_commands(subparser)


def _register_missing(sub, command: str, exc: ModuleNotFoundError) -> None:
    """A subcommand whose program needs a package that is not installed explains so."""
    message = (
        f"'simd-emu {command}' needs the package {exc.name!r}, which is not installed: "
        "pip install 'simd-emu[data]'"
    )

    def fail(args: argparse.Namespace) -> int:
        print(message, file=sys.stderr)
        return 2

    # no option prefix: every argument, "--help" and options included, reaches ``fail``
    parser = sub.add_parser(
        command, help=f"(unavailable: needs {exc.name})", add_help=False, prefix_chars="\0"
    )
    parser.add_argument("rest", nargs=argparse.REMAINDER)
    parser.set_defaults(func=fail)


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line: the command, the problem and
    where the options are listed (argparse's own prints the whole usage block first, which
    for ``render`` is a dozen lines above the one that matters). Subcommand parsers made by
    ``add_subparsers`` take the class of their parent, so every command gets it."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser(commands: Mapping[str, str] | None = None) -> argparse.ArgumentParser:
    """The parser with ``info``, ``warmup`` and the programs' subcommands.

    ``commands``: ``{command: "module:function"}`` to register instead of
    :func:`command_entry_points` (for tests).
    """
    parser = _Parser(
        prog="simd-emu",
        description="A SIMD computer (CM-5, MasPar MP-1) emulated on the GPU or with NumPy.",
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {version()}", help="print the version"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    info = sub.add_parser("info", help="backend, device and versions")
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(func=_info)
    from simd import warmup

    warmup.register(sub)
    if commands is None:
        commands = command_entry_points()
    for command, target in commands.items():
        module_name, _, function = target.partition(":")
        module_name = module_name.strip()
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            missing = exc.name or ""
            if missing and (module_name == missing or module_name.startswith(missing + ".")):
                continue  # that program is not part of this installation
            _register_missing(sub, command, exc)
            continue
        register = module
        for part in (function.strip() or "register").split("."):
            register = getattr(register, part)
        register(sub)
    _name_commands(parser)
    return parser


def main(argv: list[str] | None = None, *, commands: Mapping[str, str] | None = None) -> int:
    """Run the command line; returns the exit status (``commands``: see build_parser).

    Under ``mpiexec`` every rank parses the command line; only rank 0 prints a usage error
    (the others exit with the same status silently), so a bad option is reported once.
    """
    from simd.launch import launched_rank

    parser = build_parser(commands)
    if launched_rank() == 0:
        args = _parse(parser, argv)
    else:  # usage errors and --help exit through SystemExit, having printed nothing here
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            args = _parse(parser, argv)
    command = getattr(args, _COMMAND, None) or f"simd-emu {args.command}"
    problem = missing_requirements(args.func, command)
    if problem is not None:
        print(problem, file=sys.stderr)
        return 2
    try:
        with _user_reporting(say_once=launched_rank() == 0):
            return int(args.func(args) or 0)
    except OutputError as exc:  # an output refused where the command did not say it itself
        print(f"{command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """Parse ``argv``; an argument the command does not know is reported by the command's
    own parser, pointing to its own ``--help``."""
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        own = getattr(args, _PARSER, None) or parser
        own.error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


@contextlib.contextmanager
def _user_reporting(say_once: bool):
    """While a command runs: warnings as one line each, and work done only once (building
    a built-in data set, compiling kernels for longer than a second) said once as it
    starts (``say_once``: rank 0 under mpiexec). Restored afterwards."""
    shown = warnings.showwarning
    warnings.showwarning = _show_warning
    handlers = []
    if say_once:
        for name in _ONE_TIME_WORK:
            handler = _OneTimeWork()
            logger = logging.getLogger(name)
            handlers.append((logger, handler, logger.level))
            logger.addHandler(handler)
            logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        warnings.showwarning = shown
        for logger, handler, level in handlers:
            logger.removeHandler(handler)
            logger.setLevel(level)


#: Loggers of work done only once: a built-in data set built (renderer.datasets.builtin),
#: a compile running past a second (kernels.compiles).
_ONE_TIME_WORK = ("simd_emu.data", "simd_emu.compile")


class _OneTimeWork(logging.Handler):
    """Says once, as it starts, that the command is doing work it does only once: the
    first record's message."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.said = False

    def emit(self, record: logging.LogRecord) -> None:
        if not self.said:
            self.said = True
            print(f"simd-emu: {record.getMessage()}", file=sys.stderr, flush=True)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning as one line: what a command's user needs, not where in our code."""
    text = " ".join(str(message).split())
    print(f"simd-emu: warning: {text}", file=file or sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
