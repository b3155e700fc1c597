"""A frame spread over MPI ranks, rendered sort-last: each rank renders its share of the
triangles (:mod:`~renderer.ranks.sortlast`), the ranks balance their clipped triangles
before the loops (:mod:`~renderer.ranks.balance`), and their depth-key buffers are
composited by binary swap (:mod:`~renderer.ranks.composite`).
"""
