"""The CM-5 of Ahrens & Hansen (1995): their Tables 2 to 4 reproduced on the model clock
(``paper.py``), the workloads with their Table 1 statistics (``workload.py``), and the fit
of the cost model's constants (``fit.py``)."""
