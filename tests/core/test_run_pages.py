"""The pages written by runs (scripts/run_pages.py): the benchmarks page by scripts/bench.py,
the main job's tables by scripts/main.py. A run replaces the blocks of the sections it ran,
keeps the others, stamps each with its command, date and machine, and writes the page whole.
The pages in docs/ hold nothing but their writer's intro and blocks."""

import os
import pathlib
import shutil
import subprocess
import sys

from scripts import run_pages as page

ROOT = pathlib.Path(__file__).resolve().parents[2]
ORDER = ["joints", "expcoords", "fitting", "dynamics"]


def test_a_run_replaces_its_sections_and_keeps_the_others(tmp_path):
    path = tmp_path / "benchmarks.md"
    page.update_page(str(path), {"fitting": page.block("fitting", "stamp A", "| a |\n|--:|\n| 1 |"),
                                 "joints": page.block("joints", "stamp B", "| b |\n|--:|\n| 2 |")},
                     ORDER)
    page.update_page(str(path), {"fitting": page.block("fitting", "stamp C", "| a |\n|--:|\n| 3 |")},
                     ORDER)
    text = path.read_text()
    blocks = page.read_blocks(text)
    assert list(blocks) == ["joints", "fitting"]            # the sections' order, not the runs'
    assert "stamp B" in blocks["joints"] and "| 2 |" in blocks["joints"]
    assert "stamp C" in blocks["fitting"] and "| 3 |" in blocks["fitting"]
    assert "stamp A" not in text and "| 1 |" not in text
    assert text.startswith(page.INTRO)
    assert not [p for p in os.listdir(tmp_path) if p != "benchmarks.md"]   # no temporaries left


def test_the_stamp_names_command_date_and_machine():
    line = page.stamp("python scripts/bench.py --only joints", "CPU: X (2 logical cores)",
                      when="2026-01-02 03:04 UTC")
    assert line == ("Command: `python scripts/bench.py --only joints`; run 2026-01-02 03:04 UTC; "
                    "CPU: X (2 logical cores).")


def test_the_docs_pages_are_only_written_blocks():
    """Nothing outside the blocks: a figure edited into a page by hand outside a section would
    survive every run, so a page must be its intro and blocks exactly."""
    from scripts import main
    from scripts.bench import SECTIONS
    for path, intro, sections in ((ROOT / "docs" / "benchmarks.md", page.INTRO, SECTIONS),
                                  (main.PAGE, main.PAGE_INTRO, main.SECTIONS)):
        text = path.read_text()
        blocks = page.read_blocks(text)
        assert blocks and set(blocks) <= set(sections), path
        assert list(blocks) == [s for s in sections if s in blocks], path
        assert text == intro + "".join("\n" + b for b in blocks.values()), path
        for name, block in blocks.items():
            assert f"\n## {name}\n\nCommand: `" in block, (path, name)


def test_the_main_job_writes_the_tables_it_printed(tmp_path):
    from scripts import main
    path = tmp_path / "main-job.md"
    main.write_page(path, ["--only", "globe"], "CPU: X", {"mechanisms": "mechanism  bodies\nglobe 4",
                                                          "linkages": "linkage\nfour_bar 3",
                                                          "simulated_rigs": None,
                                                          "fitted_joints": None})
    main.write_page(path, ["--only", "door_stop"], "CPU: Y", {"mechanisms": None,
                                                              "linkages": "linkage\ndoor 1",
                                                              "simulated_rigs": None,
                                                              "fitted_joints": None})
    blocks = page.read_blocks(path.read_text())
    assert list(blocks) == ["mechanisms", "linkages"]
    assert "globe 4" in blocks["mechanisms"] and "--only globe" in blocks["mechanisms"]
    assert "door 1" in blocks["linkages"] and "four_bar" not in blocks["linkages"]
    assert "`python scripts/main.py --only door_stop`" in blocks["linkages"]
    assert path.read_text().startswith(main.PAGE_INTRO)


def test_bench_writes_a_section_into_a_copy_of_the_page(tmp_path):
    """A real quick run of one small section (seconds) into a copy of the docs page."""
    target = tmp_path / "benchmarks.md"
    shutil.copy(ROOT / "docs" / "benchmarks.md", target)
    before = page.read_blocks(target.read_text())
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench.py"), "--only", "expcoords",
                          "--quick", "--page", str(target)], capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr
    after = page.read_blocks(target.read_text())
    assert {n: b for n, b in after.items() if n != "expcoords"} == before
    assert "--only expcoords --quick" in after["expcoords"]
    assert "load average" in after["expcoords"] and "| call | median us |" in after["expcoords"]
