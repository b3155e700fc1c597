"""Output paths: checked before any work starts, written whole or not at all.

Every command (``simd-emu render``, ``simd-emu bench ...``) and every benchmark script
(``bench/*.py``) follows one policy:

* Each output path is checked before the work starts: an output file must not be a
  folder, must have a suffix the writer knows, and its folder must exist and take a new
  file (a real test file is made and removed: ``os.access`` says yes to root on a
  read-only mount); an output folder (``--out DIR``) is made if missing and tested the
  same way. A bad path ends the command with one line naming the path and the reason
  (:class:`OutputError`) and a non-zero exit status, before anything is computed.
* An existing file is replaced only when the user says so with ``--force``
  (:func:`add_force_argument`), and then a line says so before the work starts; without
  it the command ends before any work with one line naming the file and the way out
  (:func:`announce_replace`: ``frame.png: exists; add --force to replace it, or choose
  another name``). A slip of the hand (``--depth scan.npy`` for ``--depth depth.npy``)
  costs the user no file.
* Files are written under a temporary name in their own folder and renamed into place
  when all of them are written (:class:`StagedOutputs`), so that a failure leaves neither
  a half-written file nor some outputs of a run without the others.

Nothing here imports a third-party package: the programs pass the suffixes their writers
know (Pillow's image formats, ``.npy``, ``.json``, ...).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

__all__ = [
    "OutputError",
    "StagedOutputs",
    "add_force_argument",
    "add_output_arguments",
    "announce_replace",
    "announce_replace_from_args",
    "check_not_inputs",
    "check_output_file",
    "check_output_folder",
    "output_folder_from_args",
    "write_text",
]


class OutputError(OSError):
    """An output path that cannot be written; the message names the path and why."""


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def _probe(folder: Path, shown: str) -> None:
    """Make and remove a file in ``folder``; ``shown`` is the path the message names."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise OutputError(f"cannot write to {shown}: {_reason(exc)}") from exc


def check_output_folder(path: str | os.PathLike[str] | None = None, *, make: bool = True) -> Path:
    """The folder results go to (default: the current folder), made if missing and checked
    writable; returns it as a :class:`~pathlib.Path`.

    Raises
    ------
    OutputError
        The folder cannot be made or written in; the message names it and says why.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp()) / "new" / "results"
    >>> check_output_folder(folder) == folder and folder.is_dir()
    True
    """
    folder = Path.cwd() if path is None else Path(path)
    for part in (folder, *folder.parents):  # a file where a folder is meant: say which
        if part.exists():
            if not part.is_dir():
                raise OutputError(
                    f"cannot write results to {str(folder)!r}: {str(part)!r} is a file, "
                    "not a folder"
                )
            break
    try:
        if make:
            folder.mkdir(parents=True, exist_ok=True)
        elif not folder.is_dir():
            raise FileNotFoundError(2, "no such folder")
        # a real write: os.access says yes to root on read-only mounts
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise OutputError(f"cannot write results to {str(folder)!r}: {_reason(exc)}") from exc
    return folder


def check_output_file(
    path: str | os.PathLike[str],
    suffixes: Iterable[str] | None = None,
    *,
    example: str | None = None,
) -> Path:
    """Check, before any work, that a file can be written at ``path``; returns it.

    ``suffixes``: the suffixes the writer knows (``(".png", ".jpg")``; case does not
    matter), or ``None`` for any. ``example``: a file name for the messages
    (``frame.png``). The folder must exist (it is not made) and take a new file; an
    existing ``path`` must be a plain file (:func:`announce_replace` says whether it may be
    replaced).

    Raises
    ------
    OutputError
        The file cannot be written there; the message names the path and says why.

    Examples
    --------
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> check_output_file(Path(folder) / "frame.png", (".png",)).name
    'frame.png'
    >>> try:
    ...     check_output_file("frame.xyz", (".png", ".jpg"))
    ... except OutputError as exc:
    ...     print(exc)
    frame.xyz: unknown format '.xyz'; use .png or .jpg
    """
    target = Path(path)
    shown = os.fspath(path)
    if not shown:  # Path("") is the current folder: say what is wrong, not "is a folder"
        hint = f" ({example})" if example else ""
        raise OutputError(f"empty output file name; give a file name{hint}")
    if target.is_dir():
        hint = f" ({example})" if example else ""
        raise OutputError(f"{shown}: is a folder; give a file name{hint}")
    if suffixes is not None:
        known = [s.lower() for s in suffixes]
        suffix = target.suffix.lower()
        if suffix not in known:
            listed = known if len(known) <= 6 else [*known[:6], "..."]
            choices = ", ".join(listed[:-1]) + " or " + listed[-1] if len(listed) > 1 else known[0]
            raise OutputError(f"{shown}: unknown format {suffix or '(no suffix)'!r}; use {choices}")
    if target.exists() and not target.is_file():
        raise OutputError(f"{shown}: exists and is not a plain file")
    if target.exists() and not os.access(target, os.W_OK):
        raise OutputError(f"{shown}: the existing file is read-only")
    folder = target.resolve().parent
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise OutputError(f"{shown}: folder {folder} {what}")
    _probe(folder, shown)
    return target


def check_not_inputs(
    outputs: Iterable[str | os.PathLike[str] | None],
    inputs: Iterable[str | os.PathLike[str] | None],
) -> None:
    """Refuse, before any work, an output that is one of the inputs (the same file by any
    path): an output never replaces an input.

    Raises
    ------
    OutputError
        Naming the output.

    Examples
    --------
    >>> try:
    ...     check_not_inputs(["./scan.dcm"], ["scan.dcm"])
    ... except OutputError as exc:
    ...     print(exc)
    ./scan.dcm: is this command's input; write the result to another file
    """
    given = [Path(p) for p in inputs if p is not None and os.fspath(p)]
    for out in outputs:
        if out is None or not os.fspath(out):
            continue
        target = Path(out)
        for source in given:
            same = target.resolve() == source.resolve()
            if not same and target.exists() and source.exists():
                same = os.path.samefile(target, source)  # a hard link, say
            if same:
                raise OutputError(
                    f"{os.fspath(out)}: is this command's input; write the result to another file"
                )


def announce_replace(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str] | None],
    *,
    force: bool = False,
    echo: Callable[[str], Any] = print,
) -> list[Path]:
    """The rule for output files that exist: refused without ``force``; with it, a line
    ``replacing PATH`` for each. Returns the paths that exist.

    Called after the other checks and before the work, so that nothing is computed for
    an output that will not be written, and a user who forced it can still stop in time.

    Raises
    ------
    OutputError
        Without ``force``, naming the first file that exists and the way out.

    Examples
    --------
    >>> import tempfile
    >>> old = Path(tempfile.mkdtemp()) / "frame.png"
    >>> _ = old.write_bytes(b"")
    >>> try:
    ...     announce_replace([old.parent / "new.png", old])
    ... except OutputError as exc:
    ...     print(str(exc).replace(str(old.parent), "DIR"))
    DIR/frame.png: exists; add --force to replace it, or choose another name
    >>> [p.name for p in announce_replace([old], force=True, echo=lambda line: None)]
    ['frame.png']
    """
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    existing = [Path(p) for p in paths if p is not None and os.fspath(p) and Path(p).is_file()]
    if existing and not force:
        raise OutputError(
            f"{os.fspath(existing[0])}: exists; add --force to replace it, or choose another name"
        )
    for p in existing:
        echo(f"replacing {os.fspath(p)}")
    return existing


def add_force_argument(parser: argparse.ArgumentParser | Any) -> None:
    """Add ``--force`` (replace output files that exist) to ``parser`` (or a group)."""
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace output files that exist",
    )


def announce_replace_from_args(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str] | None],
) -> list[Path]:
    """:func:`announce_replace` with the ``--force`` of ``args``; a refusal ends the
    program with a one-line error (status 2). Returns the paths that exist."""
    try:
        return announce_replace(paths, force=args.force)
    except OutputError as exc:
        parser.exit(2, f"{parser.prog}: {exc}\n")


class StagedOutputs:
    """Write several files under temporary names and rename them into place together.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> with StagedOutputs() as stage:
    ...     _ = stage.path(folder / "a.json").write_text("{}")
    ...     visible = [p.name for p in folder.iterdir() if not p.name.startswith(".")]
    >>> visible, sorted(p.name for p in folder.iterdir())
    ([], ['a.json'])

    :meth:`path` gives the temporary name for a final path: in the same folder (so that
    the rename is atomic), hidden, with the same suffix (writers pick the format from it).
    On leaving the ``with`` block normally every temporary file is renamed to its final
    name; on an exception all of them are removed and no final file is touched.
    """

    def __init__(self) -> None:
        self._staged: list[tuple[Path, Path]] = []

    def path(self, final: str | os.PathLike[str]) -> Path:
        final = Path(final)
        target = Path(os.path.realpath(final)) if final.is_symlink() else final
        fd, tmp = tempfile.mkstemp(
            dir=target.resolve().parent, prefix=f".{target.name}.", suffix=target.suffix
        )
        os.close(fd)
        self._staged.append((Path(tmp), target))
        return Path(tmp)

    def commit(self) -> None:
        """Rename every staged file to its final name (keeping an old file's mode)."""
        umask = os.umask(0)
        os.umask(umask)
        for tmp, final in self._staged:
            mode = final.stat().st_mode & 0o7777 if final.is_file() else 0o666 & ~umask
            os.chmod(tmp, mode)
            os.replace(tmp, final)
        self._staged.clear()

    def discard(self) -> None:
        """Remove every staged file."""
        for tmp, _ in self._staged:
            try:
                tmp.unlink()
            except FileNotFoundError:
                pass
        self._staged.clear()

    def __enter__(self) -> StagedOutputs:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            try:
                self.commit()
            except BaseException:
                self.discard()
                raise
        else:
            self.discard()


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (a temporary file, then a rename)."""
    with StagedOutputs() as stage:
        stage.path(path).write_text(text, encoding="utf-8")


def add_output_arguments(
    parser: argparse.ArgumentParser, *, save_dir: str | os.PathLike[str] | None = None
) -> None:
    """Add ``--out DIR`` (default: the current folder), ``--force`` (replace files that
    exist) and, given ``save_dir``, ``--save`` (write to ``save_dir``, the source tree's
    committed results) to ``parser``."""
    parser.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="output folder, made if missing (default: the current folder)",
    )
    add_force_argument(parser)
    if save_dir is not None:
        parser.add_argument(
            "--save",
            action="store_true",
            help=f"write to the source tree's committed results ({save_dir}) instead",
        )


def output_folder_from_args(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    *,
    save_dir: str | os.PathLike[str] | None = None,
) -> Path:
    """The checked output folder of ``--out``/``--save`` (see :func:`add_output_arguments`);
    a bad folder or both options end the program with a one-line usage error (status 2)."""
    out = args.out
    if getattr(args, "save", False):
        if out is not None:
            parser.error("--save and --out are exclusive")
        out = save_dir
    try:
        return check_output_folder(out)
    except OutputError as exc:
        parser.exit(2, f"{parser.prog}: {exc}\n")
