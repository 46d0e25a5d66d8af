"""The README is a front page: short, its test command the one CI runs, its
links alive. (Its Python blocks run in tests/test_docs.py, with the pages.)"""

import re

from tests.test_docs import REPOSITORY, code_blocks, runnable_blocks

README = REPOSITORY / "README.md"
TEST_COMMAND = 'pip install -e ".[dev]" && python -m pytest'


def test_readme_is_at_most_200_lines():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 200


def test_readme_gives_the_test_command_that_ci_runs():
    ci = (REPOSITORY / ".ci" / "run").read_text(encoding="utf-8")
    assert TEST_COMMAND in ci
    bash = [block.source for block in code_blocks(README) if block.language == "bash"]
    assert any(TEST_COMMAND in source for source in bash)


def test_readme_has_its_quickstarts():
    """A cell quickstart, a seq2seq one that trains, decodes and exports, and
    the command line, the quick run before the default one."""
    sources = [block.source for block in runnable_blocks(README)]
    assert any("explain_params" in source and "count_params()" in source for source in sources)
    needed = ("attention=", ".fit(", "beam_search_decode", "export_serving")
    assert any(all(name in source for name in needed) for source in sources)
    commands = [
        line.split("#")[0].strip()
        for block in code_blocks(README)
        if block.language == "bash"
        for line in block.source.splitlines()
    ]
    quick = next(i for i, c in enumerate(commands) if c.startswith("kerasrnn-train g2p --quick"))
    assert commands.index("kerasrnn-train g2p") > quick


def test_readme_links_point_at_files_that_exist():
    text = README.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if "://" in target:
            continue
        assert (REPOSITORY / target).exists(), f"README.md links to {target}, which is missing"
