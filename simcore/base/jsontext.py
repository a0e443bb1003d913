"""Strict JSON text: what the command line prints and a schedule's run.json holds."""

from __future__ import annotations

import json
import math


def json_text(value: object) -> str:
    """Strict JSON: a value that is not a finite number (NaN, infinity) is written as null,
    since JSON has no such numbers."""
    def clean(v: object) -> object:
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [clean(x) for x in v]
        return v

    return json.dumps(clean(value), indent=2, allow_nan=False)
