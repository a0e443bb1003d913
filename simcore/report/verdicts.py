"""Verdicts: whether a published claim is reproduced, by one rule a statistician can check.

A claim's `paper` holds what the paper printed, as a string (or a plain number): `63%`,
`about 80%`, `greater than 84%`, `< -48%`, `+15%`, `0.52`, `18-27%`, `-27% to -18%`,
`1,800 s`, `about 90 min`, `4:25:23` (h:mm:ss), `2x` (a factor), `46% / 36%` (a quotient
of two printed values). `read_printed` turns it into an interval of admissible values (a
point, a range, or a one-sided bound) in the store's units, percentages as fractions and
times in seconds, with the tolerance its wording gives: half a unit of the last printed
digit (`63%`: 0.5 points; `1,800 s`: 0.5 s; `2x`: 0.5; a quotient propagates its two
halves), or, after `about` and its kin, 5 points for a percentage and 5% of the value
otherwise, if wider.

A claim's `kind` says where the number comes from, and sets its default tolerance
(`tolerance`):

- `figure`: read off a plot: 2 points for a percentage, 5% of the value otherwise (or
  the wording's, if wider);
- `table`: printed in a table: the wording's (half a unit of the last digit);
- `measured`: a real machine's measurement: 5 points for a percentage, 5% otherwise,
  unless the claim states the paper's own spread;
- `text`: stated in prose: the wording's.

A claim with only a direction has 2 points of relative change as its tolerance of zero.

A claim's own `tolerance:` (store units) replaces the default, and needs a
`tolerance_why:`. A factor (`2x`) compared with a relative change (a `change` query) is read
as the change r - 1. A claim's direction is its `direction:` (`higher` or `lower`: the sign
of our relative change), or, for a `change` query, the side of zero its printed value lies
on.

Ours is the query's value on the store; for a `change`, the mean of the per-seed paired
changes (same seed, same workload). Its 95% confidence interval is Student t over the
per-seed values, given from `MIN_INTERVAL_RUNS` seeds, as in the tables and figures; a row
of fewer seeds has no interval (n = 1: one run). The admissible interval is the printed one
widened on each side by the tolerance. The rule:

- *reproduced*: ours lies in the admissible interval and our half-width is at most the
  tolerance, or our whole interval lies in the admissible one (a bound or a range): never
  through an interval wider than the tolerance that reaches outside; a claim with only a
  direction: our interval excludes zero on that side (one run: ours is beyond the
  tolerance of zero on that side);
- *near miss*: our interval (ours, with one run) lies outside the admissible interval,
  but ours is within twice the tolerance, or within 10%, of the nearest printed value;
- *not reproduced*: our interval lies outside the admissible interval, farther than a near
  miss, or a direction claim's interval excludes zero on the other side, or ours is
  undefined on the runs;
- *inconclusive*: the runs cannot decide: our interval overlaps the admissible interval and
  reaches outside it, wider than the tolerance or with ours outside, or a direction claim's
  interval holds zero (one run: ours within the tolerance of zero);
- *outside the model*: the claim declares `outside_model:` (what the model cannot
  express): counted among the scored claims, never reproduced;
- *calibrated*: the claim declares `calibrated:` (the fitted constant and what it was
  fitted to, or why the value is fixed by construction): shown, never scored;
- *shown*: the claim declares `shown:` (why: another reading of the paper, run beside
  the scored one, or another row of the same statement): shown, never scored;
- *not applicable*: the claim declares `not_applicable:` (a published number that is not a
  simulation outcome): shown, never scored;
- *extension*: the claim declares `extension:` and has no published value: our own
  result, shown apart and never scored;
- *not run*: the store has no runs the query selects; kept out of the scored counts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from simcore.base.confidence import half_width as confidence_half_width
from simcore.base.errors import ConfigError
from simcore.report.tables import MIN_INTERVAL_RUNS

#: The verdicts, in the order the report counts them.
VERDICTS = ("reproduced", "near miss", "not reproduced", "inconclusive", "outside the model",
            "calibrated", "shown", "not applicable", "extension", "not run")
#: Those counted among the scored claims: a claim compared with ours, or one the model
#: cannot express.
SCORED = ("reproduced", "near miss", "not reproduced", "inconclusive", "outside the model")
#: A claim's labels (its key and the verdict it gives), each with a sentence saying why.
LABELS = {"outside_model": "outside the model", "calibrated": "calibrated",
          "shown": "shown", "not_applicable": "not applicable", "extension": "extension"}
#: The labels of claims not compared with ours, which need no query.
UNCOMPARED = ("outside_model", "not_applicable")
#: Where a claim's number comes from (the default tolerance depends on it).
KINDS = ("figure", "table", "measured", "text")
DIRECTIONS = ("higher", "lower")
#: "about" and its kin, and a measurement without a printed spread: 5 points for a
#: percentage, 5% of the value otherwise.
APPROXIMATE = 0.05
#: A value read off a plot: 2 points for a percentage (5% of the value otherwise); also a
#: direction claim's tolerance of zero (relative change).
FIGURE_POINTS = 0.02
#: A miss is near within twice the tolerance, or within this share, of the printed value.
NEAR = 0.10

#: The rule as the report states it (the module docstring says the same): how a value is
#: read, then each verdict and when it is given.
RULE_READING = (
    "A claim's printed value (a point, a range or a one-sided bound) carries a tolerance set "
    "by its kind: read off a *figure*, 2 points for a percentage (5% of other values); "
    "printed in a *table*, half a unit of the last digit; *measured* on a real machine, the "
    "paper's own spread where printed, else 5 points (5%); in the *text*, as the wording "
    "says (half a unit of the last digit; *about*: 5 points, or 5%). A claim with only a "
    "direction has 2 points of relative change around zero. A tolerance a claim states "
    "says why. Ours is the query's value (a relative change: the mean of per-seed paired "
    "changes); its 95% confidence interval is Student t over per-seed values, from "
    f"{MIN_INTERVAL_RUNS} seeds as in the tables and figures (n = 1: one run, no interval). "
    "The admissible interval is the printed one widened by the tolerance. Then:")
RULE = (
    ("reproduced", "ours in the admissible interval and our half-width within the "
                   "tolerance, or our whole interval in the admissible one; a direction: our "
                   "interval excludes zero on its side (one run: beyond the tolerance)"),
    ("near miss", "our interval outside the admissible one, ours within twice the "
                  "tolerance or 10% of the printed value"),
    ("not reproduced", "our interval outside the admissible one and farther, a direction "
                       "whose interval excludes zero on the other side, or ours undefined"),
    ("inconclusive", "the runs cannot decide: our interval overlaps the admissible one and "
                     "reaches outside it, wider than the tolerance or with ours outside, or a "
                     "direction's holds zero (one run: within the tolerance of zero)"),
    ("outside the model", "what the model cannot express: scored, never reproduced"),
    ("calibrated", "the value is fitted to, or fixed by construction from, the paper's: "
                   "shown, never scored"),
    ("shown", "another reading of the paper, or another row of the same statement: shown, "
              "never scored"),
    ("not applicable", "a published number that is not a simulation outcome: shown, never "
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
            bound_word = next((w for w in words if body.startswith(w) and (
                not w[-1].isalpha() or body[len(w):len(w) + 1] == " ")), None)
            if bound_word:
                body, bound = body[len(bound_word):].strip(), side
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


def half_width(values: Sequence[float]) -> float | None:
    """Half-width of the 95% confidence interval of the mean of `values` (Student t, as the
    tables give it); None below `MIN_INTERVAL_RUNS` values, too few for an interval."""
    if len(values) < MIN_INTERVAL_RUNS:
        return None
    return confidence_half_width(values, 0.95)


def default_tolerance(printed: Printed, kind: str) -> float:
    """The tolerance a printed value of this kind carries when the claim states none."""
    value = max(abs(v) for v in (printed.low, printed.high) if math.isfinite(v))
    if kind == "figure":
        floor = FIGURE_POINTS if printed.unit == "%" else APPROXIMATE * value
    elif kind == "measured":
        floor = APPROXIMATE if printed.unit == "%" else APPROXIMATE * value
    else:
        floor = 0.0
    return max(printed.tolerance, floor)


@dataclass(frozen=True)
class Verdict:
    """A claim's verdict, with what it was decided on: the admissible interval in the
    query's terms and the tolerance (store units; None where the claim has no printed
    value), our half-width (None without an interval) over n per-seed values, and the
    direction."""

    name: str
    printed: Printed | None = None
    low: float | None = None
    high: float | None = None
    tolerance: float | None = None
    half_width: float | None = None
    n: int = 0
    direction: str | None = None

    def difference(self, ours: float | None) -> float | None:
        """Ours minus the nearest admissible value (0 inside the printed interval)."""
        if ours is None or self.low is None or self.high is None:
            return None
        if ours < self.low:
            return ours - self.low
        return ours - self.high if ours > self.high else 0.0


def _sentence_or_fail(claim: Mapping[str, Any], key: str, at: str, expected: str) -> None:
    value = claim[key]
    if not (isinstance(value, str) and value.strip()):
        raise ConfigError(f"{at}.{key}: {value!r}; expected {expected}")


def compared(claim: Mapping[str, Any]) -> bool:
    """Whether a claim is compared with ours (and so needs a query): not one labelled
    outside the model or not applicable."""
    return not any(key in claim for key in UNCOMPARED)


def check_claim(claim: Mapping[str, Any], at: str) -> None:
    """Refuse a claim without what its verdict needs, naming the key (`at` names the
    file, seed and claim)."""
    labels = [key for key in LABELS if key in claim]
    if len(labels) > 1:
        raise ConfigError(f"{at}: both {labels[0]!r} and {labels[1]!r}; a claim has at most "
                          f"one of {', '.join(LABELS)}")
    if "extension" in claim:
        extension = claim["extension"]
        if extension is not True and not (isinstance(extension, str) and extension.strip()):
            raise ConfigError(f"{at}.extension: {extension!r}; expected true or a sentence")
        for key in ("paper", "tolerance", "direction"):
            if claim.get(key) is not None:
                raise ConfigError(f"{at}.{key}: an extension has no published value to "
                                  "compare with")
        return
    for key, expected in (
            ("calibrated", "a sentence naming the fitted constant and what it was fitted to"),
            ("shown", "a sentence saying why the row is shown and not scored (another "
                      "reading, or another row of the same statement)"),
            ("outside_model", "a sentence saying what the model cannot express"),
            ("not_applicable", "a sentence saying why the number is not a simulation "
                               "outcome"),
            ("condition", "a sentence saying which condition of the row is ours, not the "
                          "paper's")):
        if key in claim:
            _sentence_or_fail(claim, key, at, expected)
    if claim.get("kind") not in KINDS:
        raise ConfigError(f"{at}.kind: {claim.get('kind')!r}; expected one of "
                          f"{', '.join(KINDS)} (where the paper's number comes from)")
    statement = claim.get("statement")
    if not (isinstance(statement, str) and re.fullmatch(r"[a-z0-9][a-z0-9.-]*", statement)):
        raise ConfigError(f"{at}.statement: {statement!r}; expected an id of lowercase "
                          "letters, digits, '-' and '.' naming the published statement")
    if not compared(claim):
        return  # the printed value is shown as printed
    tolerance = claim.get("tolerance")
    if tolerance is not None:
        if (isinstance(tolerance, bool) or not isinstance(tolerance, int | float)
                or not 0 <= tolerance < math.inf):
            raise ConfigError(f"{at}.tolerance: {tolerance!r}; expected a number >= 0 in the "
                              "store's units (fractions for percentages)")
        if "tolerance_why" not in claim:
            raise ConfigError(f"{at}.tolerance_why: missing; a stated tolerance replaces "
                              "the default of its kind only with a sentence saying why")
    if "tolerance_why" in claim:
        if tolerance is None:
            raise ConfigError(f"{at}.tolerance_why: no 'tolerance' to explain")
        _sentence_or_fail(claim, "tolerance_why", at, "a sentence saying why the tolerance "
                                                     "departs from its kind's default")
    direction = claim.get("direction")
    if direction is not None:
        if direction not in DIRECTIONS:
            raise ConfigError(f"{at}.direction: {direction!r}; expected one of {DIRECTIONS}")
        if "change" not in claim["query"]:
            raise ConfigError(f"{at}.direction: a direction is the sign of a relative "
                              "change; this claim's query is not a 'change'")
    if claim["paper"] is None:
        if "calibrated" in claim:
            raise ConfigError(f"{at}.paper: a calibrated claim shows the published value "
                              "it was fitted to; give it")
        if direction is None:
            raise ConfigError(f"{at}.paper: no published value and no 'direction': a "
                              "scored claim needs one (or mark it 'extension')")
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


def judge(claim: Mapping[str, Any], ours: float | None, values: Sequence[float] = (),
          ran: bool = True) -> Verdict:
    """The verdict on a checked claim (`check_claim`) given our value of its query (None
    when undefined), the query's per-seed values (its interval's) and whether the store
    has runs for the query at all."""
    label = next((LABELS[key] for key in LABELS if key in claim), None)
    uncompared = next((key for key in UNCOMPARED if key in claim), None)
    if uncompared is not None:
        return Verdict(LABELS[uncompared])
    printed = None if claim.get("paper") is None else read_printed(claim["paper"])
    low, high = (None, None) if printed is None else _in_query_terms(printed, claim["query"])
    direction = claim.get("direction")
    if direction is None and low is not None and high is not None and "change" in claim["query"]:
        direction = "higher" if low > 0 else "lower" if high < 0 else None
    if claim.get("tolerance") is not None:
        tolerance: float | None = float(claim["tolerance"])
    elif printed is not None:
        tolerance = default_tolerance(printed, claim["kind"])
    else:
        tolerance = FIGURE_POINTS if direction is not None else None
    facts = Verdict("", printed, low, high, tolerance, half_width(values), len(values),
                    direction)
    if label is not None:
        return replace(facts, name=label)
    return replace(facts, name=_decide(facts, ours) if ran else "not run")


def _decide(facts: Verdict, ours: float | None) -> str:
    """The rule (the module's docstring) on our value and the facts it is judged on."""
    if ours is None or math.isnan(ours) or facts.tolerance is None:
        return "not reproduced"
    tolerance, spread = facts.tolerance, facts.half_width or 0.0
    if facts.low is None or facts.high is None:  # a direction alone: which side of zero
        signed = ours if facts.direction == "higher" else -ours
        margin = tolerance if facts.half_width is None else spread
        return ("reproduced" if signed - margin > 0 else "not reproduced"
                if signed + margin < 0 else "inconclusive")
    low, high = facts.low - tolerance, facts.high + tolerance
    if ours + spread < low or ours - spread > high:
        nearest = facts.low if ours < facts.low else facts.high
        gap = abs(ours - nearest)
        return "near miss" if gap <= 2 * tolerance or gap <= NEAR * abs(nearest) \
            else "not reproduced"
    if (low <= ours - spread and ours + spread <= high) or (
            low <= ours <= high and spread <= tolerance):
        return "reproduced"
    return "inconclusive"
