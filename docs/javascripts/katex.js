// Typesets the site's math with the KaTeX shipped in docs/vendor/katex
// (katex 0.19.1 from the npm registry: katex.min.js, katex.min.css,
// contrib/auto-render.min.js and the woff2 fonts, unchanged), so that
// equations render with no network.
//
// KaTeX rather than MathJax: its three files and twenty fonts weigh 0.6 MB and
// render synchronously, and it covers every command the pages and notebooks
// use; MathJax 3 needs its whole component tree (it loads fonts and TeX
// extensions from its own folder at run time) to be as robust offline.
//
// Two kinds of math reach the browser:
// - Markdown pages, through pymdownx.arithmatex (generic mode): `\(...\)` and
//   `\[...\]` inside elements of class `arithmatex`;
// - notebooks, through mkdocs-jupyter: the markdown cells keep Jupyter's
//   `$...$` and `$$...$$`, inside `.jp-RenderedMarkdown`.
// Only those elements are searched, so a dollar sign in other text stays text.
const ARITHMATEX_DELIMITERS = [
  { left: "\\(", right: "\\)", display: false },
  { left: "\\[", right: "\\]", display: true },
];
const NOTEBOOK_DELIMITERS = [
  { left: "$$", right: "$$", display: true },
  { left: "$", right: "$", display: false },
  ...ARITHMATEX_DELIMITERS,
];

function typeset(root) {
  for (const element of root.querySelectorAll(".arithmatex")) {
    renderMathInElement(element, { delimiters: ARITHMATEX_DELIMITERS, throwOnError: false });
  }
  for (const element of root.querySelectorAll(".jp-RenderedMarkdown")) {
    renderMathInElement(element, { delimiters: NOTEBOOK_DELIMITERS, throwOnError: false });
  }
}

// MkDocs Material's `document$` emits on the first load and after each
// instant navigation.
document$.subscribe(({ body }) => typeset(body));
