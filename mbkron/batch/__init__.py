"""Batches of analyses and simulations over many trials or parameter sets, on dask.distributed
(the optional ``distributed`` extra)."""
