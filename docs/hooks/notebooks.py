"""MkDocs hook: a notebook page loads no script of its own, and offers the
notebook for download.

mkdocs-jupyter's page template (nbconvert's `lab` template) puts two scripts
in each notebook's HTML: a MathJax 2 loader, here with an empty `src` (the
page would load itself as a script) and its configuration, and a module that
imports Mermaid from a CDN when the notebook holds a diagram. The site
typesets every page's math with its own KaTeX (docs/javascripts/katex.js)
and no notebook draws a Mermaid diagram, so both are removed.

mkdocs-jupyter's `include_source` copies the `.ipynb` beside its page; the
page's first line links to it.
"""

import html
import pathlib
import re

MATHJAX_LOADER = re.compile(
    r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->", re.S
)
# The one module script that mentions `.jp-Mermaid`, never past its own end.
MERMAID_LOADER = re.compile(
    r'<script type="module">(?:(?!</script>).)*?jp-Mermaid.*?</script>', re.S
)


def on_page_content(content, page, config, files):
    if not page.file.src_uri.endswith(".ipynb"):
        return content
    name = html.escape(pathlib.PurePosixPath(page.file.src_uri).name)
    download = (
        f'<p class="notebook-download"><a href="{name}" download>Download the notebook'
        f" (<code>{name}</code>)</a>, stored executed; run it with the dev extra.</p>\n"
    )
    return download + MERMAID_LOADER.sub("", MATHJAX_LOADER.sub("", content))
