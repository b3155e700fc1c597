"""``simd-emu view``: turn an isosurface in the browser, move its level, and watch the
balancing work.

The command takes what ``simd-emu render`` takes (a volume with ``--level``, ``--mesh
FILE`` or a built-in data set; the view, size, loop form, backend and picture options),
checks it, takes its port and renders the first frame, all before it serves: a missing
file, a level outside the volume's values or a port in use is one line, and nothing
starts. It then prints the page's address, with its token, opens the browser (unless
``--no-browser``) and serves until Ctrl-C. It listens on 127.0.0.1 unless ``--host``
says otherwise (and then warns). Under ``mpiexec -n N`` rank 0 serves and every rank
renders its share of each frame (:mod:`renderer.viewer.ranks`).

The viewer itself is :mod:`renderer.viewer`; this module reads the command line.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from renderer.cli.arguments import (
    add_machine_arguments,
    add_picture_arguments,
    add_scene_arguments,
)
from renderer.cli.common import check_source_options, dataset_size, fail, picture_options

__all__ = ["DEFAULT_PORT", "PROGRAM", "check_view_options", "register", "run"]

#: The command, as its messages start.
PROGRAM = "simd-emu view"

#: The port a viewer listens on unless ``--port`` says otherwise.
DEFAULT_PORT = 8765

#: Packages the command imports, by the extra that installs them (checked by simd.cli).
REQUIRES = {
    "data": ("PIL", "matplotlib"),
    "view": ("starlette", "uvicorn", "websockets"),
}

DESCRIPTION = (
    "Show a volume's isosurface (VOLUME --level L), a mesh file or a built-in data set in "
    "the browser, rendered by the emulated SIMD machine: drag to turn it, the wheel to zoom, "
    "double-click to reset; for a volume, a slider moves the level (the surface is "
    "extracted again on the machine). A panel shows every frame's numbers: triangles, the "
    "time of each stage on the wall clock and the model clock, each balanced loop's "
    "iterations with and without balancing, the balancer's decisions, and the work per "
    "processor before and after balancing. The server listens on 127.0.0.1 (--host for "
    "others) and its address carries a random token; Ctrl-C stops it. Under mpiexec -n N, "
    "rank 0 serves and the N ranks render each frame together."
)


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``view`` subcommand to ``subparsers`` (``simd.cli`` calls this)."""
    p = subparsers.add_parser(
        "view",
        help="turn an isosurface in the browser and watch the balancing work",
        description=DESCRIPTION,
    )
    add_scene_arguments(p)
    add_machine_arguments(p)
    serving = p.add_argument_group("serving")
    serving.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default: 127.0.0.1, this machine only; 0.0.0.0 "
        "for every network, which anyone who learns the address's token can then drive)",
    )
    serving.add_argument(
        "--port",
        type=_port,
        default=DEFAULT_PORT,
        help=f"the port to listen on (default: {DEFAULT_PORT}; 0 for any free one)",
    )
    serving.add_argument(
        "--no-browser", action="store_true", help="print the address only; open no browser"
    )
    add_picture_arguments(p)
    p.set_defaults(func=run)
    return p


def _port(text: str) -> int:
    """A TCP port, 0 to 65535.

    >>> _port("8765")
    8765
    """
    try:
        value = int(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"must be a port number, got {text!r}") from err
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be 0 to 65535, got {text}")
    return value


def run(args: argparse.Namespace) -> int:
    """Handler of ``simd-emu view``; returns the exit status."""
    from simd.launch import launched_rank, world

    try:
        check_source_options(args)
        check_view_options(args)
    except ValueError as err:
        return fail(err, say=launched_rank() == 0, program=PROGRAM)
    try:
        comm = world()
    except RuntimeError as err:
        return fail(err, program=PROGRAM)
    if comm is not None:
        return _run_ranks(args, comm)
    return _run_here(args)


def _run_here(args: argparse.Namespace) -> int:
    """The viewer on this process: checks, the port, the first frame, then serving."""
    from renderer.viewer.serving import bind
    from simd import Machine, SimdError

    warn_host(args.host)
    try:
        sock = bind(args.host, args.port)
    except OSError as err:
        return fail(err, program=PROGRAM)
    try:
        machine = Machine(pes=args.pes, backend=args.backend)
        viewer = prepare(args, load_source(args, machine))
    except (ValueError, OSError, SimdError) as err:
        sock.close()
        return fail(err, program=PROGRAM)
    return serve(viewer, sock, open_browser=not args.no_browser)


def _run_ranks(args: argparse.Namespace, comm: Any) -> int:
    """The viewer on the ranks of ``comm``: rank 0 takes the port and serves; every rank
    loads its share and renders every frame (:mod:`renderer.viewer.ranks`). A bad input
    on any rank is one line from rank 0, and every rank exits with status 2."""
    from renderer.cli.common import rank_errors
    from renderer.viewer.ranks import follow, leading, stop
    from simd import Machine

    root = comm.Get_rank() == 0
    errors = rank_errors()
    sock = None
    try:
        machine = Machine(pes=args.pes, backend=args.backend, comm=comm)
        with machine.ranks.collective_errors():
            if root:
                from renderer.viewer.serving import bind

                warn_host(args.host)
                sock = bind(args.host, args.port)
        viewer = prepare(args, load_source(args, machine))
    except errors as err:
        if sock is not None:
            sock.close()
        return fail(err, say=root, program=PROGRAM)
    if not root:
        follow(viewer.maker, comm)
        return 0
    viewer.make = leading(viewer.maker, comm)
    try:
        return serve(viewer, sock, open_browser=not args.no_browser)
    finally:
        stop(comm)


def check_view_options(args: argparse.Namespace) -> None:
    """Refuse a first view the page could not ask for (an elevation beyond 90 degrees, a
    magnification out of range, an unknown colour map, a light of no direction), in one
    line before anything is read."""
    from renderer.scene.camera import unit_vector
    from renderer.viewer.requests import Choices, ViewRequest

    view = {"azimuth": args.view[0], "elevation": args.view[1]}
    ViewRequest.parse({**view, "magnification": args.magnification}, Choices())
    if args.colormap is not None:
        from renderer.stages.shading import surface_colours

        surface_colours(1, values=[0.0], colormap=args.colormap)  # a name matplotlib knows
    if args.light is not None:
        unit_vector(args.light, "--light")


def warn_host(host: str) -> None:
    """A warning when the viewer listens beyond this machine."""
    from renderer.viewer.serving import LOCAL_HOST

    if host not in (LOCAL_HOST, "localhost", "::1"):
        print(
            f"{PROGRAM}: warning: listening on {host}, beyond this machine: anyone who can "
            "reach it and learns the address (with its token) can drive the viewer",
            file=sys.stderr,
        )


def load_source(args: argparse.Namespace, machine: Any) -> Any:
    """What the viewer shows, from the options: a volume (read, its range of values
    found), a mesh file or a built-in data set; on MPI ranks, this rank's share (every
    rank calls this together; a file one rank cannot read fails on every rank)."""
    from contextlib import nullcontext

    from renderer.scene.mesh import Mesh
    from renderer.viewer.source import Source

    ranks = machine.ranks
    with ranks.collective_errors() if ranks is not None else nullcontext():
        data = _read(args, ranks)
    up = tuple(args.up) if args.up is not None else None
    if isinstance(data, Mesh):
        # a rank's slab of a data set is named for its slab; the page shows the whole's
        slab = "" if ranks is None else f"-slab{ranks.rank}of{ranks.size}"
        name = data.name.removesuffix(slab) if slab else data.name
        return Source.of_mesh(data, machine, up=up, name=name)
    return Source.of_volume(data, machine, up=up)


def _read(args: argparse.Namespace, ranks: Any) -> Any:
    """The volume (a ``.npy`` file mapped on MPI ranks, so that each reads its slab), the
    mesh file or the built-in data set; on MPI ranks, this rank's share of a mesh."""
    if args.volume:
        from renderer.contour.volumes import read_volume

        return read_volume(args.volume, mmap=ranks is not None)
    if args.mesh:
        from renderer.scene.mesh import load_mesh, mesh_share

        mesh = load_mesh(args.mesh)
        return mesh if ranks is None else mesh_share(mesh, ranks.rank, ranks.size)
    from renderer.datasets.builtin import load_dataset, load_dataset_slab

    if ranks is not None:
        return load_dataset_slab(args.dataset, dataset_size(args), ranks.rank, ranks.size)
    return load_dataset(args.dataset, dataset_size(args))


def prepare(args: argparse.Namespace, source: Any) -> Any:
    """The viewer of ``source`` as the options say: the picture options the page cannot
    change, the first view (checked as the page's requests are: a level outside the
    volume's values is refused here), and its first frame made (compiling what frames
    run, before the address is printed). On MPI ranks every rank calls this together.
    """
    import dataclasses

    from renderer.scene.camera import EYE_LIGHT
    from renderer.viewer.frames import FrameMaker
    from renderer.viewer.requests import ViewRequest
    from renderer.viewer.sessions import Viewer

    fixed = argparse.Namespace(**{**vars(args), "colormap": None, "light": None})
    picture = picture_options(fixed, None)
    if args.colormap is not None and args.colormap not in source.choices.colormaps:
        more = (*source.choices.colormaps, args.colormap)
        source.choices = dataclasses.replace(source.choices, colormaps=more)
    if args.colormap is not None and args.colour_by not in source.choices.colour_by:
        raise ValueError(
            f"--colour-by {args.colour_by} needs the whole mesh's box; not on several MPI "
            "ranks (--colour-by height is)"
        )
    initial = ViewRequest.initial(
        source.choices,
        azimuth=args.view[0],
        elevation=args.view[1],
        magnification=args.magnification,
        level=args.level,
        loop=args.loop,
        shading=args.shading,
        colormap=args.colormap,
        colour_by=args.colour_by,
        light=tuple(args.light) if args.light is not None else EYE_LIGHT,
    )
    maker = FrameMaker(source, tuple(args.size), picture=picture, clock=args.clock)
    viewer = Viewer(maker, initial)
    maker.render(initial)
    return viewer


def serve(viewer: Any, sock: Any, *, open_browser: bool) -> int:
    """Serve ``viewer`` on ``sock`` until Ctrl-C: print the address, open the browser."""
    from renderer.viewer.app import make_app, new_token
    from renderer.viewer.serving import Server, address

    token = new_token()
    server = Server(make_app(viewer, token), sock)
    url = address(sock, token)

    def announce() -> None:
        print(f"{PROGRAM}: {viewer.maker.source.name} at {url}", flush=True)
        print(f"{PROGRAM}: open that address in a browser; Ctrl-C stops the viewer", flush=True)
        if open_browser:
            import webbrowser

            webbrowser.open(url)

    try:
        server.run(announce)
    finally:
        viewer.close()
    frames = f"{viewer.frames} frame{'' if viewer.frames == 1 else 's'}"
    print(f"{PROGRAM}: stopped after {frames}", flush=True)
    return 0
