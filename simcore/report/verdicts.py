"""Verdicts: whether a published claim is reproduced, by one rule.

A claim's `paper` holds what the paper printed, as a string (or a plain number): `63%`,
`about 80%`, `greater than 84%`, `< -48%`, `+15%`, `0.52`, `18-27%`, `-27% to -18%`,
`1,800 s`, `about 90 min`, `4:25:23` (h:mm:ss), `2x` (a factor), `46% / 36%` (a quotient
of two printed values). `read_printed` turns it into an interval of admissible values (a
point, a range, or a one-sided bound) in the store's units, percentages as fractions and
times in seconds, and a default tolerance:

- half a unit of the last printed digit, in the printed unit (`63%`: 0.5 points, i.e.
  0.005; `0.52`: 0.005; `1,800 s` and `4:25:23`: 0.5 s; `2x`: 0.5); for a quotient, the two halves
  propagated (|a/b| (da/|a| + db/|b|));
- for `about`, `approximately`, `around`, `roughly`, `nearly`, `almost`, `close(r) to`:
  5 points for a percentage, 5% of the value otherwise, if wider than the above.

A claim may state `tolerance:` (in the store's units), which replaces the default. A
factor (`2x`) compared with a relative change (a `change` query) is read as the change
r - 1. A claim's direction is its `direction:` (`higher` or `lower`: the sign of our
relative change), or, for a `change` query, the side of zero its printed value lies on.

The rule, for our value v of the claim's query:

- *calibrated*: the claim declares `calibrated:` (the fitted constant and what it was
  fitted to, or why the value is fixed by construction): shown, never scored;
- *shown*: the claim declares `shown:` (why: another reading of the paper, run beside
  the scored one, or another row of the same statement): shown, never scored;
- *extension*: the claim declares `extension:` and has no published value: our own
  result, shown apart and never scored;
- *not run*: the store has no runs the query selects; kept out of the scored counts;
- *reproduced*: v lies in the printed interval widened on each side by the tolerance
  plus the half-width of the 95% confidence interval of v (Student t over the query's
  per-seed values; nothing with one seed); a claim with no printed value and a direction
  is reproduced when v has that sign;
- *partly*: not reproduced, but the claim has a direction and v has that sign (nonzero);
- *not reproduced*: otherwise, including a value the runs leave undefined.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from simcore.base.errors import ConfigError
from simcore.report.tables import half_width as confidence_half_width

#: The verdicts, in the order the report counts them.
VERDICTS = ("reproduced", "partly", "not reproduced", "calibrated", "shown", "extension",
            "not run")
#: Those that compare our value with a published one.
SCORED = ("reproduced", "partly", "not reproduced")
DIRECTIONS = ("higher", "lower")
#: "about" and its kin: 5 points for a percentage, 5% of the value otherwise.
APPROXIMATE = 0.05

#: The rule as the report states it (the module docstring says the same): how a value is
#: read, then each verdict and when it is given.
RULE_READING = (
    "A claim's printed value (a point, a range or a one-sided bound) carries a tolerance: "
    "half a unit of its last printed digit (63% ± 0.5 points), 5 points (or 5% of a "
    "value that is not a percentage) when it says *about*, or the tolerance the claim "
    "states. Where the query's runs have several seeds, the tolerance is widened by the "
    "half-width of the 95% confidence interval of ours (Student t over per-seed values). "
    "A claim's direction is the sign the paper gives a relative change (or the "
    "`direction` the claim states). Then, for our value:")
RULE = (
    ("reproduced", "inside the printed value, range or bound widened by the tolerance; "
                   "a claim with only a direction: ours has its sign"),
    ("partly", "not reproduced, but ours has the claim's direction (same sign, nonzero)"),
    ("not reproduced", "otherwise, or ours is undefined on the runs"),
    ("calibrated", "the value is fitted to, or fixed by construction from, the paper's: "
                   "shown, never scored"),
    ("shown", "another reading of the paper, run beside the scored one: shown, never "
              "scored"),
    ("extension", "our own result, with no published value: shown apart, never scored"),
    ("not run", "the store has no runs for the claim's query: not scored"),
)

_UNITS = {  # printed unit -> (shown as, store units per printed unit)
    "%": ("%", 0.01), "s": ("s", 1.0), "sec": ("s", 1.0), "seconds": ("s", 1.0),
    "min": ("min", 60.0), "minutes": ("min", 60.0), "h": ("h", 3600.0),
    "hours": ("h", 3600.0), "x": ("x", 1.0), "×": ("x", 1.0), "times": ("x", 1.0),
}
_APPROXIMATE_WORDS = ("about", "approximately", "around", "roughly", "nearly", "almost",
                      "close to", "closer to")
_LOWER_BOUNDS = ("greater than", "more than", "no less than", "not less than", "at least",
                 "above", "over", ">=", "≥", ">")
_UPPER_BOUNDS = ("less than", "fewer than", "no more than", "not more than", "at most",
                 "below", "under", "<=", "≤", "<")
_NUMBER = r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
_UNIT = "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True))


def _term_pattern(name: str) -> str:
    """A number named `name` and its optional unit named `name`u."""
    return rf"(?P<{name}>{_NUMBER})\s*(?P<{name}u>(?:{_UNIT})(?![a-z]))?"


_SINGLE = re.compile(rf"^{_term_pattern('a')}$")
_RANGE = re.compile(rf"^{_term_pattern('a')}\s*(?:to|-|–)\s*{_term_pattern('b')}$")
_QUOTIENT = re.compile(rf"^{_term_pattern('a')}\s*/\s*{_term_pattern('b')}$")
_CLOCK = re.compile(r"\b(\d+):([0-5]\d):([0-5]\d)\b")


def _seconds(match: re.Match[str]) -> str:
    """A printed h:mm:ss as seconds, printed to the second."""
    hours, minutes, seconds = (int(g) for g in match.groups())
    return f"{3600 * hours + 60 * minutes + seconds} s"


@dataclass(frozen=True)
class Printed:
    """A paper value as printed: the admissible interval [low, high] (infinite on a
    bound's open side) and the default tolerance, both in the store's units, the unit it
    was printed in with that unit's size in store units, and its most decimals."""

    text: str
    low: float
    high: float
    tolerance: float
    unit: str
    scale: float
    decimals: int = 0


def read_printed(value: object) -> Printed:
    """The printed value `value` (a string, or a number read as written); ValueError
    saying what is wrong when it is not one."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"{value!r} is not a printed value (a string or a number)")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{value!r} is not a printed value")
    text = " ".join(str(value).replace("−", "-").split())
    body, approximate, bound = _CLOCK.sub(_seconds, text.lower()), False, None
    for word in _APPROXIMATE_WORDS:
        if body.startswith(word + " "):
            body, approximate = body[len(word):].strip(), True
            break
    else:
        for side, words in (("low", _LOWER_BOUNDS), ("high", _UPPER_BOUNDS)):
            word = next((w for w in words if body.startswith(w)
                         and (not w[-1].isalpha() or body[len(w):len(w) + 1] == " ")), None)
            if word:
                body, bound = body[len(word):].strip(), side
                break
    if match := _SINGLE.match(body):
        number, unit, scale = _term(match, "a")
        low = high = number * scale
        tolerance = _half_digit(match["a"]) * scale
    elif (match := _RANGE.match(body)) and bound is None:
        (a, unit_a, _), (b, unit, scale) = _term(match, "a"), _term(match, "b")
        if match["au"] and unit_a != unit:
            raise ValueError(f"{text!r}: a range's ends in different units")
        if a > b:
            raise ValueError(f"{text!r}: a range runs from the lower end to the higher")
        low, high = a * scale, b * scale
        tolerance = max(_half_digit(match["a"]), _half_digit(match["b"])) * scale
    elif (match := _QUOTIENT.match(body)) and bound is None:
        (a, unit_a, _), (b, unit_b, _) = _term(match, "a"), _term(match, "b")
        if unit_a != unit_b or a == 0 or b == 0:
            raise ValueError(f"{text!r}: a quotient of two nonzero values in one unit")
        low = high = a / b
        tolerance = abs(a / b) * (_half_digit(match["a"]) / abs(a)
                                  + _half_digit(match["b"]) / abs(b))
        unit, scale = "x", 1.0
    else:
        raise ValueError(f"cannot read {text!r} as a printed value: a number with an "
                         "optional unit (%, s, min, h, x) or h:mm:ss, a range (18-27%), a quotient "
                         "(46% / 36%), after 'about' or a bound (greater than, <, ...)")
    if approximate:
        size = APPROXIMATE if unit == "%" else APPROXIMATE * max(abs(low), abs(high))
        tolerance = max(tolerance, size)
    if bound == "low":
        high = math.inf
    elif bound == "high":
        low = -math.inf
    decimals = max(len(n.partition(".")[2]) for n in re.findall(_NUMBER, body))
    return Printed(text, low, high, tolerance, unit, scale, decimals)


def _term(match: re.Match[str], name: str) -> tuple[float, str, float]:
    unit, scale = _UNITS.get(match[name + "u"] or "", ("", 1.0))
    return float(match[name].replace(",", "")), unit, scale


def _half_digit(numeral: str) -> float:
    """Half a unit of the numeral's last printed digit."""
    _, _, decimals = numeral.partition(".")
    return 0.5 * 10.0 ** -len(decimals)


def half_width(values: Sequence[float]) -> float:
    """Half-width of the 95% confidence interval of the mean of `values` (Student t, as the
    tables give it); 0 below two values."""
    return confidence_half_width(values, 0.95) or 0.0


@dataclass(frozen=True)
class Verdict:
    """A claim's verdict, with what it was decided on: the admissible interval in the
    query's terms, the stated tolerance and the widening by our confidence interval
    (store units; None where the claim has no printed value), and the direction."""

    name: str
    printed: Printed | None = None
    low: float | None = None
    high: float | None = None
    tolerance: float | None = None
    widening: float = 0.0
    direction: str | None = None

    def difference(self, ours: float | None) -> float | None:
        """Ours minus the nearest admissible value (0 inside the printed interval)."""
        if ours is None or self.low is None or self.high is None:
            return None
        if ours < self.low:
            return ours - self.low
        return ours - self.high if ours > self.high else 0.0


def check_claim(claim: Mapping[str, Any], at: str) -> None:
    """Refuse a claim without what its verdict needs, naming the key (`at` names the
    file, seed and claim)."""
    calibrated, extension = claim.get("calibrated"), claim.get("extension")
    labels = [key for key in ("calibrated", "shown", "extension") if key in claim]
    if len(labels) > 1:
        raise ConfigError(f"{at}: both {labels[0]!r} and {labels[1]!r}; a claim is one of "
                          "calibrated, shown and extension, or none")
    if "calibrated" in claim and not (isinstance(calibrated, str) and calibrated.strip()):
        raise ConfigError(f"{at}.calibrated: {calibrated!r}; expected a sentence naming the "
                          "fitted constant and what it was fitted to")
    shown = claim.get("shown")
    if "shown" in claim and not (isinstance(shown, str) and shown.strip()):
        raise ConfigError(f"{at}.shown: {shown!r}; expected a sentence saying why the row is "
                          "shown and not scored (e.g. the reading it follows)")
    if "extension" in claim:
        if extension is not True and not (isinstance(extension, str) and extension.strip()):
            raise ConfigError(f"{at}.extension: {extension!r}; expected true or a sentence")
        for key in ("paper", "tolerance", "direction"):
            if claim.get(key) is not None:
                raise ConfigError(f"{at}.{key}: an extension has no published value to "
                                  "compare with")
        return
    tolerance = claim.get("tolerance")
    if tolerance is not None and (isinstance(tolerance, bool)
                                 or not isinstance(tolerance, int | float)
                                 or not 0 <= tolerance < math.inf):
        raise ConfigError(f"{at}.tolerance: {tolerance!r}; expected a number >= 0 in the "
                          "store's units (fractions for percentages)")
    direction = claim.get("direction")
    if direction is not None:
        if direction not in DIRECTIONS:
            raise ConfigError(f"{at}.direction: {direction!r}; expected one of {DIRECTIONS}")
        if "change" not in claim["query"]:
            raise ConfigError(f"{at}.direction: a direction is the sign of a relative "
                              "change; this claim's query is not a 'change'")
    if claim["paper"] is None:
        if calibrated is not None:
            raise ConfigError(f"{at}.paper: a calibrated claim shows the published value "
                              "it was fitted to; give it")
        if direction is None:
            raise ConfigError(f"{at}.paper: no published value and no 'direction': a "
                              "scored claim needs one (or mark it 'extension')")
        if tolerance is not None:
            raise ConfigError(f"{at}.tolerance: no published value to be tolerant of")
        return
    try:
        printed = read_printed(claim["paper"])
    except ValueError as error:
        raise ConfigError(f"{at}.paper: {error}") from None
    low, high = _in_query_terms(printed, claim["query"])
    if direction is not None and not (low > 0 if direction == "higher" else high < 0):
        raise ConfigError(f"{at}.direction: {direction!r} contradicts the paper's "
                          f"{printed.text!r}")


def _in_query_terms(printed: Printed, query: Mapping[str, Any]) -> tuple[float, float]:
    """The printed interval as the query computes it: a factor compared with a relative
    change is the change r - 1."""
    if printed.unit == "x" and "change" in query:
        return printed.low - 1.0, printed.high - 1.0
    return printed.low, printed.high


def judge(claim: Mapping[str, Any], ours: float | None, spread: float = 0.0,
          ran: bool = True) -> Verdict:
    """The verdict on a checked claim (`check_claim`) given our value of its query (None
    when undefined), the half-width of our 95% confidence interval (`half_width` of the
    per-seed values) and whether the store has runs for the query at all."""
    printed = None if claim.get("paper") is None else read_printed(claim["paper"])
    low, high = (None, None) if printed is None else _in_query_terms(printed, claim["query"])
    direction = claim.get("direction")
    if direction is None and low is not None and high is not None and "change" in claim["query"]:
        direction = "higher" if low > 0 else "lower" if high < 0 else None
    stated = claim.get("tolerance")
    tolerance = None if printed is None else float(
        printed.tolerance if stated is None else stated)
    facts = {"printed": printed, "low": low, "high": high, "tolerance": tolerance,
             "direction": direction}
    if "extension" in claim:
        return Verdict("extension", **facts)
    if "calibrated" in claim:
        return Verdict("calibrated", **facts)
    if "shown" in claim:
        return Verdict("shown", **facts)
    if not ran:
        return Verdict("not run", **facts)
    facts["widening"] = spread
    if ours is None or math.isnan(ours):
        return Verdict("not reproduced", **facts)
    holds = direction is not None and (ours > 0 if direction == "higher" else ours < 0)
    if low is None or high is None or tolerance is None:
        return Verdict("reproduced" if holds else "not reproduced", **facts)
    margin = tolerance + spread
    if low - margin <= ours <= high + margin:
        return Verdict("reproduced", **facts)
    return Verdict("partly" if holds else "not reproduced", **facts)
