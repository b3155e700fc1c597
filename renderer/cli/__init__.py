"""The command line: ``simd-emu render`` (:mod:`~renderer.cli.render`) and ``simd-emu
isosurface`` (:mod:`~renderer.cli.isosurface`), their arguments and checks
(:mod:`~renderer.cli.arguments`), what a render does alike on one process and on MPI ranks
(:mod:`~renderer.cli.common`, :mod:`~renderer.cli.ranks`), and the volume arguments both
commands share (:mod:`~renderer.cli.volumes`). Nothing else in the renderer imports it.
"""
