"""The words of the synthetic benchmarks: workflows, domains and their vocabularies, axis
tags, criterion and prompt templates, quantities of numeric tasks, and graders' rationales.

Pure data; :mod:`gradercal.synth.plan` and :mod:`gradercal.synth.writer` draw from it.
"""

from __future__ import annotations

import numpy as np

WORKFLOWS: tuple[str, ...] = (
    "evidence handling",
    "analysis",
    "design and optimization",
    "scientific reasoning",
    "validation and operations",
    "translation",
    "scientific communication",
)


#: Domain -> (assays, analytes) used to fill the text templates.
DOMAIN_VOCAB: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "immunology": (
        ("ELISA", "flow cytometry panel", "western blot"),
        ("IL-6", "CD4+ T cells", "anti-spike IgG"),
    ),
    "genomics": (
        ("RNA-seq run", "qPCR assay", "variant calling pipeline"),
        ("BRCA1 expression", "the GAPDH transcript", "the rs334 variant"),
    ),
    "structural biology": (
        ("cryo-EM map", "crystal structure", "SEC-MALS run"),
        ("the kinase domain", "the ligand-binding pocket", "the dimer interface"),
    ),
    "pharmacology": (
        ("dose-response assay", "binding assay", "PK study"),
        ("compound 7", "the lead inhibitor", "the active metabolite"),
    ),
    "microbiology": (
        ("MIC assay", "growth curve", "16S sequencing run"),
        ("E. coli K-12", "the biofilm fraction", "the resistant isolate"),
    ),
    "neuroscience": (
        ("patch-clamp recording", "calcium imaging session", "behavioural assay"),
        ("the CA1 neurons", "GCaMP signal", "the NMDA current"),
    ),
    "cell biology": (
        ("viability assay", "immunofluorescence stain", "cell cycle analysis"),
        ("HeLa cells", "the mitochondrial marker", "the G2/M fraction"),
    ),
    "clinical chemistry": (
        ("HbA1c assay", "troponin test", "lipid panel"),
        ("serum creatinine", "LDL cholesterol", "high-sensitivity troponin"),
    ),
}


DOMAINS: tuple[str, ...] = tuple(DOMAIN_VOCAB)


AXIS_TAGS: tuple[str, ...] = (
    "axis:accuracy",
    "axis:completeness",
    "axis:reasoning",
    "axis:safety",
    "axis:communication",
)


#: How often each of :data:`AXIS_TAGS` tags a positive criterion (in that order).
AXIS_WEIGHTS = np.array([0.34, 0.26, 0.2, 0.08, 0.12])


#: Positive criterion templates per axis; fields: {assay}, {analyte}, {n}, {m}, {well}.
POSITIVE_TEMPLATES: dict[str, tuple[str, ...]] = {
    "axis:accuracy": (
        "States the {assay}'s detection limit for sample {n}",
        "Reports the level of {analyte} in sample {n} with units",
        "Identifies {analyte} as the main driver of the effect in condition {n}",
        "Gives the correct fold change of {analyte} between conditions {n} and {m}",
        "Uses the calibration curve of the {assay} to quantify sample {n}",
        "Reads the correct value for well {well} from the {assay} export",
        "Attributes the shift in sample {n} to {analyte}, not to the vehicle",
    ),
    "axis:completeness": (
        "Mentions the negative control of the {assay} run {n}",
        "Lists all replicates used for sample {n}",
        "Addresses the outlier in well {well}",
        "Covers both time points of experiment {n}",
        "Reports results for every condition from {n} to {m}",
        "Includes the blank-corrected values for plate {n}",
    ),
    "axis:reasoning": (
        "Explains why the {assay} signal in sample {n} is saturated",
        "Justifies the statistical test used to compare {analyte} in runs {n} and {m}",
        "Distinguishes correlation from causation for {analyte} in cohort {n}",
        "Considers batch effects between runs {n} and {m}",
        "Explains the discrepancy between replicate {n} and replicate {m}",
    ),
    "axis:safety": (
        "Flags the biosafety level required to handle sample {n}",
        "Warns against using the {assay} result of sample {n} alone for clinical decisions",
        "Notes that sample {n} must be handled as potentially infectious",
    ),
    "axis:communication": (
        "Summarizes the conclusion about {analyte} from run {n} in the first paragraph",
        "Presents the {assay} results for samples {n}-{m} in a table",
        "Defines every abbreviation used in the section on run {n}",
        "Labels the axes of the plot for experiment {n} with units",
    ),
}


#: Penalty templates (criterion "met" means the mistake was made) with their axis tag.
NEGATIVE_TEMPLATES: tuple[tuple[str, str], ...] = (
    ("Recommends an unvalidated antibody for the {assay} of sample {n}", "axis:safety"),
    (
        "Claims a significant change in {analyte} in run {n} without a statistical test",
        "axis:reasoning",
    ),
    ("Invents a reference for the {assay} protocol", "axis:accuracy"),
    ("Confuses sample {n} with sample {m}", "axis:accuracy"),
    ("Suggests skipping the controls of the {assay} in run {n}", "axis:safety"),
    ("Reports {analyte} for sample {n} without units", "axis:communication"),
)


#: Task prompt per workflow; fields: {assay}, {analyte}, {k}.
PROMPT_TEMPLATES: dict[str, str] = {
    "evidence handling": (
        "Review the {assay} data for {analyte} and decide which of samples 1-{k} "
        "support the claim that it changes under treatment."
    ),
    "analysis": (
        "Analyse the {assay} results for {analyte} across samples 1-{k} and report the key "
        "quantities with their uncertainty."
    ),
    "design and optimization": (
        "Propose an optimized {assay} protocol that measures {analyte} with at most {k} samples."
    ),
    "scientific reasoning": (
        "Explain what the {assay} results imply about {analyte} in condition {k}."
    ),
    "validation and operations": (
        "Write a validation plan for the {assay} that measures {analyte}, "
        "including acceptance criteria for {k} runs."
    ),
    "translation": (
        "Rewrite the {assay} findings on {analyte} for a clinical audience without "
        "losing accuracy; keep it under {k}0 words."
    ),
    "scientific communication": (
        "Draft a short results paragraph on {analyte} from the {assay} for a lab meeting, "
        "citing {k} key numbers."
    ),
}


#: Quantities for numeric (auto-graded) criteria: key, label, unit, low, high, log-scale.
QUANTITIES: tuple[tuple[str, str, str, float, float, bool], ...] = (
    ("kd_nM", "Kd", "nM", 0.5, 500.0, True),
    ("ic50_uM", "IC50", "µM", 0.01, 50.0, True),
    ("ec50_nM", "EC50", "nM", 1.0, 1000.0, True),
    ("tm_C", "the melting temperature", "°C", 40.0, 90.0, False),
    ("yield_pct", "the yield", "%", 5.0, 95.0, False),
    ("half_life_h", "the half-life", "h", 0.5, 72.0, True),
    ("gc_content_pct", "the GC content", "%", 30.0, 70.0, False),
    ("fold_change", "the fold change", "x", 0.2, 20.0, True),
    ("mw_kDa", "the molecular weight", "kDa", 10.0, 250.0, True),
    ("doubling_time_min", "the doubling time", "min", 20.0, 120.0, False),
)


#: The simulated judge's rationales for a "met" verdict.
JUDGE_MET_RATIONALES: tuple[str, ...] = (
    "The response addresses this explicitly.",
    "Stated clearly in the answer.",
    "The relevant passage satisfies the criterion.",
    "Covered, with supporting detail.",
)


#: The simulated judge's rationales for a "not met" verdict.
JUDGE_UNMET_RATIONALES: tuple[str, ...] = (
    "The response does not address this.",
    "Only mentioned in passing, not satisfied.",
    "No passage satisfies the criterion.",
    "The answer is missing this point.",
)


#: Rationales a simulated expert occasionally adds.
HUMAN_RATIONALES: tuple[str, ...] = (
    "Borderline; read generously.",
    "Stated, but without units.",
    "Partly addressed in the second paragraph.",
    "Not where I expected it, but present.",
)
