"""Schedulers (Krevat 2003, chapter 2; Mu'alem and Feitelson 2001): numba decision steps."""
