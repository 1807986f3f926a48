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
    assert note.startswith("That is the whole notebook, first cell to last, timed on 26 November 2026")
    assert "(CPU: Some CPU @ 2.50GHz)" in note and "separately from the build of this page" in note


def test_what_the_json_does_not_record_is_left_out():
    assert book_site.measured_apart({}) == ""
    only_day = book_site.measured_apart({"measured": "2026-01-05T08:00Z", "machine": {"cores": 2}})
    assert "timed on 5 January 2026, separately" in only_day and "CPU" not in only_day
    only_cpu = book_site.measured_apart({"machine": {"cpu": "X"}})
    assert "timed (CPU: X), separately" in only_cpu


def test_the_book_records_both():
    # The committed measurement gives the note its day and CPU.
    times = json.loads((ROOT / "bench" / "run_all_times.json").read_text(encoding="utf-8"))
    note = book_site.measured_apart(times)
    assert " timed on " in note and "(CPU: " in note
