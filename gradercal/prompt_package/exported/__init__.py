"""Sources of the exported judges' glue (read as text, never imported by gradercal).

Each module here is the tool-specific half of an exported judge: it calls the functions
of :mod:`gradercal.prompt_package.kernel` as if it were written below them, which it is
in the exported file (:mod:`gradercal.prompt_package.standalone`). They import the tool
they run in (inspect_ai), which gradercal does not depend on: only the type checker and
the exporter read them.
"""
