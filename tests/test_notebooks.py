"""Every notebook in notebooks/ executes from top to bottom without error.

The notebooks hold assertions of their own (closed forms against the code,
bounds against measured gradient flow), so a notebook that runs is also a
notebook whose claims still hold.
"""

import pathlib

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted(
    (pathlib.Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb")
)


def test_there_is_a_notebook_per_topic():
    assert len(NOTEBOOKS) >= 6


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path):
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        kernel_name="python3",
        timeout=240,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    errors = [
        output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]
    assert not errors
