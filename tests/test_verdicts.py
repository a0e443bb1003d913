"""Verdicts: printed values read as the paper printed them, and the one rule on made-up
claims of every kind."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

import simcore.report.verdicts as verdicts
from simcore.base.confidence import t_quantile
from simcore.base.errors import ConfigError
from simcore.report.verdicts import KINDS, check_claim, half_width, judge, read_printed

LEVEL = {"metric": "utilization"}
CHANGE = {"change": "utilization", "of": {"policy": "b"}, "over": {"policy": "a"}}


@pytest.mark.parametrize(("text", "low", "high", "tolerance"), [
    ("63%", 0.63, 0.63, 0.005),
    ("51.3%", 0.513, 0.513, 0.0005),
    ("about 80%", 0.80, 0.80, 0.05),
    ("closer to 90%", 0.90, 0.90, 0.05),
    ("greater than 84%", 0.84, math.inf, 0.005),
    ("> 84%", 0.84, math.inf, 0.005),
    ("no more than 20%", -math.inf, 0.20, 0.005),
    ("< -48%", -math.inf, -0.48, 0.005),
    ("+15%", 0.15, 0.15, 0.005),
    ("-54%", -0.54, -0.54, 0.005),
    ("0.52", 0.52, 0.52, 0.005),
    ("76.50 s", 76.5, 76.5, 0.005),
    ("18-27%", 0.18, 0.27, 0.005),
    ("-27% to -18%", -0.27, -0.18, 0.005),
    ("1,800 s", 1800, 1800, 0.5),
    ("about 90 min", 5400, 5400, 270),      # 5% of a value that is not a percentage
    ("about 1", 1, 1, 0.5),                 # ... but never narrower than the digit
    ("2x", 2, 2, 0.5),
    ("46% / 36%", 46 / 36, 46 / 36, 46 / 36 * (0.5 / 46 + 0.5 / 36)),
    ("4:25:23", 15923, 15923, 0.5),         # h:mm:ss, to the second
    ("5:46:31 / 4:25:23", 20791 / 15923, 20791 / 15923,
     20791 / 15923 * (0.5 / 20791 + 0.5 / 15923)),
    (120, 120, 120, 0.5),
    (0.63, 0.63, 0.63, 0.005),
])
def test_printed_values_read_as_printed(text, low, high, tolerance):
    printed = read_printed(text)
    assert (printed.low, printed.high) == (pytest.approx(low), pytest.approx(high))
    assert printed.tolerance == pytest.approx(tolerance)


@pytest.mark.parametrize("text", ["", "x", "about", ">", "27-18%", "5% / 3 s", "0% / 5%",
                                  "1,80 s", "4:61:00", "1 furlong", "about > 5", "63%%",
                                  "5 % to 9 s"])
def test_what_is_not_a_printed_value_is_refused(text):
    with pytest.raises(ValueError, match=re.escape(repr(text))):
        read_printed(text)


@pytest.mark.parametrize("value", [None, True, float("nan"), float("inf"), [63]])
def test_only_strings_and_finite_numbers_are_printed_values(value):
    with pytest.raises(ValueError, match="not a printed value"):
        read_printed(value)


UNITS = {"%": 0.01, " s": 1.0, " min": 60.0, " h": 3600.0, "x": 1.0, "": 1.0}


@st.composite
def numerals(draw):
    """A printed number: digits (thousands separated), decimals, sign; and its value."""
    decimals = draw(st.integers(0, 3))
    units = draw(st.integers(0, 10**7))
    sign = draw(st.sampled_from(["", "+", "-"]))
    digits = f"{units:,}" if decimals == 0 else f"{units // 10**decimals:,}" + \
        "." + f"{units % 10**decimals:0{decimals}d}"
    value = units / 10**decimals * (-1 if sign == "-" else 1)
    return sign + digits, value, 0.5 * 10.0**-decimals


@given(numerals(), st.sampled_from(sorted(UNITS)),
       st.sampled_from(["", "about ", "greater than ", "at most ", "< "]))
def test_a_printed_value_round_trips(numeral, unit, prefix):
    text, value, half = numeral
    scale = UNITS[unit]
    printed = read_printed(prefix + text + unit)
    tolerance = half * scale
    if prefix == "about ":
        tolerance = max(tolerance, 0.05 if unit == "%" else 0.05 * abs(value) * scale)
    assert printed.tolerance == pytest.approx(tolerance)
    low = -math.inf if prefix in ("at most ", "< ") else value * scale
    high = math.inf if prefix == "greater than " else value * scale
    assert (printed.low, printed.high) == (pytest.approx(low), pytest.approx(high))
    assert printed.unit == unit.strip() and printed.scale == scale


@given(numerals(), numerals(), st.sampled_from(["%", " s", ""]), st.sampled_from(["-", " to "]))
def test_a_printed_range_round_trips(one, two, unit, dash):
    (a, va, ha), (b, vb, hb) = sorted([one, two], key=lambda n: n[1])
    if (dash == "-" and b.startswith("-")) or va == vb:
        return  # "5--3" is no way to print a range; equal ends are a point
    printed = read_printed(f"{a}{unit}{dash}{b}{unit}")
    scale = UNITS[unit]
    assert (printed.low, printed.high) == (pytest.approx(va * scale), pytest.approx(vb * scale))
    assert printed.tolerance == pytest.approx(max(ha, hb) * scale)


def claim(paper, query=LEVEL, **more):
    return {"paper": paper, "query": query, "kind": "text", "statement": "s", **more}


def verdict(paper, ours, query=LEVEL, values=(), **more):
    check_claim(claim(paper, query, **more), "c")
    return judge(claim(paper, query, **more), ours, values).name


def seeds(mean, half):
    """Three per-seed values with this mean and 95% half-width."""
    sd = half * math.sqrt(3) / t_quantile(0.975, 2)
    return [mean - sd, mean, mean + sd]


def test_a_point_holds_within_half_its_last_digit():
    assert verdict("63%", 0.634) == "reproduced"
    assert verdict("63%", 0.626) == "reproduced"
    assert verdict("63%", 0.636) == "near miss"  # within 10% of 63%
    assert verdict("63%", 0.75) == "not reproduced"
    assert verdict("51.3%", 0.5134) == "reproduced"
    assert verdict("51.3%", 0.5138) == "near miss"
    assert verdict("120 s", 120.4) == "reproduced"
    assert verdict("120 s", 121) == "near miss"
    assert verdict("120 s", 140) == "not reproduced"


def test_the_tolerance_follows_the_kind_of_number():
    assert verdict("63%", 0.649, kind="figure") == "reproduced"      # 2 points off a plot
    assert verdict("63%", 0.651, kind="figure") == "near miss"
    assert verdict("120 s", 125.9, kind="figure") == "reproduced"    # 5% of the value
    assert verdict("120 s", 126.1, kind="figure") == "near miss"
    assert verdict("63%", 0.636, kind="table") == "near miss"        # half the last digit
    assert verdict("120 s", 125.9, kind="measured") == "reproduced"  # 5% without a spread
    assert verdict("63%", 0.679, kind="measured") == "reproduced"    # 5 points
    assert verdict("about 80%", 0.849, kind="table") == "reproduced"  # the wording's, wider
    assert verdict("about 80%", 0.86, kind="figure") == "near miss"
    assert judge(claim("2x", kind="figure"), 2.0).tolerance == 0.5   # the digit, wider


def test_about_means_five_points():
    assert verdict("about 80%", 0.84) == "reproduced"
    assert verdict("about 80%", 0.86) == "near miss"
    assert verdict("about 90 min", 5600) == "reproduced"     # 5% of 90 min: 270 s
    assert verdict("about 90 min", 5700) == "near miss"


def test_a_stated_tolerance_replaces_the_default_and_says_why():
    why = {"tolerance_why": "the wording says no difference"}
    assert verdict("0%", 0.049, tolerance=0.05, **why) == "reproduced"
    assert verdict("0%", -0.049, tolerance=0.05, **why) == "reproduced"
    assert verdict("0%", 0.051, tolerance=0.05, **why) == "near miss"   # twice the tolerance
    assert verdict("0%", 0.2, CHANGE, tolerance=0.05, **why) == "not reproduced"
    assert verdict("about 80%", 0.81, tolerance=0.005, **why) == "near miss"
    assert verdict(None, 0.04, CHANGE, direction="higher", tolerance=0.05, **why
                   ) == "inconclusive"


def test_a_bound_holds_within_its_tolerance():
    assert verdict("greater than 84%", 0.95) == "reproduced"
    assert verdict("greater than 84%", 0.836) == "reproduced"   # 84% printed: ± 0.5
    assert verdict("greater than 84%", 0.834) == "near miss"
    assert verdict("no more than 20%", 0.10) == "reproduced"
    assert verdict("no more than 20%", 0.36) == "not reproduced"
    assert verdict("< -48%", -0.62, CHANGE) == "reproduced"
    assert verdict("< -48%", -0.30, CHANGE) == "not reproduced"  # lower, not by as much
    assert verdict("< -48%", -0.45, CHANGE) == "near miss"
    assert verdict("> 0%", -0.04, CHANGE, tolerance=0.05, tolerance_why="w") == "reproduced"


def test_near_and_large_misses_are_told_apart():
    assert verdict("+15%", 0.153, CHANGE) == "reproduced"
    assert verdict("+15%", 0.159, CHANGE) == "near miss"        # 0.9 pt: within 10% of 15%
    assert verdict("+15%", 0.40, CHANGE) == "not reproduced"
    assert verdict("-18%", -0.004, CHANGE) == "not reproduced"  # the sign, not the size
    assert verdict("-27% to -18%", -0.20, CHANGE) == "reproduced"
    assert verdict("-27% to -18%", -0.274, CHANGE) == "reproduced"
    assert verdict("-27% to -18%", -0.29, CHANGE) == "near miss"
    assert verdict("-27% to -18%", -0.10, CHANGE) == "not reproduced"
    assert verdict("18-27%", 0.30) == "not reproduced"


def test_a_factor_is_compared_with_a_change_as_r_minus_1():
    assert verdict("2x", 0.6, CHANGE) == "reproduced"                # 1.6 in 2 ± 0.5
    assert verdict("2x", 0.4, CHANGE) == "near miss"
    assert verdict("2x", 1.8) == "reproduced"                        # a level: as printed
    assert verdict("46% / 36%", 0.2855, CHANGE) == "reproduced"
    assert verdict("46% / 36%", 0.20, CHANGE) == "not reproduced"
    facts = judge(claim("2x", CHANGE), 0.4)
    assert (facts.low, facts.high, facts.direction) == (1.0, 1.0, "higher")


def test_a_direction_counts_only_where_our_interval_excludes_zero():
    lower = {"direction": "lower"}
    assert verdict(None, -0.01, CHANGE, seeds(-0.01, 0.005), **lower) == "reproduced"
    assert verdict(None, -0.01, CHANGE, seeds(-0.01, 0.02), **lower) == "inconclusive"
    assert verdict(None, 0.01, CHANGE, seeds(0.01, 0.02), **lower) == "inconclusive"
    assert verdict(None, 0.05, CHANGE, seeds(0.05, 0.02), **lower) == "not reproduced"
    assert verdict(None, 2.0, CHANGE, seeds(2.0, 1.0), direction="higher") == "reproduced"


def test_one_run_has_no_interval_and_a_direction_near_zero_is_inconclusive():
    lower = {"direction": "lower"}
    assert verdict(None, -0.03, CHANGE, [-0.03], **lower) == "reproduced"
    assert verdict(None, -0.01, CHANGE, [-0.01], **lower) == "inconclusive"  # within 2 pt
    assert verdict(None, 0.01, CHANGE, [0.01], **lower) == "inconclusive"
    assert verdict(None, 0.03, CHANGE, [0.03], **lower) == "not reproduced"
    one = judge(claim("63%"), 0.64, [0.64])
    assert (one.n, one.half_width, one.name) == (1, None, "near miss")
    two = judge(claim("63%"), 0.63, [0.5, 0.76])
    assert (two.n, two.half_width, two.name) == (2, None, "reproduced"), \
        "two seeds are too few for an interval, as in the tables"


def test_a_claim_is_never_reproduced_through_an_interval_wider_than_its_tolerance():
    assert half_width([0.64]) is None and half_width([0.6, 0.7]) is None
    assert half_width([0.62, 0.64, 0.66]) == pytest.approx(
        t_quantile(0.975, 2) * 0.02 / math.sqrt(3))
    assert verdict("63%", 0.632, LEVEL, seeds(0.632, 0.004)) == "reproduced"
    assert verdict("63%", 0.632, LEVEL, seeds(0.632, 0.006)) == "inconclusive"
    assert verdict("63%", 0.64, LEVEL, seeds(0.64, 0.006)) == "inconclusive", \
        "ours outside, but the interval reaches the tolerance"
    assert verdict("63%", 0.64, LEVEL, seeds(0.64, 0.003)) == "near miss"
    assert verdict("78%", 0.9, LEVEL, seeds(0.9, 0.27)) == "inconclusive"
    assert verdict("< -48%", -0.52, CHANGE, seeds(-0.52, 0.01)) == "reproduced", \
        "the whole interval beyond the bound: decided however wide"
    assert verdict("< -48%", -0.48, CHANGE, seeds(-0.48, 0.01)) == "inconclusive"
    assert verdict("< 0.5", 0.48, LEVEL, seeds(0.48, 0.001), tolerance=0,
                   tolerance_why="a setting") == "reproduced"
    assert verdict("78%", 0.9, LEVEL, seeds(0.9, 0.05)) == "not reproduced"
    assert judge(claim("63%"), 0.64, seeds(0.64, 0.004)).half_width == pytest.approx(0.004)


@given(st.floats(-1, 1), st.floats(0, 0.5), st.sampled_from(KINDS),
       st.sampled_from(["63%", "+15%", "about 80%", "-27% to -18%", "> 84%", "2x"]))
def test_reproduced_only_inside_and_never_through_a_wide_interval(ours, half, kind,
                                                                         paper):
    facts = judge(claim(paper, CHANGE, kind=kind), ours, seeds(ours, half))
    if facts.name == "reproduced":
        admissible = (facts.low - facts.tolerance, facts.high + facts.tolerance)
        assert admissible[0] <= ours <= admissible[1]
        assert facts.half_width <= facts.tolerance + 1e-12 or (
            admissible[0] <= ours - facts.half_width and ours + facts.half_width
            <= admissible[1]), "never through an interval that is wide and reaches outside"
    assert facts.name in ("reproduced", "near miss", "not reproduced", "inconclusive")


def test_labels_not_run_and_undefined():
    fitted = claim("124 s", calibrated="the switch cost, fitted to this row")
    assert judge(fitted, 124.0).name == judge(fitted, 500.0).name == "calibrated"
    reading = claim("197 s", shown="the reading not scored: F processes first in every slot")
    assert judge(reading, 197.0).name == judge(reading, 500.0).name == "shown"
    ours = {"paper": None, "query": LEVEL, "extension": "our own"}
    assert judge(ours, 0.3).name == "extension"
    beyond = claim("54%", outside_model="SAGE's code is not a workload the model runs")
    assert judge(beyond, None, ran=False).name == "outside the model"
    assert "outside the model" in verdicts.SCORED and "not applicable" not in verdicts.SCORED
    cost = claim("O(N^2)", not_applicable="an algorithm's cost, not a simulation outcome")
    check_claim(cost, "c")  # shown as printed: never read as a value
    assert judge(cost, None, ran=False).name == "not applicable"
    assert judge(claim("63%"), None, ran=False).name == "not run"
    assert judge(claim("63%"), None).name == "not reproduced"
    assert judge(claim("63%"), math.nan).name == "not reproduced"
    assert judge(fitted, None, ran=False).name == "calibrated"


def test_the_difference_is_to_the_nearest_printed_value():
    assert judge(claim("-27% to -18%", CHANGE), -0.2).difference(-0.2) == 0.0
    assert judge(claim("-27% to -18%", CHANGE), -0.3).difference(-0.3) == pytest.approx(-0.03)
    assert judge(claim("greater than 84%"), 0.83).difference(0.83) == pytest.approx(-0.01)
    assert judge(claim(None, CHANGE, direction="lower"), 0.1).difference(0.1) is None


@pytest.mark.parametrize(("entry", "key", "message"), [
    (claim("sixty"), "paper", "cannot read 'sixty'"),
    (claim(float("nan")), "paper", "not a printed value"),
    (claim(None, CHANGE), "paper", "no published value and no 'direction'"),
    (claim("63%", calibrated=""), "calibrated", "a sentence naming the fitted constant"),
    (claim(None, calibrated="fitted"), "paper", "calibrated claim shows the published value"),
    (claim("63%", shown=" "), "shown", "a sentence saying why the row is shown"),
    (claim(None, shown="another reading"), "paper", "no published value and no 'direction'"),
    (claim("63%", calibrated="c", shown="s"), None, "both 'calibrated' and 'shown'"),
    (claim("63%", extension=True), "paper", "an extension has no published value"),
    (claim(None, extension=True, direction="lower"), "direction", "an extension has no"),
    (claim(None, extension=""), "extension", "expected true or a sentence"),
    (claim("63%", calibrated="c", extension=True), None, "both 'calibrated' and 'extension'"),
    (claim("63%", outside_model="x", shown="y"), None, "both 'outside_model' and 'shown'"),
    (claim("63%", outside_model=""), "outside_model", "what the model cannot express"),
    (claim("63%", not_applicable=3), "not_applicable", "not a simulation outcome"),
    (claim("63%", condition=""), "condition", "which condition of the row is ours"),
    (claim("63%", kind=None), "kind", "expected one of figure, table, measured, text"),
    (claim("63%", kind="plot"), "kind", "expected one of figure"),
    (claim("63%", statement=None), "statement", "naming the published statement"),
    (claim("63%", statement="Krevat 13%"), "statement", "an id of lowercase letters"),
    (claim("63%", tolerance=-0.1, tolerance_why="w"), "tolerance", "expected a number >= 0"),
    (claim("63%", tolerance="0.5", tolerance_why="w"), "tolerance", "expected a number >= 0"),
    (claim("63%", tolerance=0.05), "tolerance_why", "only with a sentence saying why"),
    (claim("63%", tolerance_why="w"), "tolerance_why", "no 'tolerance' to explain"),
    (claim(None, CHANGE, direction="up"), "direction", "expected one of"),
    (claim("63%", direction="higher"), "direction", "not a 'change'"),
    (claim("+15%", CHANGE, direction="lower"), "direction", "contradicts the paper's '+15%'"),
    (claim("0%", CHANGE, direction="lower"), "direction", "contradicts"),
])
def test_a_claim_without_what_its_verdict_needs_is_refused_naming_the_key(entry, key, message):
    at = "published.yaml: seeds.s.claims[3]"
    where = f"{at}.{key}: " if key else f"{at}: "
    with pytest.raises(ConfigError, match=f"^{re.escape(where)}.*{re.escape(message)}"):
        check_claim(entry, at)


def test_the_module_states_the_rule_the_report_writes():
    """Each verdict of the report's rule is a bullet of the module's docstring."""
    doc = " ".join((verdicts.__doc__ or "").split())
    for name, _ in verdicts.RULE:
        assert f"- *{name}*:" in doc
    assert [name for name, _ in verdicts.RULE] == list(verdicts.VERDICTS)
