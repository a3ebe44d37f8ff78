"""Synthetic data for date-normalizer: dates written many human ways -> ISO 8601 (YYYY-MM-DD).

Conventions (documented in models/README.md):
  * all-numeric dates whose year comes LAST are DAY-FIRST: "03/04/21" = 3 April 2021
    (separators "/", "-", "."); all-numeric dates whose 4-digit year comes FIRST are Y-M-D:
    "2021.03.04" = 4 March 2021;
  * a two-digit year YY means 19YY for YY >= 50 and 20YY for YY < 50 (so "'21" = 2021,
    "3/3/87" = 1987); two-digit years are only generated for 1950-2049;
  * years 1900-2099; a weekday, when present, is the true weekday of the date.

Every sample is a list of (text, tag) pieces, tag in {"day", "month", "year", "weekday", None},
so the character span of each field in the source is known (used by the alignment measure).
Dates with date.toordinal() % HOLDOUT_MOD == 0 never occur in training samples: the held-out
test set is made of those dates only.
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


def ordinal(n):
    if 10 <= n % 100 <= 20:
        return f"{n}th"
    return f"{n}" + {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def is_holdout(d):
    return d.toordinal() % HOLDOUT_MOD == 0


def random_date(rng, holdout, two_digit_year=False):
    lo, hi = MIN_DATE, MAX_DATE
    if two_digit_year:
        lo, hi = datetime.date(1950, 1, 1).toordinal(), datetime.date(2049, 12, 31).toordinal()
    while True:
        d = datetime.date.fromordinal(rng.randint(lo, hi))
        if is_holdout(d) == holdout:
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
    elif kind == "dmy_num":  # 03/03/21, 3.3.2021, 03-03-2021 (day first)
        s = _sep(rng, "/", "/", ".", "-")
        pad = rng.random() < 0.6
        P += [(f"{d.day:02d}" if pad else str(d.day), "day"), (s, None),
              (f"{d.month:02d}" if pad else str(d.month), "month"), (s, None)] + _year(rng, d, two, False)
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


KINDS = ["d_month_y", "ord_of_month_y", "month_d_y", "dmy_num", "ymd_num", "y_month_d"]
KIND_WEIGHTS = [3, 2, 3, 2, 1.5, 0.7]
TWO_DIGIT_OK = {"d_month_y", "ord_of_month_y", "month_d_y", "dmy_num"}


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


def sample(rng, holdout=False):
    """-> dict(source, target, spans={tag: [start, end)}, kind, weekday, two_digit_year)."""
    while True:
        kind = rng.choices(KINDS, KIND_WEIGHTS)[0]
        two = kind in TWO_DIGIT_OK and rng.random() < 0.3
        d = random_date(rng, holdout, two)
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
            return {"source": src, "target": d.isoformat(), "spans": spans, "kind": kind, "weekday": wd,
                    "two_digit_year": two}


def make_set(seed, n, holdout):
    rng = random.Random(seed)
    return [sample(rng, holdout) for _ in range(n)]


if __name__ == "__main__":
    for s in make_set(0, 40, False):
        print(f"{s['source']!r:48} -> {s['target']}  {s['spans']}")
