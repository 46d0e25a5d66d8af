"""MkDocs hook: an API page's table of contents names a member with its owner.

mkdocstrings lists each documented object in the page's table of contents by
its own name, so a page of classes lists `call` or `encode` once per class
that has one, and the entries say nothing apart. Here a member's entry is
qualified by the entry it sits under, as Python writes it: `Seq2Seq.encode`,
`Seq2SeqEnsemble.encode`, `bptt.clip_gradient`. An entry is a member when its
anchor, the object's dotted path, extends the anchor of the entry above it.
"""

API_PAGES = "api/"


def qualify(entry):
    """Prefix the members under `entry`, and theirs in turn, with its title."""
    for child in entry.children:
        if child.id.startswith(entry.id + "."):
            child.title = f"{entry.title}.{child.title}"
        qualify(child)


def on_page_content(html, page, config, files):
    if page.file.src_uri.startswith(API_PAGES):
        for entry in page.toc:
            qualify(entry)
    return html
