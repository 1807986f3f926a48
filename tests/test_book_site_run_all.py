"""_ext/book_site.py's Run All note says what the time covers, when and where it was measured.

A chapter page that prints a time of its own (chapter 10's training cell) beside the Run All
time must not read as one machine's figures (issue 46).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("book_site", ROOT / "_ext" / "book_site.py")
book_site = importlib.util.module_from_spec(spec)
spec.loader.exec_module(book_site)


def test_the_note_names_the_day_and_the_cpu_and_says_it_is_not_the_build():
    times = {"measured": "2026-11-26T20:00Z", "machine": {"cpu": "Some CPU @ 2.50GHz", "cores": 2}}
    note = book_site.measured_apart(times)
    assert note == "That is the whole notebook, timed on 26 November 2026 on Some CPU @ 2.50GHz, not as this " \
        "page was built"


def test_what_the_json_does_not_record_is_left_out():
    assert book_site.measured_apart({}) == ""
    only_day = book_site.measured_apart({"measured": "2026-01-05T08:00Z", "machine": {"cores": 2}})
    assert only_day == "That is the whole notebook, timed on 5 January 2026, not as this page was built"
    only_cpu = book_site.measured_apart({"machine": {"cpu": "X"}})
    assert only_cpu == "That is the whole notebook, timed on X, not as this page was built"


def test_the_book_records_both():
    # The committed measurement gives the note its day and CPU.
    times = json.loads((ROOT / "bench" / "run_all_times.json").read_text(encoding="utf-8"))
    note = book_site.measured_apart(times)
    cpu = " ".join(times["machine"]["cpu"].replace("(R)", "").split())
    assert f" timed on {int(times['measured'][8:10])} " in note and f" on {cpu}, " in note and "(R)" not in note
