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


# A stored figure larger than this bloats the repository for no reader.
MAX_PNG_BYTES = 80_000


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_stored_notebook_shows_its_outputs(path):
    """Stored executed top to bottom in one kernel, so the repository page
    shows every figure and number; its figures are small PNGs."""
    notebook = nbformat.read(path, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    counts = [cell.get("execution_count") for cell in code]
    assert counts == list(range(1, len(code) + 1)), counts
    outputs = [output for cell in code for output in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    images = [
        o["data"]["image/png"] for o in outputs if "image/png" in o.get("data", {})
    ]
    shows = sum("plt.show()" in cell.source for cell in code)
    assert len(images) >= shows
    # base64 holds 3 bytes in 4 characters.
    assert all(len(image) * 3 // 4 <= MAX_PNG_BYTES for image in images)


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
