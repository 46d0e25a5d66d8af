"""The documentation: every Python block runs, every public name has an API
entry, and the site builds with `mkdocs build --strict`.

The convention for code blocks in `README.md` and `docs/**/*.md`:

- every fenced block opened by exactly `` ```python `` runs, in the order of
  the page, all blocks of a page in one namespace (a page reads as one
  script), in a fresh namespace per page and in a temporary working
  directory (a block may write files);
- a block that is deliberately not runnable (it needs a trained run
  directory, a cluster or the network) is preceded, on the line just above
  its fence, by an HTML comment saying why, which the rendered page does not
  show: `<!-- not-run: needs a finished g2p run -->`;
- other fences (`bash`, `text`, `json`, …) are never run.

A block that fails fails its page's test naming the file and the line of
the block, with the traceback's lines in the page.

The README's blocks run as a reader runs them, as one script in a fresh
Python process, whose stderr must hold no warning (see `warning_lines`).
"""

import dataclasses
import fcntl
import importlib
import inspect
import json
import pathlib
import re
import runpy
import subprocess
import sys
import traceback
import urllib.parse

import bs4
import keras
import pytest
import yaml

from tests.isolated import subprocess_env

REPOSITORY = pathlib.Path(__file__).resolve().parents[1]
DOCS = REPOSITORY / "docs"
README = REPOSITORY / "README.md"

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>```+|~~~+)(?P<info>.*)$")
NOT_RUN = re.compile(r"^\s*<!--\s*not-run:\s*\S.*-->\s*$")


@dataclasses.dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    path: pathlib.Path
    line: int  # 1-based line of the block's first line of code
    language: str
    source: str
    not_run: bool

    @property
    def where(self):
        path = self.path
        if path.is_relative_to(REPOSITORY):
            path = path.relative_to(REPOSITORY)
        return f"{path}:{self.line}"


def code_blocks(path):
    """Every fenced block of the Markdown file `path`, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        language = opening["info"].strip().split(" ")[0] if opening["info"].strip() else ""
        previous = next(
            (lines[i] for i in range(index - 1, -1, -1) if lines[i].strip()), ""
        )
        body = []
        index += 1
        while index < len(lines) and lines[index].strip() != fence:
            line = lines[index]
            body.append(line[len(indent):] if line.startswith(indent) else line)
            index += 1
        start = index - len(body) + 1 if body else index + 1
        blocks.append(
            Block(path, start, language, "\n".join(body) + "\n", bool(NOT_RUN.match(previous)))
        )
        index += 1
    return blocks


def runnable_blocks(path):
    return [
        block
        for block in code_blocks(path)
        if block.language == "python" and not block.not_run
    ]


def run_page(path, directory, monkeypatch):
    """Run the page's Python blocks in order in one fresh namespace, inside
    `directory`; fail naming the file and line of the block that fails."""
    monkeypatch.chdir(directory)
    namespace = {"__name__": f"docs:{path.name}"}
    try:
        for block in runnable_blocks(path):
            # Blank lines first, so that tracebacks give the page's own lines.
            code = compile("\n" * (block.line - 1) + block.source, str(path), "exec")
            try:
                exec(code, namespace)
            except Exception as error:
                pytest.fail(
                    f"{block.where}: the block failed with {type(error).__name__}: {error}\n"
                    + "".join(traceback.format_exception(error)[-6:]),
                    pytrace=False,
                )
    finally:
        keras.backend.clear_session()


# A page's blocks as one script, in a fresh interpreter: argv[1] the blocks
# (JSON), argv[2] where to write the failure, if a block fails.
PAGE_SCRIPT = """\
import json
import pathlib
import sys
import traceback

namespace = {"__name__": "__main__"}
for block in json.loads(pathlib.Path(sys.argv[1]).read_text(encoding="utf-8")):
    code = compile("\\n" * (block["line"] - 1) + block["source"], block["path"], "exec")
    try:
        exec(code, namespace)
    except Exception as error:
        pathlib.Path(sys.argv[2]).write_text(
            f"{block['where']}: the block failed with {type(error).__name__}: {error}\\n"
            + "".join(traceback.format_exception(error)[-6:]),
            encoding="utf-8",
        )
        sys.exit(1)
"""


def run_page_as_a_script(path, directory):
    """Run the page's Python blocks in order as one script in a fresh Python
    process, inside `directory`, with TensorFlow's default log level (the
    suite's own quieter one is not the reader's); fail naming the file and
    line of the block that fails. Returns the process's stderr."""
    blocks = directory / "blocks.json"
    blocks.write_text(
        json.dumps(
            [
                {"path": str(block.path), "line": block.line, "source": block.source,
                 "where": block.where}
                for block in runnable_blocks(path)
            ]
        ),
        encoding="utf-8",
    )
    failure = directory / "failure.txt"
    environment = subprocess_env()
    del environment["TF_CPP_MIN_LOG_LEVEL"]
    completed = subprocess.run(
        [sys.executable, "-c", PAGE_SCRIPT, str(blocks), str(failure)],
        capture_output=True,
        text=True,
        cwd=directory,
        env=environment,
        timeout=600,
    )
    if completed.returncode != 0:
        if failure.exists():
            pytest.fail(failure.read_text(encoding="utf-8"), pytrace=False)
        pytest.fail(completed.stderr[-3000:], pytrace=False)
    return completed.stderr


#: What a warning looks like on stderr: Python's `warnings` (Keras's
#: included), TensorFlow's Python logger, absl's Python logger.
WARNING_LINE = re.compile(
    r"^(?:.+:\d+: \w*Warning: .*|WARNING:tensorflow:.*|W\d{4} [\d:.]+ +\d+ \S+\.py:\d+\] .*)$",
    re.MULTILINE,
)


#: What TensorFlow prints from C++ as `import kerasrnn` loads it (held back
#: unless loading fails), and what the LiteRT exports print for their own
#: steps (the converter's passes, the XNNPACK notice of the check that runs
#: the file; held back unless a step fails).
NATIVE_NOISE = re.compile(
    r"^.*(?:absl::InitializeLog|oneDNN custom operations|cudart_stub|cpu_feature_guard"
    r"|failed call to cuInit|XNNPACK delegate|tf_tfl_flatbuffer_helpers).*$",
    re.MULTILINE,
)


def warning_lines(stderr):
    """The warnings in a process's `stderr`, one line each.

    TensorFlow's C++ log lines are not among them: the start-up ones are
    printed while `import keras` loads TensorFlow, before any block imports
    kerasrnn, and the reader sets which others show with
    `TF_CPP_MIN_LOG_LEVEL` before that import (kerasrnn leaves it alone:
    see kerasrnn/__init__.py).
    """
    return WARNING_LINE.findall(stderr)


def pages():
    return [README, *sorted(DOCS.rglob("*.md"))]


# Pages whose blocks train, decode or export a model: seconds each, so they
# stay out of the quick developer loop.
SLOW_PAGES = {"README.md", "index.md", "seq2seq.md", "deploy.md", "bptt.md"}


def page_params():
    params = []
    for path in pages():
        if path.is_relative_to(DOCS / "notebooks") or not runnable_blocks(path):
            continue
        marks = [pytest.mark.slow] if path.name in SLOW_PAGES else []
        params.append(pytest.param(path, id=str(path.relative_to(REPOSITORY)), marks=marks))
    return params


# Pages run as a reader's script in a fresh process, whose stderr is checked:
# the README's quickstarts are the first code most readers run. (In the
# suite's process TensorFlow is loaded long before a page runs.)
SCRIPT_PAGES = {"README.md"}


@pytest.mark.parametrize("path", page_params())
def test_page_python_blocks_run(path, tmp_path, monkeypatch):
    if path.name in SCRIPT_PAGES:
        stderr = run_page_as_a_script(path, tmp_path)
        assert not warning_lines(stderr), "\n".join(warning_lines(stderr))
        assert not NATIVE_NOISE.findall(stderr), "\n".join(NATIVE_NOISE.findall(stderr))
    else:
        run_page(path, tmp_path, monkeypatch)


def test_blocks_are_found_with_their_lines(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n"
        "```python\n"
        "x = 1\n"
        "```\n"
        "\n"
        "<!-- not-run: needs a cluster -->\n"
        "```python\n"
        "cluster()\n"
        "```\n"
        "```bash\n"
        "ls\n"
        "```\n"
        "- a list item\n"
        "\n"
        "    ```python\n"
        "    y = x + 1\n"
        "    ```\n"
    )
    blocks = code_blocks(page)
    assert [(b.line, b.language, b.source, b.not_run) for b in blocks] == [
        (3, "python", "x = 1\n", False),
        (8, "python", "cluster()\n", True),
        (11, "bash", "ls\n", False),
        (16, "python", "y = x + 1\n", False),
    ]
    assert [b.line for b in runnable_blocks(page)] == [3, 16]


def test_a_failing_block_names_its_file_and_line(tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    page.write_text(
        "```python\nx = 1\n```\n\ntext\n\n```python\ny = x\nraise ValueError('no')\n```\n"
    )
    with pytest.raises(pytest.fail.Exception) as failure:
        run_page(page, tmp_path, monkeypatch)
    message = str(failure.value)
    assert f"{page}:8: the block failed with ValueError: no" in message
    assert f'File "{page}", line 9' in message


def test_a_failing_block_of_a_script_page_names_its_file_and_line(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```python\nx = 1\n```\n\n```python\ny = x\nraise ValueError('no')\n```\n")
    with pytest.raises(pytest.fail.Exception) as failure:
        run_page_as_a_script(page, tmp_path)
    message = str(failure.value)
    assert f"{page}:6: the block failed with ValueError: no" in message
    assert f'File "{page}", line 7' in message


def test_warnings_on_a_script_page_s_stderr_are_found(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "```python\n"
        "import logging, sys, warnings\n"
        "logging.basicConfig()  # TensorFlow's logger's format\n"
        "print('a line of output', file=sys.stderr)\n"
        "warnings.warn('the first')\n"
        "logging.getLogger('tensorflow').warning('the second')\n"
        "```\n"
    )
    stderr = run_page_as_a_script(page, tmp_path)
    found = warning_lines(stderr)
    assert len(found) == 2
    assert found[0].startswith(f"{page}:5: UserWarning: the first")
    assert found[1] == "WARNING:tensorflow:the second"


def test_not_run_blocks_say_why():
    """A not-run marker needs a reason, and only sits above a Python block."""
    for path in pages():
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, start=1):
            if "not-run" in line:
                assert NOT_RUN.match(line), f"{path}:{number}: write <!-- not-run: reason -->"
                following = next((x for x in lines[number:] if x.strip()), "")
                assert following.strip() == "```python", (
                    f"{path}:{number}: a not-run marker must sit just above a ```python block"
                )


# ---------------------------------------------------------------- API pages

API_MODULES = ("kerasrnn", "kerasrnn.seq2seq")


def api_directives():
    """The objects the API pages document (`::: path` lines)."""
    directives = set()
    for page in (DOCS / "api").glob("*.md"):
        for line in page.read_text(encoding="utf-8").splitlines():
            if line.startswith("::: "):
                directives.add(line[4:].strip())
    return directives


@pytest.mark.parametrize("module_name", API_MODULES)
def test_every_public_name_has_an_api_entry(module_name):
    """Each name in `__all__` is documented on an API page: as
    `module.name`, or from the module that defines it (a name the package
    loads lazily)."""
    module = importlib.import_module(module_name)
    directives = api_directives()
    missing = [
        name
        for name in module.__all__
        if f"{module_name}.{name}" not in directives
        and not any(
            d.startswith(module_name + ".") and d.endswith("." + name) for d in directives
        )
    ]
    assert not missing, f"docs/api has no ::: entry for {module_name}.{missing}"


def test_api_entries_name_objects_that_exist():
    """(The pipelines' entries are checked by the site's build, which
    resolves every entry.)"""
    for directive in sorted(d for d in api_directives() if d.startswith(API_MODULES[0] + ".")):
        module_name, _, attribute = directive.rpartition(".")
        try:
            module = importlib.import_module(directive)
        except ImportError:
            module = importlib.import_module(module_name)
            assert hasattr(module, attribute), f"docs/api: {directive} does not exist"


# ---------------------------------------------------------------- the site


def nav_files(entries):
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        if isinstance(value, list):
            yield from nav_files(value)
        else:
            yield value


def test_every_page_and_notebook_is_in_the_navigation():
    config = yaml.safe_load((REPOSITORY / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = list(nav_files(config["nav"]))
    pages_on_disk = {
        str(path.relative_to(DOCS)) for path in DOCS.rglob("*.md")
    } | {f"notebooks/{path.name}" for path in (REPOSITORY / "notebooks").glob("*.ipynb")}
    assert sorted(nav) == sorted(pages_on_disk)


#: How the markdown cell that follows a notebook's figure begins.
FIGURE_DESCRIPTION = "**Reading the figure.** "


def test_every_notebook_figure_is_described():
    """A code cell that draws a figure is followed by a markdown cell that
    says what it shows and what to read from it, for readers of the site
    and of screen readers, who cannot see the image."""
    import nbformat

    missing = []
    for path in sorted((REPOSITORY / "notebooks").glob("*.ipynb")):
        cells = nbformat.read(path, as_version=4).cells
        for index, cell in enumerate(cells):
            draws = cell.cell_type == "code" and any(
                "image/png" in output.get("data", {}) for output in cell.outputs
            )
            following = cells[index + 1] if index + 1 < len(cells) else None
            if draws and not (
                following is not None
                and following.cell_type == "markdown"
                and following.source.startswith(FIGURE_DESCRIPTION)
            ):
                missing.append(f"{path.name}: cell {index}")
    assert not missing, f"figures without a {FIGURE_DESCRIPTION!r} cell after them: {missing}"


def build_site(directory):
    """`mkdocs build --strict` into `directory`: the return code and the
    warnings and errors it printed."""
    completed = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(directory)],
        capture_output=True,
        text=True,
        cwd=REPOSITORY,
        timeout=600,
    )
    problems = [
        line for line in completed.stderr.splitlines() if line.startswith(("WARNING", "ERROR"))
    ]
    return completed.returncode, "\n".join(problems) or completed.stderr[-3000:]


@pytest.fixture(scope="session")
def site(tmp_path_factory, worker_id):
    """The site, built once per test session: the first worker that asks
    builds it into a folder all of the session's workers share, under a lock;
    the others read it."""
    shared = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        shared = shared.parent  # the session's folder, above each worker's
    directory = shared / "site"
    with open(shared / "site.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        outcome = shared / "site-build.json"
        if not outcome.exists():
            returncode, problems = build_site(directory)
            outcome.write_text(json.dumps({"returncode": returncode, "problems": problems}))
        build = json.loads(outcome.read_text())
    if build["returncode"] != 0:
        pytest.fail(f"mkdocs build --strict failed:\n{build['problems']}", pytrace=False)
    return directory


def site_pages(site):
    """Every HTML page of the built site, by its path in the site."""
    return {
        str(path.relative_to(site)): path
        for path in sorted(site.rglob("*.html"))
        if path.relative_to(site).parts[0] not in ("assets", "vendor")
    }


def parse(path):
    return bs4.BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


@pytest.mark.slow
def test_site_builds_strictly(site):
    """`mkdocs build --strict`: a broken link, a missing page, an API entry
    that does not resolve or a docstring the reference cannot parse fails."""
    assert (site / "api" / "cells" / "index.html").exists()
    assert (site / "notebooks" / "08_attention" / "index.html").exists()


def remote(url):
    """Whether `url` names another host (`https://…`, `//host/…`)."""
    parts = urllib.parse.urlsplit(url)
    return bool(parts.scheme or parts.netloc)


@pytest.mark.slow
def test_no_page_loads_anything_from_another_host(site):
    """The site works offline: no script, stylesheet or font comes from
    another host, and no inline script imports one."""
    failures = []
    for name, path in site_pages(site).items():
        page = parse(path)
        for script in page.find_all("script"):
            source = script.get("src")
            if source is not None and (not source or remote(source)):
                failures.append(f"{name}: <script src={source!r}>")
            if re.search(r"\bimport\(\s*[\"']https?:|https?://[^\s\"']+\.m?js\b", script.text):
                failures.append(f"{name}: an inline script loads {script.text.strip()[:80]!r}…")
        for link in page.find_all("link", rel=["stylesheet", "preconnect", "preload"]):
            if remote(link.get("href", "")):
                failures.append(f"{name}: <link href={link['href']!r}>")
    assert not failures, "\n".join(failures)


# Where the site's math is: the elements docs/javascripts/katex.js typesets.
MATH_ELEMENTS = (".arithmatex", ".jp-RenderedMarkdown")
KATEX_SCRIPTS = (
    "vendor/katex/katex.min.js",
    "vendor/katex/contrib/auto-render.min.js",
    "javascripts/katex.js",
)
# TeX written outside those elements: shown raw, whatever the page loads.
RAW_TEX = re.compile(r"\\\(|\\\[|\$\$|\\(?:frac|mathbf|partial|sum|tanh|odot)\b")


def loaded_files(site, path, page, tag, attribute):
    """The site files a page's `<tag attribute=…>` elements load, as paths
    in the site (the missing ones as given)."""
    files = set()
    for element in page.find_all(tag):
        reference = element.get(attribute)
        if not reference or remote(reference):
            continue
        target = (path.parent / urllib.parse.urlsplit(reference).path).resolve()
        files.add(str(target.relative_to(site.resolve())) if target.is_file() else reference)
    return files


def test_the_katex_script_typesets_the_math_elements():
    script = (DOCS / "javascripts" / "katex.js").read_text(encoding="utf-8")
    for selector in MATH_ELEMENTS:
        assert f'querySelectorAll("{selector}")' in script


@pytest.mark.slow
def test_math_is_typeset_by_the_site_s_own_katex(site):
    """A page with math loads KaTeX, its auto-render and the site's script
    from the site itself, and its stylesheet; and no TeX sits outside the
    elements that script typesets."""
    failures = []
    pages_with_math = 0
    for name, path in site_pages(site).items():
        page = parse(path)
        content = page.find("article") or page
        has_math = bool(content.select(", ".join(MATH_ELEMENTS)))
        for element in content.select(", ".join(MATH_ELEMENTS) + ", pre, code, script, style"):
            element.decompose()
        raw = RAW_TEX.search(content.get_text())
        if raw:
            failures.append(f"{name}: TeX outside the math elements: …{raw.group(0)}…")
        if not has_math:
            continue
        pages_with_math += 1
        scripts = loaded_files(site, path, page, "script", "src")
        missing = [script for script in KATEX_SCRIPTS if script not in scripts]
        stylesheets = loaded_files(site, path, page, "link", "href")
        if "vendor/katex/katex.min.css" not in stylesheets:
            missing.append("vendor/katex/katex.min.css")
        if missing:
            failures.append(f"{name}: has math but does not load {missing}")
    assert not failures, "\n".join(failures)
    assert pages_with_math >= 10  # the guide's equations and the notebooks'


@pytest.mark.slow
def test_pages_show_the_version_and_notebooks_their_download(site):
    """Every page's footer names pyproject.toml's version and links the
    repository; a notebook's page links to its .ipynb, which the site holds."""
    import tomllib

    version = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["project"]["version"]
    failures = []
    for name, path in site_pages(site).items():
        page = parse(path)
        footer = page.select_one(".md-copyright")
        if footer is None or f"kerasrnn {version}" not in footer.get_text():
            failures.append(f"{name}: the footer does not say kerasrnn {version}")
        if page.select_one("a.md-source[href^='https://github.com/']") is None:
            failures.append(f"{name}: no link to the repository")
        if name.startswith("notebooks/"):
            links = [a["href"] for a in page.select("a[download]")]
            if not links or not all((path.parent / link).is_file() for link in links):
                failures.append(f"{name}: no download link to its notebook: {links}")
    assert not failures, "\n".join(failures)


# ------------------------------------------- the API pages, as rendered


def api_pages(site):
    return {name: path for name, path in site_pages(site).items() if name.startswith("api/")}


def documented_objects(page):
    """(identifier, element) of each object an API page documents."""
    for element in page.select("div.doc-object"):
        heading = element.find(class_="doc-heading")
        if heading is not None and heading.get("id"):
            yield heading["id"], element


def own(element, found):
    """The elements of `found` that belong to `element`'s own docstring, not
    to a member documented inside it."""
    return [item for item in found if item.find_parent(class_="doc-object") is element]


def section_tables(element):
    """{title: table} of the docstring sections an object renders as tables."""
    tables = {}
    for title in own(element, element.select(".doc-section-title")):
        if title.get_text(strip=True) == "Examples:":  # code blocks, not a table
            continue
        table = title.find_parent("p").find_next_sibling()
        tables[title.get_text(strip=True)] = table if table and table.name == "table" else None
    return tables


def python_object(identifier):
    """The object an API heading documents, imported."""
    parts = identifier.split(".")
    for split in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attribute in parts[split:]:
            target = getattr(target, attribute)
        return target
    raise ImportError(identifier)


@pytest.mark.slow
def test_docstring_examples_render_as_code_with_their_prompts(site):
    """A doctest line (`>>>`) is shown in a highlighted code block, its prompt
    kept; one that reaches the page as text (an example the parser did not
    see) renders as nested quotes."""
    failures = []
    rendered = 0
    for name, path in api_pages(site).items():
        page = parse(path)
        for identifier, element in documented_objects(page):
            contents = element.find(class_="doc-contents")
            if contents is None:
                continue
            for text in own(element, contents.find_all(string=re.compile(">>>"))):
                if text.find_parent("pre") is None:
                    failures.append(f"{name}: {identifier}: '>>>' outside a code block")
            # Markdown reads the text `>>> x` as quotes three deep.
            for quote in own(element, contents.find_all("blockquote")):
                failures.append(f"{name}: {identifier}: quoted text {quote.get_text()[:60]!r}")
            for block in own(element, contents.select("div.highlight pre")):
                if ">>>" in block.get_text():
                    rendered += 1
                    if not block.select("span.gp"):
                        failures.append(f"{name}: {identifier}: an example without prompts")
    assert not failures, "\n".join(failures)
    assert rendered >= 10, f"{rendered} docstring examples render as code"


# Material's admonition kinds: a docstring's `Note:` or `Warning:`. Any other
# admonition is a section the parser did not know (`Call arguments:`), its
# entries run together in one paragraph.
ADMONITION_KINDS = {
    "note", "abstract", "info", "tip", "success", "question", "warning", "failure",
    "danger", "bug", "example", "quote",
}


@pytest.mark.slow
def test_docstring_sections_render_as_tables(site):
    """Args, Call arguments, Returns, Raises, Attributes: a table each, no
    section left as an admonition or a table without rows."""
    failures = []
    call_argument_tables = 0
    for name, path in api_pages(site).items():
        page = parse(path)
        for identifier, element in documented_objects(page):
            for admonition in own(element, element.select("details, div.admonition")):
                kinds = set(admonition.get("class", [])) - {"admonition"}
                if not kinds & ADMONITION_KINDS:
                    failures.append(f"{name}: {identifier}: a section left as text: {kinds}")
            for title, table in section_tables(element).items():
                if title == "Call arguments:":
                    call_argument_tables += 1
                if table is None or not table.select("tbody tr"):
                    failures.append(f"{name}: {identifier}: {title} has no table rows")
    assert not failures, "\n".join(failures)
    assert call_argument_tables >= 10  # the cells', the models' and the loss's


def signature_names(target):
    parameters = inspect.signature(target).parameters.values()
    return [
        {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}.get(
            parameter.kind, ""
        )
        + parameter.name
        for parameter in parameters
        if parameter.name not in ("self", "cls")
    ]


@pytest.mark.slow
def test_parameter_tables_name_every_parameter(site):
    """An object whose docstring has Args documents every parameter of its
    signature (as inspect reads it), and only those."""
    failures = []
    for name, path in api_pages(site).items():
        page = parse(path)
        for identifier, element in documented_objects(page):
            table = section_tables(element).get("Parameters:")
            if table is None:
                continue
            documented = [row.find("td").get_text(strip=True) for row in table.select("tbody tr")]
            expected = signature_names(python_object(identifier))
            if sorted(documented) != sorted(expected):
                failures.append(
                    f"{name}: {identifier}: the table has {documented}, the signature {expected}"
                )
    assert not failures, "\n".join(failures)


@pytest.mark.slow
def test_library_returns_tables_give_a_type(site):
    """kerasrnn is annotated throughout (mypy's disallow_untyped_defs), so
    every Returns entry on its pages shows a type."""
    failures = []
    for name, path in api_pages(site).items():
        page = parse(path)
        for identifier, element in documented_objects(page):
            if not identifier.startswith("kerasrnn."):
                continue
            table = section_tables(element).get("Returns:")
            for row in table.select("tbody tr") if table is not None else ():
                if not row.find("td").get_text(strip=True):
                    failures.append(f"{name}: {identifier}: a Returns entry without its type")
    assert not failures, "\n".join(failures)


@pytest.mark.slow
def test_no_private_name_on_the_api_pages(site):
    """No private object, parameter or name in a docstring's text
    (`_NEEDS_TENSORFLOW`) on the reference."""
    failures = []
    for name, path in api_pages(site).items():
        page = parse(path)
        for code in page.select("article p code, article td code, article li code"):
            if re.fullmatch(r"_[A-Za-z]\w*", code.get_text()):
                failures.append(f"{name}: the text names {code.get_text()}")
        for identifier, element in documented_objects(page):
            if identifier.rpartition(".")[2].startswith("_"):
                failures.append(f"{name}: {identifier} is documented")
            for title, table in section_tables(element).items():
                for row in table.select("tbody tr") if table is not None else ():
                    if row.find("td").get_text(strip=True).startswith("_"):
                        failures.append(f"{name}: {identifier}: {title} lists {row.td.text!r}")
    assert not failures, "\n".join(failures)


def test_each_name_has_one_api_entry():
    """A name is documented on one page, once."""
    directives = [
        (page.name, line[4:].strip())
        for page in sorted((DOCS / "api").glob("*.md"))
        for line in page.read_text(encoding="utf-8").splitlines()
        if line.startswith("::: ")
    ]
    names = [name for _, name in directives]
    repeated = sorted({entry for entry in directives if names.count(entry[1]) > 1})
    assert not repeated, f"documented more than once: {repeated}"


def test_guide_pages_link_names_by_cross_reference():
    """A guide page links an API entry as `[name][identifier]`, which the
    build checks and which follows the entry to whatever page holds it, not
    by the entry's page and anchor."""
    by_hand = re.compile(r"\]\((?:\.\./)*api/[^)]*#[^)]*\)")
    for path in [README, *sorted(DOCS.glob("*.md"))]:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            assert not by_hand.search(line), f"{path}:{number}: use [name][identifier]"


@pytest.mark.slow
def test_cross_references_render_as_links(site):
    """Every `[name][identifier]` of the guide and the docstrings is a link:
    no reference left as text, and each guide page that names the API links
    to it."""
    failures = []
    for name, path in site_pages(site).items():
        page = parse(path)
        content = page.find("article")
        if content is None:
            continue
        for unresolved in content.find_all("autoref"):
            failures.append(f"{name}: unresolved reference {unresolved.get('identifier')}")
        for element in content.select("pre, code, script, style"):
            element.decompose()
        for leftover in re.findall(r"\]\[[A-Za-z_][\w.]*\]", content.get_text()):
            failures.append(f"{name}: a reference left as text: {leftover}")
    guide = ("index.html", "cells", "parameters", "bptt", "seq2seq", "deploy", "backends")
    guide_links = {
        name: len(parse(path).select("article a.autorefs-internal"))
        for name, path in site_pages(site).items()
        if name.split("/")[0] in guide
    }
    failures += [f"{name}: no link to the API" for name, count in guide_links.items() if not count]
    assert not failures, "\n".join(failures)


def repeated(labels):
    return [f"{label!r} {labels.count(label)} times" for label in sorted(set(labels))
            if labels.count(label) > 1]


@pytest.mark.slow
def test_table_of_contents_entries_are_distinct(site):
    """Entries side by side in a page's table of contents differ (six
    entries all called `run` say nothing), and an API object's entry names
    it once on its page, wherever it sits: six classes' `call` are
    `Seq2Seq.call`, `Distiller.call`, …, not `call` six times."""
    failures = []
    for name, path in site_pages(site).items():
        toc = parse(path).select_one("nav.md-nav--secondary")
        if toc is None:
            continue
        for entries in toc.find_all("ul"):
            labels = [
                item.a.get_text(" ", strip=True)
                for item in entries.find_all("li", recursive=False)
                if item.a is not None
            ]
            failures += [f"{name}: side by side, {entry}" for entry in repeated(labels)]
        # An API object's anchor is its dotted path: `#kerasrnn.seq2seq.Seq2Seq.call`.
        objects = [
            link.get_text(" ", strip=True)
            for link in toc.select("a[href]")
            if re.fullmatch(r"#(kerasrnn|pipelines)(\.\w+)+", link["href"])
        ]
        failures += [f"{name}: on the page, {entry}" for entry in repeated(objects)]
    assert not failures, "\n".join(failures)


# ------------------------------------------------- the results page's plot

SCRIPT = DOCS / "wer_by_length.py"


def test_bars_are_the_runs_wer_by_length_in_percent(tmp_path):
    script = runpy.run_path(str(SCRIPT))
    for name, by_length in (("a", {"<=4": 0.25, ">=11": 0.5}), ("b", {"<=4": 0.2, ">=11": 0.3})):
        (tmp_path / name).mkdir()
        (tmp_path / name / "metrics.json").write_text(
            json.dumps({"test_wer_by_length": by_length})
        )
    runs = script["read_runs"]([f"first={tmp_path / 'a'}", f"second={tmp_path / 'b'}"])
    figure = script["draw"](runs)
    (axis,) = figure.axes
    heights = [round(bar.get_height(), 6) for bar in axis.patches]
    assert heights == [25.0, 50.0, 20.0, 30.0]
    assert [text.get_text() for text in axis.get_legend().get_texts()] == ["first", "second"]


def test_arguments_without_a_label_are_refused():
    script = runpy.run_path(str(SCRIPT))
    with pytest.raises(SystemExit, match="expected LABEL=RUN_DIRECTORY; received 'run'"):
        script["read_runs"](["run"])
