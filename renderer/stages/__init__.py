"""The frame's stages and their kernels: one module a stage, in the order a frame runs
them, each with its fused kernel beside it (``<stage>_kernels.py``: a scalar body written
once, compiled by Numba for the CPU and, in :mod:`~renderer.stages.cuda_kernels`, for the
GPU).

- :mod:`~renderer.stages.transform`: model space to clip and window space (one VP a vertex);
- :mod:`~renderer.stages.clip`: trivial rejection, near and far clipping (one VP a polygon);
- :mod:`~renderer.stages.scan`: triangle set-up and the scan-conversion loop (one task a
  scan line), with the edge functions of :mod:`~renderer.stages.edges`;
- :mod:`~renderer.stages.zbuffer`: the z-buffer loop (one task a pixel of a span);
- :mod:`~renderer.stages.shading`: Lambert shading (one VP a pixel);
- :mod:`~renderer.stages.picture`: the background and supersampling.

:mod:`~renderer.stages.fast_paths` names each fused kernel in the registry of
:mod:`kernels.fastpaths`. The steps that carry one frame through these stages are in
:mod:`renderer.steps`.
"""
