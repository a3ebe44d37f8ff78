"""The KJV corpus: extraction from Debian's bible-kjv-text, cleaning, train/validation split.

Source: Debian package `bible-kjv-text` (4.38; /usr/lib/bible.data, a compressed format of the
"Bible Retrieval System"), read with the `bible` program from Debian package `bible-kjv`:
    bible -l0 "Gen1:1-Rev22:21"
which prints every chapter as a heading line ("Genesis 1"), a blank line, and one line per verse
("  1 In the beginning God created ...").  The KJV text is public domain (see
/usr/share/doc/bible-kjv-text/copyright).

Cleaning (the whole of it):
  * heading lines and blank lines are dropped, the leading verse number of each verse is removed,
    runs of whitespace become one space, lines are stripped;
  * each chapter becomes one document: its verses joined with "\n";
  * documents are joined with the `<|endoftext|>` token when tokenized.
The text is otherwise kept as printed (capitals such as "LORD", the apostrophes, punctuation).

Split: the books in VALID_BOOKS are held out for validation; all other books are training data.
"""
import os
import re
import subprocess

from common import WORK

VALID_BOOKS = ("Ruth", "Jonah", "Mark", "James", "Jude")

_HEADING = re.compile(r"^(?P<book>(?:[1-3] )?[A-Z][A-Za-z ]*?) (?P<chap>\d+)$")
_VERSE = re.compile(r"^\s*(\d+) (.*)$")


def dump_raw():
    os.makedirs(WORK, exist_ok=True)
    path = os.path.join(WORK, "kjv_raw.txt")
    raw = subprocess.run(["bible", "-l0", "Gen1:1-Rev22:21"], check=True, capture_output=True).stdout
    text = raw.decode("ascii")
    with open(path, "w") as f:
        f.write(text)
    return text


def chapters(raw_text):
    """[(book, chapter, [verse text, ...]), ...] in canonical order."""
    out = []
    for line in raw_text.split("\n"):
        if not line.strip():
            continue
        m = None if line[0].isspace() else _HEADING.match(line)
        v = _VERSE.match(line) if line[0].isspace() else None
        if v and out:
            out[-1][2].append(" ".join(v.group(2).split()))
        elif m:
            out.append((m.group("book"), int(m.group("chap")), []))
        else:
            raise ValueError(f"unexpected line: {line!r}")
    return out


def load_split():
    """-> (train_docs, valid_docs, stats) with each doc one chapter's verses joined by newlines."""
    chs = chapters(dump_raw())
    n_verses = sum(len(v) for _, _, v in chs)
    assert len(chs) == 1189 and n_verses == 31102, (len(chs), n_verses)
    books = []
    for b, _, _ in chs:
        if not books or books[-1] != b:
            books.append(b)
    for b in VALID_BOOKS:
        assert b in books, b
    train = ["\n".join(v) for b, _, v in chs if b not in VALID_BOOKS]
    valid = ["\n".join(v) for b, _, v in chs if b in VALID_BOOKS]
    stats = {"books": len(books), "chapters": len(chs), "verses": n_verses,
             "train_chapters": len(train), "valid_chapters": len(valid),
             "train_chars": sum(map(len, train)), "valid_chars": sum(map(len, valid))}
    return train, valid, stats


if __name__ == "__main__":
    tr, va, st = load_split()
    print(st)
    print(tr[0][:300])
