"""Synthetic data for date-normalizer: dates written many human ways -> ISO 8601 (YYYY-MM-DD).

Conventions (documented in models/README.md) are those of python-dateutil's default parser
(`dateutil.parser.parse(text)`, i.e. dayfirst=False, yearfirst=False); JavaScript's `Date` reads
numeric dates month-first too but rejects "14/09/1990" where dateutil falls back to day-first:
  * all-numeric dates whose year comes LAST (separators "/", "-", "."): MONTH-FIRST when the first
    number can be a month (<= 12): "09/14/1990" = 14 September 1990, "03/04/21" = 4 March 2021;
    DAY-FIRST only when the first number cannot be a month (> 12): "14/09/1990" = 14 September 1990.
    Both orders are generated: month-first for any date, day-first only for days 13-31 (a day-first
    text with a day <= 12 would mean another date under the rule). `numeric_reading` is the rule;
  * all-numeric dates whose 4-digit year comes FIRST are Y-M-D ("2021.03.04" = 4 March 2021;
    separators ".", "-", "/", " ");
  * a two-digit year YY is put in dateutil's window of 50 years either side of the current year,
    frozen at the year the model was trained (TWO_DIGIT_YEAR_NOW = 2026): 76-99 -> 1976-1999,
    00-75 -> 2000-2075 (dateutil's window moves with the clock, the model's cannot; JavaScript's
    `Date` uses 50-99 -> 19xx instead). Two-digit years are only generated for 1976-2075;
  * years 1900-2099; a weekday, when present, is the true weekday of the date.
Every target is a real calendar date (made by datetime.date, so leap years are right).

Every sample is a list of (text, tag) pieces, tag in {"day", "month", "year", "weekday", None},
so the character span of each field in the source is known (used by the alignment measure).
Dates with date.toordinal() % HOLDOUT_MOD == 0 never occur in training samples: the held-out
test sets are made of those dates only.

    /usr/bin/python3 models/train/date_data.py            # print 40 samples
    /usr/bin/python3 models/train/date_data.py --check    # validate targets, the rule and dateutil agreement
"""
import datetime
import random

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
WEEKDAY_ABBR = [["Mon"], ["Tue", "Tues"], ["Wed"], ["Thu", "Thur", "Thurs"], ["Fri"], ["Sat"], ["Sun"]]
MONTH_ABBR = [["Jan"], ["Feb"], ["Mar"], ["Apr"], ["May"], ["Jun"], ["Jul"], ["Aug"], ["Sep", "Sept"],
              ["Oct"], ["Nov"], ["Dec"]]
HOLDOUT_MOD = 37
MIN_DATE = datetime.date(1900, 1, 1).toordinal()
MAX_DATE = datetime.date(2099, 12, 31).toordinal()
MAX_SOURCE_CHARS = 63  # + "</s>" = 64 = max_position_embeddings
TWO_DIGIT_YEAR_NOW = 2026  # dateutil's parserinfo._year at training time (see convert_two_digit_year)
TWO_DIGIT_MIN = datetime.date(TWO_DIGIT_YEAR_NOW - 50, 1, 1).toordinal()
TWO_DIGIT_MAX = datetime.date(TWO_DIGIT_YEAR_NOW + 49, 12, 31).toordinal()


def convert_two_digit_year(yy, now=TWO_DIGIT_YEAR_NOW):
    """dateutil.parser.parserinfo.convertyear's rule with its clock frozen at `now`: the year in
    [now - 50, now + 49] whose last two digits are yy."""
    year = now // 100 * 100 + yy
    if year >= now + 50:
        year -= 100
    elif year < now - 50:
        year += 100
    return year


def numeric_reading(first, second):
    """(month, day) of a numeric date written first/second/year (year last): month-first unless the
    first number cannot be a month. None when neither order is a month."""
    if 1 <= first <= 12:
        return first, second
    if 1 <= second <= 12:
        return second, first
    return None


def valid_iso(text):
    """True when text is YYYY-MM-DD naming a day that exists (leap years included)."""
    if not isinstance(text, str) or len(text) != 10 or text[4] != "-" or text[7] != "-":
        return False
    y, m, d = text[:4], text[5:7], text[8:]
    if not (y.isdigit() and m.isdigit() and d.isdigit() and y.isascii() and m.isascii() and d.isascii()):
        return False
    try:
        datetime.date(int(y), int(m), int(d))
    except ValueError:
        return False
    return True


def ordinal(n):
    if 10 <= n % 100 <= 20:
        return f"{n}th"
    return f"{n}" + {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def is_holdout(d):
    return d.toordinal() % HOLDOUT_MOD == 0


def random_date(rng, holdout, two_digit_year=False, min_day=1):
    lo, hi = MIN_DATE, MAX_DATE
    if two_digit_year:
        lo, hi = TWO_DIGIT_MIN, TWO_DIGIT_MAX
    while True:
        d = datetime.date.fromordinal(rng.randint(lo, hi))
        if is_holdout(d) == holdout and d.day >= min_day:
            return d


def _day(rng, d, style):
    if style == "num":
        return str(d.day) if rng.random() < 0.5 else f"{d.day:02d}"
    return ordinal(d.day)  # "ord"


def _month_name(rng, d):
    r = rng.random()
    if r < 0.5:
        return MONTHS[d.month - 1]
    ab = rng.choice(MONTH_ABBR[d.month - 1])
    return ab + "." if r > 0.85 else ab


def _weekday(rng, d):
    r = rng.random()
    if r < 0.55:
        return WEEKDAYS[d.weekday()]
    ab = rng.choice(WEEKDAY_ABBR[d.weekday()])
    return ab + "." if r > 0.85 else ab


def _year(rng, d, two, apostrophe=True):
    if not two:
        return [(str(d.year), "year")]
    if not apostrophe:
        return [(f"{d.year % 100:02d}", "year")]
    return [("'", None), (f"{d.year % 100:02d}", "year")] if rng.random() < 0.5 else [(f"{d.year % 100:02d}", "year")]


def _sep(rng, *choices):
    return rng.choice(choices)


def template(rng, d, kind, two):
    """Pieces for the date part (no weekday). kind picks the layout."""
    P = []
    day = lambda st: (_day(rng, d, st), "day")  # noqa: E731
    mon = lambda: (_month_name(rng, d), "month")  # noqa: E731
    yr = lambda: _year(rng, d, two)  # noqa: E731
    if kind == "d_month_y":  # 3 March 2021 / 3rd Mar, 2021 / 03-Mar-2021
        s = _sep(rng, " ", " ", " ", "-", "/")
        if s == " ":
            P += [day(rng.choice(["num", "ord"])), (" ", None), mon(), (rng.choice([" ", ", ", " "]), None)] + yr()
        else:
            P += [day("num"), (s, None), mon(), (s, None)] + yr()
    elif kind == "ord_of_month_y":  # the 3rd of March, 2021 / 3rd of March 2021
        if rng.random() < 0.5:
            P.append(("the ", None))
        P += [day("ord"), (" of ", None), mon(), (rng.choice([" ", ", "]), None)] + yr()
    elif kind == "month_d_y":  # March 3, 2021 / Mar 3rd '21 / March 3 2021 / March the 3rd, 2021
        P += [mon(), (" ", None)]
        if rng.random() < 0.15:
            P += [("the ", None), day("ord")]
        else:
            P += [day(rng.choice(["num", "ord"]))]
        P += [(rng.choice([", ", " ", ", "]), None)] + yr()
    elif kind in ("mdy_num", "dmy_num"):  # 09/14/1990, 3.4.21 (month first) / 14-09-1990 (day > 12 first)
        s = _sep(rng, "/", "/", ".", "-")
        pad = rng.random() < 0.6
        m = (f"{d.month:02d}" if pad else str(d.month), "month")
        dd = (f"{d.day:02d}" if pad else str(d.day), "day")
        first, second = (m, dd) if kind == "mdy_num" else (dd, m)
        if numeric_reading(int(first[0]), int(second[0])) != (d.month, d.day):
            raise AssertionError(f"{kind}: {first[0]}/{second[0]} does not read as {d}")
        P += [first, (s, None), second, (s, None)] + _year(rng, d, two, False)
    elif kind == "ymd_num":  # 2021.03.03 / 2021-03-03 / 2021/3/3
        s = _sep(rng, ".", "-", "/", " ")
        pad = rng.random() < 0.8
        P += [(str(d.year), "year"), (s, None), (f"{d.month:02d}" if pad else str(d.month), "month"), (s, None),
              (f"{d.day:02d}" if pad else str(d.day), "day")]
    elif kind == "y_month_d":  # 2021 March 3 / 2021, March 3rd
        P += [(str(d.year), "year"), (rng.choice([" ", ", "]), None), mon(), (" ", None),
              day(rng.choice(["num", "ord"]))]
    else:
        raise ValueError(kind)
    return P


KINDS = ["d_month_y", "ord_of_month_y", "month_d_y", "mdy_num", "dmy_num", "ymd_num", "y_month_d"]
KIND_WEIGHTS = [3, 2, 3, 2, 1.5, 1.5, 0.7]
TWO_DIGIT_OK = {"d_month_y", "ord_of_month_y", "month_d_y", "mdy_num", "dmy_num"}
NUMERIC_KINDS = ["mdy_num", "dmy_num"]  # year last: the month-first / day-first rule
MIN_DAY = {"dmy_num": 13}  # day-first is only a reading when the day cannot be a month


def _case(rng, text):
    r = rng.random()
    if r < 0.55:
        return text
    if r < 0.75:
        return text.lower()
    if r < 0.87:
        return text.upper()
    if r < 0.94:
        return text.title()
    return "".join(c.upper() if rng.random() < 0.5 else c.lower() for c in text)


def sample(rng, holdout=False, kinds=None):
    """-> dict(source, target, spans={tag: [start, end)}, kind, weekday, two_digit_year, ambiguous).
    kinds: restrict the layouts (equal weights), e.g. NUMERIC_KINDS."""
    while True:
        kind = rng.choice(kinds) if kinds else rng.choices(KINDS, KIND_WEIGHTS)[0]
        two = kind in TWO_DIGIT_OK and rng.random() < 0.3
        d = random_date(rng, holdout, two, MIN_DAY.get(kind, 1))
        pieces = template(rng, d, kind, two)
        wd = rng.random() < 0.4
        if wd:
            w = _weekday(rng, d)
            if rng.random() < 0.85:
                pieces = [(w, "weekday"), (rng.choice([", ", " ", ", "]), None)] + pieces
            else:
                pieces = pieces + [(rng.choice([", ", " ", " ("]), None), (w, "weekday")]
                if pieces[-2][0] == " (":
                    pieces.append((")", None))
        if rng.random() < 0.08:
            pieces = [(rng.choice(["on ", "On ", "date: ", "Date: "]), None)] + pieces
        if rng.random() < 0.03:  # stray double spaces / trailing period
            pieces = [(t.replace(" ", "  ", 1), g) if g is None else (t, g) for t, g in pieces]
        if rng.random() < 0.04:
            pieces.append((".", None))
        src, spans, pos = "", {}, 0
        cased = _case(rng, "".join(t for t, _ in pieces))
        for t, g in pieces:
            if g:
                spans[g] = [pos, pos + len(t)]
            pos += len(t)
        src = cased
        if len(src) <= MAX_SOURCE_CHARS:
            target = d.isoformat()
            assert valid_iso(target) and datetime.date.fromisoformat(target) == d
            return {"source": src, "target": target, "spans": spans, "kind": kind, "weekday": wd,
                    "two_digit_year": two, "ambiguous": kind in NUMERIC_KINDS and d.day <= 12}


def make_set(seed, n, holdout, kinds=None):
    rng = random.Random(seed)
    return [sample(rng, holdout, kinds) for _ in range(n)]


# Hand-picked numeric cases (sources, and targets by the rule); the dates are not all held out.
CANONICAL = ["09/14/1990", "14/09/1990", "03/04/2001", "04/03/2001", "9/14/90", "14.9.1990", "14-09-1990",
             "12/31/1999", "31/12/1999", "12/13/2012", "13/12/2012", "12/12/2012", "1/13/2001", "13/1/2001",
             "02/29/2000", "29/02/1996", "2/29/2024", "29.2.2096", "01/02/03", "10/11/12", "07/04/1976",
             "12/25/75", "25/12/76", "06/30/2099", "31/01/1900"]


def canonical_pairs():
    out = []
    for text in CANONICAL:
        a, b, y = text.replace("-", "/").replace(".", "/").split("/")
        month, day = numeric_reading(int(a), int(b))
        year = int(y) if len(y) == 4 else convert_two_digit_year(int(y))
        out.append((text, datetime.date(year, month, day).isoformat()))
    return out


def dateutil_reading(text):
    """dateutil's default reading (dayfirst=False, yearfirst=False) with its two-digit-year clock frozen
    at TWO_DIGIT_YEAR_NOW, as an ISO string; None when dateutil cannot read the text."""
    from dateutil import parser

    class Info(parser.parserinfo):
        def __init__(self):
            super().__init__(dayfirst=False, yearfirst=False)
            self._year, self._century = TWO_DIGIT_YEAR_NOW, TWO_DIGIT_YEAR_NOW // 100 * 100

    if not hasattr(dateutil_reading, "parser"):
        dateutil_reading.parser = parser.parser(Info())
    try:
        return dateutil_reading.parser.parse(text, default=datetime.datetime(2000, 1, 1)).date().isoformat()
    except (ValueError, OverflowError):
        return None


def check(n):
    """Every target a valid date; numeric samples follow numeric_reading; dateutil (an independent
    parser) agrees with every target it can read. Raises on any failure."""
    import collections
    rng = random.Random(99)
    read, unread, by_kind = 0, collections.Counter(), collections.Counter()
    for i in range(n):
        s = sample(rng, holdout=i % 2 == 1, kinds=NUMERIC_KINDS if i % 4 == 0 else None)
        assert valid_iso(s["target"]), s
        by_kind[s["kind"]] += 1
        if s["kind"] in NUMERIC_KINDS:  # the two numbers as written, in source order, read by the rule
            nums = sorted((s["spans"][f][0], int(s["source"][slice(*s["spans"][f])])) for f in ("month", "day"))
            assert numeric_reading(nums[0][1], nums[1][1]) == (int(s["target"][5:7]), int(s["target"][8:])), s
        du = dateutil_reading(s["source"])
        if du is None:
            unread[s["kind"]] += 1
            continue
        read += 1
        assert du == s["target"], f"dateutil reads {s['source']!r} as {du}, the target is {s['target']}"
    for text, iso in canonical_pairs():
        assert valid_iso(iso) and dateutil_reading(text) == iso, (text, iso, dateutil_reading(text))
    print(f"{n} samples: every target a valid date; dateutil read {read} and agreed on all of them; "
          f"unread by layout {dict(unread)}; layouts {dict(by_kind)}; {len(CANONICAL)} canonical cases agree")


if __name__ == "__main__":
    import sys
    if "--check" in sys.argv:
        check(int(sys.argv[sys.argv.index("--check") + 1]) if len(sys.argv) > sys.argv.index("--check") + 1 else 100000)
    else:
        for s in make_set(0, 40, False):
            print(f"{s['source']!r:48} -> {s['target']}  {s['spans']}")
