"""The built-in data sets: isosurfaces of the Marschner-Lobb test signal
(:mod:`~renderer.datasets.builtin`) and of a perforated rock formation
(:mod:`~renderer.datasets.oilwell`), extracted by the machine's own marching cubes and kept
in the cache folder.

>>> import renderer
>>> renderer.datasets.marschner_lobb(4).shape
(4, 4, 4)
"""

from renderer.datasets.builtin import (
    DATASETS,
    load_dataset,
    load_dataset_slab,
    marschner_lobb,
    workload_table,
)

__all__ = ["DATASETS", "load_dataset", "load_dataset_slab", "marschner_lobb", "workload_table"]
