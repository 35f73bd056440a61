"""The table a comparison script prints: one row a measure, mongocore's figure,
pymongo's, and the ratio of the two (below 1: mongocore uses less)."""

from __future__ import annotations


def print_ratio_table(
    rows: list[tuple[str, float, float]], *, heading: str, unit: str = "", markdown: bool
) -> None:
    """Print ``rows`` of (label, mongocore, pymongo) as Markdown or aligned text;
    ``heading`` names the label column, ``unit`` the figures' unit (if not in labels)."""
    suffix = f" {unit}" if unit else ""
    if markdown:
        print(f"| {heading} | mongocore{suffix} | pymongo{suffix} | ratio |")
        print("| --- | ---: | ---: | ---: |")
    width = max(len(label) for label, _, _ in rows)
    for label, mine, other in rows:
        if markdown:
            print(f"| {label} | {mine:.1f} | {other:.1f} | {mine / other:.2f} |")
        else:
            print(
                f"{label:{width}s}  mongocore {mine:8.1f}{suffix}   pymongo {other:8.1f}{suffix}"
                f"   ratio {mine / other:.2f}"
            )
