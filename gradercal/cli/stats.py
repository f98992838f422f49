"""``gradercal stats``: agreement statistics of a ratings CSV file.

Registered lazily by :class:`gradercal.cli.LazyGroup`. Reads long-format ratings
(``unit,rater,value``; other columns ignored), prints every applicable statistic of
:func:`gradercal.stats.rating_statistics` as a table or as JSON, optionally with
task-clustered bootstrap intervals (:func:`gradercal.stats.clustered_bootstrap`).

Options are honest: every JSON entry says its ``weights``; the bootstrap options
(``--cluster``, ``--ci``, ``--ci-method``, ``--seed``) are refused without
``--bootstrap``, and ``--bootstrap N`` is refused when N is too small for the interval
(:func:`min_resamples`); a statistic the bootstrap cannot resample gets ``"ci": null``
with a note saying so.

A malformed file is reported as ``file:line: field: message`` lines on stderr with exit
status 1; nothing is computed.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import click
import pandas as pd
from click.core import ParameterSource

from gradercal._util.numbers import fixed
from gradercal.cli.common import db_option_unused, emit_json, fail, text_console
from gradercal.errors import Problem, ValidationError
from gradercal.stats.bootstrap import (
    CI_METHODS,
    BootResult,
    CiMethod,
    clustered_bootstrap,
)
from gradercal.stats.coefficients import (
    LEVELS,
    RATING_COLUMNS,
    WEIGHT_SCHEMES,
    Level,
    RatingTable,
    Stat,
    WeightScheme,
)
from gradercal.stats.registry import (
    BOOTSTRAP_STATISTICS,
    STATISTICS,
    WEIGHTED_KEYS,
    rating_statistics,
)

__all__ = ["RatingsFile", "min_resamples", "read_ratings_csv", "stats"]

#: Readable names of the statistics, in the order of ``rating_statistics``.
LABELS: dict[str, str] = {key: s.label for key, s in STATISTICS.items() if s.levels}


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
    weights: str = "none",
) -> RatingsFile:
    """Read and validate a long-format ratings CSV file.

    Rules: UTF-8 (a BOM is allowed), comma-separated with a header row naming at least
    ``unit``, ``rater`` and ``value`` (plus ``cluster_col`` when given); other columns
    are ignored; blank lines are skipped. An empty ``value`` is a missing rating. Values
    are numbers when every value parses as a finite number, text otherwise; the
    ordinal, interval and ratio levels and every weight family need numbers, the
    ratio level non-negative ones and ratio weights positive ones. A rater rates a unit
    at most once, and a unit lies in one cluster.

    Args:
        path: The CSV file.
        level: Krippendorff's level of measurement (decides whether numbers are needed).
        weighted: Whether agreement weights are used (numbers needed).
        cluster_col: A column that must be present and non-empty (e.g. ``task``).
        categories: Comma-separated full category set (``"0,1"``), or ``None``.
        weights: The ``--weights`` family (``"none"`` by default); implies ``weighted``
            unless ``"none"``, and ``"ratio"`` needs positive values.

    Raises:
        ValidationError: Listing every problem as ``file:line: field: message``.
    """
    name = "<stdin>" if str(path) == "-" else str(path)
    try:
        if str(path) == "-":
            import io
            import sys

            text = sys.stdin.buffer.read().decode("utf-8-sig")
            rows = list(_numbered_rows(io.StringIO(text, newline="")))
        else:
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
    weighted = weighted or weights != "none"
    needs_numbers = level != "nominal" or weighted
    why = f"--level {level}" if level != "nominal" else "--weights"

    records: list[tuple[int, str, str, str, str]] = []  # line, unit, rater, value, cluster
    for line, row in rows[1:]:
        if len(row) != len(columns):
            problems.append(
                Problem(name, line, None, f"expected {len(columns)} fields, found {len(row)}")
            )
            continue
        nul = next((c for c, cell in zip(columns, row, strict=True) if "\x00" in cell), None)
        if nul is not None:
            problems.append(Problem(name, line, nul or None, "contains a NUL character"))
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
            elif weights == "ratio" and value <= 0:
                problems.append(
                    Problem(name, line, "value", f"value {text} (--weights ratio needs values > 0)")
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
    **{name: name for name in WEIGHT_SCHEMES if name != "identity"},
}
#: Weighted keys the bootstrap can resample, and the bootstrap's name for each (it
#: resamples ``cohen_kappa`` with the weights it is given).
_BOOT_WEIGHTED: dict[str, str] = {
    key: name
    for key, s in STATISTICS.items()
    if s.weighted and (name := s.bootstrap_name) is not None
}
#: The note on a statistic that has a value but no bootstrap interval in this version.
NO_BOOTSTRAP_NOTE = "no interval: the bootstrap does not resample this statistic yet"
#: Resamples wanted beyond each end of a percentile interval (see :func:`min_resamples`).
TAIL_RESAMPLES = 10
#: The bootstrap options, by parameter name, as written on the command line.
_BOOTSTRAP_OPTIONS: dict[str, str] = {
    "cluster_col": "--cluster",
    "ci": "--ci",
    "ci_method": "--ci-method",
    "seed": "--seed",
}


def min_resamples(ci: float) -> int:
    """The fewest bootstrap resamples ``gradercal stats`` accepts for a confidence level.

    ``2 · TAIL_RESAMPLES / (1 − ci)`` (400 for 95 %, 200 for 90 %, 2000 for 99 %): on
    average 10 resamples then lie beyond each end of the interval. With fewer, an
    endpoint is one of the few most extreme resamples (with 5 resamples a "95 %"
    interval is essentially their range, which spans on average the central
    ``(B − 1)/(B + 1) = 2/3`` of the bootstrap distribution), and its Monte Carlo error
    is of the order of the interval's width. 2000 or more is usual
    for publication (Efron & Tibshirani 1993, §19.3; Davison & Hinkley 1997, §5.2).
    """
    return math.ceil(round(2 * TAIL_RESAMPLES / (1.0 - ci), 6))


def _check_bootstrap_options(ctx: click.Context, n_boot: int, ci: float) -> None:
    """Refuse bootstrap options that would do nothing or give a meaningless interval."""
    given = [
        flag
        for param, flag in _BOOTSTRAP_OPTIONS.items()
        if ctx.get_parameter_source(param)
        not in (None, ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)
    ]
    if n_boot == 0 and given:
        verb = "applies" if len(given) == 1 else "apply"
        raise click.UsageError(
            f"{', '.join(given)} only {verb} to bootstrap intervals: add --bootstrap N "
            "(e.g. --bootstrap 2000) or leave them out",
            ctx,
        )
    need = min_resamples(ci)
    if 0 < n_boot < need:
        raise click.BadParameter(
            f"{n_boot} resamples are too few for {ci * 100:g}% intervals: use at least {need} "
            f"(2·{TAIL_RESAMPLES}/(1 − ci), so that about {TAIL_RESAMPLES} resamples lie "
            "beyond each end of the interval); 2000 or more is usual",
            ctx,
            param_hint="--bootstrap",
        )


def _bootstrap(
    frame: pd.DataFrame,
    results: dict[str, Stat],
    scheme: WeightScheme | None,
    categories: list[Any] | None,
    *,
    n_boot: int,
    ci: float,
    seed: int,
    cluster_col: str | None,
    ci_method: CiMethod,
    level: Level,
) -> dict[str, BootResult]:
    """Intervals for every key the bootstrap can resample, under that key's weights.

    Unweighted keys are resampled without weights, the weighted ones the bootstrap knows
    with ``scheme``; both calls use the same seed, hence the same resamples (paired
    intervals). Keys it cannot resample are absent from the result.
    """
    common: dict[str, Any] = {
        "n_boot": n_boot,
        "ci": ci,
        "seed": seed,
        "method": ci_method,
        "level": level,
        "categories": categories,
    }
    plain = [k for k in results if k not in WEIGHTED_KEYS and k in BOOTSTRAP_STATISTICS]
    out = clustered_bootstrap(frame, cluster_col, plain, weights=None, **common) if plain else {}
    weighted = {k: _BOOT_WEIGHTED[k] for k in results if k in _BOOT_WEIGHTED}
    if weighted and scheme is not None:
        boots = clustered_bootstrap(
            frame, cluster_col, list(weighted.values()), weights=scheme, **common
        )
        out.update({key: boots[name] for key, name in weighted.items()})
    return out


def _key_weights(key: str, weights: str) -> str:
    """What ``weights`` a key was computed with: the family, or ``"none"``."""
    return weights if key in WEIGHTED_KEYS else "none"


def _ci_note(stat: Stat, boot: BootResult | None) -> str | None:
    if stat.value is None:
        return None
    if boot is None:
        return NO_BOOTSTRAP_NOTE
    return boot.note


def _stat_json(
    key: str,
    stat: Stat,
    boot: BootResult | None,
    bootstrapped: bool,
    weights: str,
    level: str,
) -> dict[str, Any]:
    out: dict[str, Any] = {"value": stat.value}
    if stat.value is None:
        out["note"] = stat.note
    out["weights"] = _key_weights(key, weights)
    if key == "krippendorff_alpha":
        out["level"] = level
    if bootstrapped:
        if boot is not None and boot.ci_low is not None and boot.ci_high is not None:
            out["ci"] = [boot.ci_low, boot.ci_high]
        else:
            out["ci"] = None
        note = _ci_note(stat, boot)
        if note:
            out["ci_note"] = note
    return out


def _fmt(x: float | None) -> str:
    return fixed(x, 4)


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
    type=click.Choice(list(_SCHEMES)),
    default="none",
    show_default=True,
    help="Agreement weights (Gwet 2014, ch. 3; numeric ratings). Adds the weighted_* "
    "statistics and Gwet's AC2; the unweighted ones are unchanged.",
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
    help="Add N-resample bootstrap confidence intervals (0: none; at least "
    "20/(1 − ci), e.g. 400 for 95%).",
)
@click.option(
    "--ci",
    type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True),
    default=0.95,
    show_default=True,
    help="Confidence level of the bootstrap intervals (needs --bootstrap).",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Bootstrap random seed (needs --bootstrap).",
)
@click.option(
    "--cluster",
    "cluster_col",
    metavar="COLUMN",
    help="Resample whole clusters named by this column (e.g. task), not single units "
    "(needs --bootstrap).",
)
@click.option(
    "--ci-method",
    type=click.Choice(CI_METHODS),
    default="expanded_percentile",
    show_default=True,
    help="Bootstrap interval: the percentile interval widened for few clusters (Hesterberg "
    "2015; the default, see docs/statistics.md), the plain percentile interval, or "
    "bias-corrected and accelerated (needs --bootstrap).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@db_option_unused
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

    Percent agreement, Cohen's kappa and Scott's pi (exactly two raters), Conger's and
    Light's kappas, Bennett's S, Fleiss' kappa, Krippendorff's alpha and Gwet's AC1, all
    unweighted; --weights W adds their weighted forms (weighted_*, Gwet's AC2) as irrCAC
    defines them. With --level interval or ratio also the Shrout & Fleiss ICCs
    (complete data only). Missing ratings are allowed: leave them out or leave the value
    empty. A statistic that is undefined on the data is shown as null with the reason;
    every JSON entry says its weights.

    \b
    Examples:
      gradercal stats ratings.csv
      gradercal stats ratings.csv --level ordinal --weights quadratic --json
      gradercal stats ratings.csv --bootstrap 2000 --cluster task --seed 1
    """
    _check_bootstrap_options(click.get_current_context(), n_boot, ci)
    scheme = _SCHEMES[weights]
    try:
        parsed = read_ratings_csv(
            ratings,
            level=level,
            weighted=scheme is not None,
            cluster_col=cluster_col,
            categories=categories,
            weights=weights,
        )
        table = RatingTable.from_frame(parsed.frame, parsed.categories)
        results = rating_statistics(table, level, scheme)
        boots: dict[str, BootResult] = {}
        if n_boot:
            boots = _bootstrap(
                parsed.frame,
                results,
                scheme,
                parsed.categories,
                n_boot=n_boot,
                ci=ci,
                seed=seed,
                cluster_col=cluster_col,
                ci_method=ci_method,
                level=level,
            )
    except ValidationError as exc:
        fail(exc.render())
        raise SystemExit(1) from None
    except ValueError as exc:
        fail(f"{ratings}: {exc}")
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
            payload[key] = _stat_json(key, stat, boots.get(key), bool(n_boot), weights, level)
        emit_json(payload)
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
    from rich.table import Table

    console = text_console(width=120)
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
        if key in WEIGHTED_KEYS:
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
            note = _ci_note(stat, boot) or note
        cells.append(note)
        out.add_row(*cells)
    console.print(out)
    if n_boot:
        unit = f"clusters of {cluster_col!r}" if cluster_col else "units"
        console.print(
            f"{ci_method} intervals from {n_boot} bootstrap resamples of {n_clusters} {unit} "
            f"(seed {seed})."
        )
