"""The command line: ``simd-emu render`` (:mod:`~renderer.cli.render`), ``simd-emu
isosurface`` (:mod:`~renderer.cli.isosurface`) and ``simd-emu view``
(:mod:`~renderer.cli.view`; the viewer itself is :mod:`renderer.viewer`), their arguments
and checks (:mod:`~renderer.cli.arguments`), what a render does alike on one process and
on MPI ranks (:mod:`~renderer.cli.common`, :mod:`~renderer.cli.ranks`), and the volume
arguments the commands share (:mod:`~renderer.cli.volumes`). Nothing else in the renderer
imports it.
"""
