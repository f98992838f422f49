"""``gradercal stats``: agreement statistics of a ratings CSV file.

Registered on the main command group by :mod:`gradercal.cli`
(``main.add_command(stats)``). Reads long-format ratings (``unit,rater,value``; other
columns ignored), prints every applicable statistic of
:func:`gradercal.stats.rating_statistics` as a table or as JSON, optionally with
task-clustered bootstrap intervals (:func:`gradercal.stats.clustered_bootstrap`).

A malformed file is reported as ``file:line: field: message`` lines on stderr with exit
status 1; nothing is computed.
"""

from __future__ import annotations

import csv
import json
import math
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import click
import pandas as pd

from gradercal.errors import Problem, ValidationError
from gradercal.stats.bootstrap import BootResult, CiMethod, clustered_bootstrap
from gradercal.stats.coefficients import (
    LEVELS,
    RATING_COLUMNS,
    Level,
    RatingTable,
    Stat,
    WeightScheme,
    rating_statistics,
)

__all__ = ["RatingsFile", "read_ratings_csv", "stats"]

#: Readable names of the statistics, in the order of ``rating_statistics``.
LABELS: dict[str, str] = {
    "percent_agreement": "Percent agreement",
    "weighted_percent_agreement": "Weighted percent agreement",
    "cohen_kappa": "Cohen's kappa",
    "scott_pi": "Scott's pi",
    "bennett_s": "Bennett's S (Brennan–Prediger)",
    "fleiss_kappa": "Fleiss' kappa",
    "krippendorff_alpha": "Krippendorff's alpha",
    "gwet_ac1": "Gwet's AC1",
    "gwet_ac2": "Gwet's AC2",
    "icc1": "ICC(1,1)",
    "icc2": "ICC(2,1)",
    "icc3": "ICC(3,1)",
    "icc1k": "ICC(1,k)",
    "icc2k": "ICC(2,k)",
    "icc3k": "ICC(3,k)",
    "pearson_r": "Pearson's r",
    "spearman_rho": "Spearman's rho",
    "kendall_tau": "Kendall's tau-b",
}


@dataclass(frozen=True)
class RatingsFile:
    """A validated ratings file.

    Attributes:
        frame: Columns ``unit``, ``rater`` (str), ``value`` (float, or str for text
            ratings) and the cluster column when one was asked for; one row per rating
            (empty values, i.e. missing ratings, are left out).
        categories: The ``--categories`` set, parsed like the values, or ``None``.
    """

    frame: pd.DataFrame
    categories: list[Any] | None


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def read_ratings_csv(
    path: Path,
    *,
    level: Level = "nominal",
    weighted: bool = False,
    cluster_col: str | None = None,
    categories: str | None = None,
) -> RatingsFile:
    """Read and validate a long-format ratings CSV file.

    Rules: UTF-8 (a BOM is allowed), comma-separated with a header row naming at least
    ``unit``, ``rater`` and ``value`` (plus ``cluster_col`` when given); other columns
    are ignored; blank lines are skipped. An empty ``value`` is a missing rating. Values
    are numbers when every value parses as a finite number, text otherwise; the
    ordinal, interval and ratio levels and linear/quadratic weights need numbers, the
    ratio level non-negative ones. A rater rates a unit at most once, and a unit lies in
    one cluster.

    Args:
        path: The CSV file.
        level: Krippendorff's level of measurement (decides whether numbers are needed).
        weighted: Whether linear/quadratic weights are used (numbers needed).
        cluster_col: A column that must be present and non-empty (e.g. ``task``).
        categories: Comma-separated full category set (``"0,1"``), or ``None``.

    Raises:
        ValidationError: Listing every problem as ``file:line: field: message``.
    """
    name = str(path)
    try:
        with path.open(encoding="utf-8-sig", newline="") as fh:
            rows = list(_numbered_rows(fh))
    except UnicodeDecodeError:
        raise ValidationError([Problem(name, None, None, "not UTF-8 text")]) from None
    except csv.Error as exc:
        raise ValidationError([Problem(name, None, None, f"not valid CSV: {exc}")]) from None
    except OSError as exc:
        raise ValidationError([Problem(name, None, None, f"cannot read: {exc.strerror}")]) from None
    if not rows:
        raise ValidationError(
            [Problem(name, 1, None, "empty file: expected a header naming unit,rater,value")]
        )
    header_line, header = rows[0]
    columns = [h.strip() for h in header]
    required = [*RATING_COLUMNS, *([cluster_col] if cluster_col else [])]
    problems = [
        Problem(name, header_line, col, f"missing column (header has: {', '.join(columns)})")
        for col in required
        if col not in columns
    ]
    dupes = sorted({c for c in columns if c and columns.count(c) > 1} & set(required))
    problems += [Problem(name, header_line, c, "column named twice") for c in dupes]
    if problems:
        raise ValidationError(problems)
    index = {col: columns.index(col) for col in required}
    needs_numbers = level != "nominal" or weighted
    why = f"--level {level}" if level != "nominal" else "--weights"

    records: list[tuple[int, str, str, str, str]] = []  # line, unit, rater, value, cluster
    for line, row in rows[1:]:
        if len(row) < len(columns):
            problems.append(
                Problem(name, line, None, f"expected {len(columns)} fields, found {len(row)}")
            )
            continue
        cells = {col: row[i].strip() for col, i in index.items()}
        for col in ("unit", "rater", *([cluster_col] if cluster_col else [])):
            if not cells[col]:
                problems.append(Problem(name, line, col, "empty"))
        if cells["value"] == "":
            continue  # a missing rating
        records.append(
            (line, cells["unit"], cells["rater"], cells["value"], cells.get(cluster_col or "", ""))
        )

    numeric = all(_number(r[3]) is not None for r in records)
    if needs_numbers:
        for line, _, _, text, _ in records:
            value = _number(text)
            if value is None:
                problems.append(
                    Problem(name, line, "value", f"not a number: {text!r} ({why} needs numbers)")
                )
            elif level == "ratio" and value < 0:
                problems.append(
                    Problem(name, line, "value", f"negative value {text} (--level ratio needs ≥ 0)")
                )
        numeric = True

    cats: list[Any] | None = None
    if categories is not None:
        items = [c.strip() for c in categories.split(",") if c.strip()]
        if numeric:
            parsed = [_number(c) for c in items]
            bad = [c for c, v in zip(items, parsed, strict=True) if v is None]
            if bad or not items:
                raise click.BadParameter(
                    f"numeric ratings need numeric categories (got {categories!r})",
                    param_hint="--categories",
                )
            cats = [v for v in parsed if v is not None]
        else:
            cats = items
        if len(set(cats)) != len(cats) or not cats:
            raise click.BadParameter("categories must be distinct", param_hint="--categories")

    seen: dict[tuple[str, str], int] = {}
    cluster_of: dict[str, tuple[str, int]] = {}
    allowed = set(cats) if cats is not None else None
    for line, unit, rater, text, cluster in records:
        first = seen.setdefault((unit, rater), line)
        if first != line:
            problems.append(
                Problem(
                    name, line, "rater", f"{rater!r} already rated unit {unit!r} on line {first}"
                )
            )
        if cluster_col and cluster:
            c0, l0 = cluster_of.setdefault(unit, (cluster, line))
            if c0 != cluster:
                problems.append(
                    Problem(
                        name,
                        line,
                        cluster_col,
                        f"unit {unit!r} is in {cluster_col} {cluster!r} here but {c0!r} on line {l0}",
                    )
                )
        if allowed is not None:
            parsed_value: Any = _number(text) if numeric else text
            if parsed_value is not None and parsed_value not in allowed:
                problems.append(Problem(name, line, "value", f"{text!r} is not in --categories"))
    if problems:
        raise ValidationError(problems)
    if not records:
        raise ValidationError([Problem(name, None, None, "no ratings (every value is empty)")])

    data: dict[str, list[Any]] = {
        "unit": [r[1] for r in records],
        "rater": [r[2] for r in records],
        "value": [_number(r[3]) if numeric else r[3] for r in records],
    }
    if cluster_col:
        data[cluster_col] = [r[4] for r in records]
    frame = pd.DataFrame(data)
    frame["value"] = frame["value"].astype("float64" if numeric else object)
    return RatingsFile(frame=frame, categories=cats)


def _numbered_rows(fh: TextIO) -> Iterator[tuple[int, list[str]]]:
    """Non-blank CSV rows with the line number each starts on."""
    reader = csv.reader(fh)
    line = 1
    for row in reader:
        if row and any(cell.strip() for cell in row):
            yield line, row
        line = reader.line_num + 1


_SCHEMES: dict[str, WeightScheme | None] = {
    "none": None,
    "linear": "linear",
    "quadratic": "quadratic",
}


def _fail(message: str) -> None:
    click.echo(click.style("error: ", fg="red", bold=True) + message, err=True)


def _stat_json(stat: Stat, boot: BootResult | None, bootstrapped: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"value": stat.value}
    if stat.value is None:
        out["note"] = stat.note
    if bootstrapped:
        if boot is not None and boot.ci_low is not None and boot.ci_high is not None:
            out["ci"] = [boot.ci_low, boot.ci_high]
        else:
            out["ci"] = None
        if stat.value is not None and boot is not None and boot.note:
            out["ci_note"] = boot.note
    return out


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.4f}"


@click.command(
    name="stats",
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.argument("ratings", metavar="RATINGS.csv", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--level",
    type=click.Choice(LEVELS),
    default="nominal",
    show_default=True,
    help="Level of measurement for Krippendorff's alpha; interval/ratio add the ICCs and "
    "Pearson's r, ordinal and above Spearman's rho and Kendall's tau.",
)
@click.option(
    "--weights",
    type=click.Choice(["none", "linear", "quadratic"]),
    default="none",
    show_default=True,
    help="Agreement weights for Cohen's kappa, Gwet's AC2 and weighted percent agreement.",
)
@click.option(
    "--categories",
    metavar="LIST",
    help="Comma-separated full category set, e.g. 0,1 (default: the values seen). "
    "Matters for Bennett's S and Gwet's AC1/AC2 when a category went unused.",
)
@click.option(
    "--bootstrap",
    "n_boot",
    type=click.IntRange(min=0),
    default=0,
    metavar="N",
    help="Add N-resample bootstrap confidence intervals (0: none).",
)
@click.option(
    "--ci",
    type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True),
    default=0.95,
    show_default=True,
    help="Confidence level of the bootstrap intervals.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap random seed.")
@click.option(
    "--cluster",
    "cluster_col",
    metavar="COLUMN",
    help="Resample whole clusters named by this column (e.g. task), not single units.",
)
@click.option(
    "--ci-method",
    type=click.Choice(["percentile", "bca"]),
    default="percentile",
    show_default=True,
    help="Bootstrap interval: percentile or bias-corrected and accelerated.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def stats(
    ratings: Path,
    level: Level,
    weights: str,
    categories: str | None,
    n_boot: int,
    ci: float,
    seed: int,
    cluster_col: str | None,
    ci_method: CiMethod,
    as_json: bool,
) -> None:
    """Agreement statistics of RATINGS.csv (columns unit,rater,value; one row per rating).

    Percent agreement, Cohen's kappa and Scott's pi (exactly two raters), Bennett's S,
    Fleiss' kappa, Krippendorff's alpha and Gwet's AC1 (AC2 with --weights); with
    --level interval or ratio also the Shrout & Fleiss ICCs (complete data only).
    Missing ratings are allowed: leave them out or leave the value empty. A statistic
    that is undefined on the data is shown as null with the reason.

    \b
    Examples:
      gradercal stats ratings.csv
      gradercal stats ratings.csv --level ordinal --weights quadratic --json
      gradercal stats ratings.csv --bootstrap 2000 --cluster task --seed 1
    """
    scheme = _SCHEMES[weights]
    try:
        parsed = read_ratings_csv(
            ratings,
            level=level,
            weighted=scheme is not None,
            cluster_col=cluster_col,
            categories=categories,
        )
        table = RatingTable.from_frame(parsed.frame, parsed.categories)
        results = rating_statistics(table, level, scheme)
        boots: dict[str, BootResult] = {}
        if n_boot:
            boots = clustered_bootstrap(
                parsed.frame,
                cluster_col,
                list(results),
                n_boot=n_boot,
                ci=ci,
                seed=seed,
                method=ci_method,
                level=level,
                weights=scheme,
                categories=parsed.categories,
            )
    except ValidationError as exc:
        _fail(exc.render())
        raise SystemExit(1) from None
    except ValueError as exc:
        _fail(f"{ratings}: {exc}")
        raise SystemExit(1) from None

    n_clusters = next(iter(boots.values())).n_clusters if boots else None
    if as_json:
        payload: dict[str, Any] = {
            "n_units": table.n_units,
            "n_raters": table.n_raters,
            "n_ratings": table.n_ratings,
        }
        if n_boot:
            payload["bootstrap"] = {
                "n_boot": n_boot,
                "ci": ci,
                "method": ci_method,
                "seed": seed,
                "cluster": cluster_col,
                "n_clusters": n_clusters,
            }
        for key, stat in results.items():
            payload[key] = _stat_json(stat, boots.get(key), bool(n_boot))
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False, allow_nan=False))
        return
    _print_table(
        ratings,
        table,
        results,
        boots,
        level,
        weights,
        n_boot,
        ci,
        ci_method,
        seed,
        cluster_col,
        n_clusters,
    )


def _print_table(
    path: Path,
    table: RatingTable,
    results: dict[str, Stat],
    boots: dict[str, BootResult],
    level: str,
    weights: str,
    n_boot: int,
    ci: float,
    ci_method: str,
    seed: int,
    cluster_col: str | None,
    n_clusters: int | None,
) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False, width=None if sys.stdout.isatty() else 120)
    title = (
        f"{path.name}: {table.n_units} units, {table.n_raters} raters, "
        f"{table.n_ratings} ratings (level {level}, weights {weights})"
    )
    out = Table(title=title, title_justify="left")
    out.add_column("Statistic")
    out.add_column("Value", justify="right")
    if n_boot:
        out.add_column(f"{ci * 100:g}% CI", justify="right")
    out.add_column("Note")
    for key, stat in results.items():
        label = LABELS.get(key, key)
        if key in ("cohen_kappa", "gwet_ac2", "weighted_percent_agreement") and weights != "none":
            label += f" ({weights})"
        if key == "krippendorff_alpha":
            label += f" ({level})"
        cells = [label, _fmt(stat.value)]
        note = stat.note or ""
        if n_boot:
            boot = boots.get(key)
            if boot is not None and boot.ci_low is not None and boot.ci_high is not None:
                cells.append(f"[{_fmt(boot.ci_low)}, {_fmt(boot.ci_high)}]")
            else:
                cells.append("—")
            if stat.value is not None and boot is not None and boot.note:
                note = boot.note
        cells.append(note)
        out.add_row(*cells)
    console.print(out)
    if n_boot:
        unit = f"clusters of {cluster_col!r}" if cluster_col else "units"
        console.print(
            f"{ci_method} intervals from {n_boot} bootstrap resamples of {n_clusters} {unit} "
            f"(seed {seed})."
        )
