"""The MasPar MP-1 of Biagioni & Prins (1991): what their paper states about Figures 8 to 10
beside our runs (``paper.py``)."""
