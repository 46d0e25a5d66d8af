"""The benchmarks' output: one Markdown table per measurement."""


def print_table(title, rows, columns):
    """Print `rows` (dicts) under the heading `title` as a Markdown table of
    `columns`; floats with thousands separators and two decimals."""
    print(f"\n## {title}\n")
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        cells_text = []
        for column in columns:
            value = row[column]
            cells_text.append(f"{value:,.2f}" if isinstance(value, float) else str(value))
        print("| " + " | ".join(cells_text) + " |")
